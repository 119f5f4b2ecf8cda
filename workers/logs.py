"""Structured logs: one JSON object per line, with the run's correlation fields.

Every line about a run carries `run_id`, and `interrupt_id`, `team`, `channel`
and `user` where they are known, so one grep follows a run across bot and workers.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

CORRELATION = ("run_id", "interrupt_id", "team", "channel", "user")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(getattr(record, "ctx", {}))
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def configure(level: str = "INFO") -> None:
    """Send every log line to stderr as JSON; called once per process at its entry point."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class Log:
    """A logger bound to correlation fields: `log.bind(run_id=...).info("parked")`."""

    def __init__(self, name: str, **ctx: Any) -> None:
        self._logger = logging.getLogger(name)
        self._ctx = {k: v for k, v in ctx.items() if v not in (None, "")}

    def bind(self, **ctx: Any) -> Log:
        bound = Log(self._logger.name, **self._ctx)
        bound._ctx.update({k: v for k, v in ctx.items() if v not in (None, "")})
        return bound

    def _emit(self, level: int, msg: str, exc: bool, fields: dict[str, Any]) -> None:
        if self._logger.isEnabledFor(level):
            ctx = {**self._ctx, **{k: v for k, v in fields.items() if v is not None}}
            self._logger.log(level, msg, exc_info=exc, extra={"ctx": ctx}, stacklevel=3)

    def debug(self, msg: str, **fields: Any) -> None:
        self._emit(logging.DEBUG, msg, False, fields)

    def info(self, msg: str, **fields: Any) -> None:
        self._emit(logging.INFO, msg, False, fields)

    def warning(self, msg: str, **fields: Any) -> None:
        self._emit(logging.WARNING, msg, False, fields)

    def error(self, msg: str, exc: bool = False, **fields: Any) -> None:
        self._emit(logging.ERROR, msg, exc, fields)
