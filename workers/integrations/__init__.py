"""Adapters that run an agent framework's agent as a Parley agent: its pauses become Parley questions and approvals, and it resumes on a worker when answered."""
