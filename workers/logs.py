"""Structured logs: one JSON object per line, with the run's correlation fields.

Every line about a run carries `run_id`, and `interrupt_id`, `team`, `channel`
and `user` where they are known, so one grep follows a run across bot and workers.
When standard error is a terminal (a person at the command line) the same lines
are written for reading instead: time, level, message, then the fields as key=value.
"""

from __future__ import annotations

import datetime as dt
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


class ReadableFormatter(logging.Formatter):
    """One line for a person: `12:04:05 INFO cancelled  run_id=r1 user=cli:jane`."""

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        fields = " ".join(f"{k}={v}" for k, v in getattr(record, "ctx", {}).items())
        line = f"{when} {record.levelname} {record.getMessage()}" + (f"  {fields}" if fields else "")
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure(level: str = "INFO") -> None:
    """Send every log line to stderr, for reading when it is a terminal, else as JSON.

    Called once per process at its entry point. Servers and workers write to a pipe or
    a file in production, so they keep JSON lines; a command run by hand reads well.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ReadableFormatter() if _is_terminal(sys.stderr) else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


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
