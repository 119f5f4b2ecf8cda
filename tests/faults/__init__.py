"""The fault-injection suite: `pytest -m faults [--seed N] [--rounds M]`; see docs/reliability.md."""
