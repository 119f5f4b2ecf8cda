"""Parley's worker side: the interaction port, durable runs on Redis + RQ, and agents."""

from workers.registry import agent

__all__ = ["agent"]
