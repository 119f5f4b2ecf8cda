"""Parley\x27s benchmarks against bolt, Redis and RQ: `python -m bench` (see bench/README.md)."""
