"""Adapters that run an agent framework's agent as a Parley agent.

The framework's pauses become Parley questions and approvals. The agent resumes on a worker when
answered.
"""
