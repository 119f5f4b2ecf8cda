"""The durable-run runtime: replay, suspension, acceptance, sweep and admin operations."""
