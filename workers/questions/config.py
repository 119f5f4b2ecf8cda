"""`QuestionConfig`: the API's limits and webhook settings, installed once per process.

The composition root (`parley serve`, `parley worker`) builds it from the settings. The webhook
job reads it here, as job functions read the runtime from `wiring`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_RETRY_INTERVALS = (60, 300, 600, 1200, 2400)
"""Seconds between webhook attempts: six attempts over 76 minutes."""
DEFAULT_SIGNAL_RETRY_INTERVALS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, *([1800] * 46))
"""Seconds between attempts at signalling a Temporal workflow: quick at first, then every half hour for a day."""


@dataclass(frozen=True)
class TemporalConfig:
    """Where the Temporal frontend is that workflows' outcomes are signalled through (`PARLEY_TEMPORAL_*`)."""

    address: str = ""  # "": no Temporal target may be asked for
    namespace: str = "default"
    tls_cert: bytes | None = None
    tls_key: bytes | None = field(default=None, repr=False)  # never shown
    retry_intervals: tuple[int, ...] = DEFAULT_SIGNAL_RETRY_INTERVALS
    attempt_timeout: float = 10.0  # seconds for connecting and signalling, all of it


@dataclass(frozen=True)
class QuestionConfig:
    webhook_allow: tuple[str, ...] = ()  # host patterns (fnmatch) a callback may reach, private ones included
    webhook_loopback: bool = False  # also this machine on any port (`parley dev`)
    webhook_retry_intervals: tuple[int, ...] = DEFAULT_RETRY_INTERVALS
    webhook_timeout: float = 10.0  # seconds per attempt, all of it: connecting, sending, the answer
    webhook_connect_timeout: float = 2.0  # seconds to connect, within the attempt's
    webhook_per_token: int = 2  # deliveries queued or in flight at once for one API token
    webhook_per_host: int = 2  # attempts in flight at once to one destination host
    webhook_defer: int = 1  # seconds before a delivery held back by the host's cap is tried again
    rate_limit: int = 120  # requests per token per window
    rate_window: int = 60  # seconds
    open_questions: int = 1000  # questions one token (or local origin) may have open at once
    auth_failures: int = 20  # bad bearer tokens per client address per window; then 429 for that address
    max_wait: int = 60  # the longest `?wait=` a GET may hold
    temporal: TemporalConfig = TemporalConfig()


_current = QuestionConfig()


def install(config: QuestionConfig) -> QuestionConfig:
    global _current
    _current = config
    return config


def current() -> QuestionConfig:
    return _current
