"""`QuestionConfig`: the API's limits and webhook settings, installed once per process.

The composition root (`parley serve`, `parley worker`) builds it from the settings; the
webhook job reads it here, as job functions read the runtime from `wiring`.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_RETRY_INTERVALS = (60, 300, 600, 1200, 2400)
"""Seconds between webhook attempts: six attempts over 76 minutes."""


@dataclass(frozen=True)
class QuestionConfig:
    webhook_allow: tuple[str, ...] = ()  # host patterns (fnmatch) a callback may reach, private ones included
    webhook_retry_intervals: tuple[int, ...] = DEFAULT_RETRY_INTERVALS
    webhook_timeout: float = 10.0  # seconds per attempt
    rate_limit: int = 120  # requests per token per window
    rate_window: int = 60  # seconds
    auth_failures: int = 20  # bad bearer tokens per client address per window; then 429 for that address
    max_wait: int = 60  # the longest `?wait=` a GET may hold


_current = QuestionConfig()


def install(config: QuestionConfig) -> QuestionConfig:
    global _current
    _current = config
    return config


def current() -> QuestionConfig:
    return _current
