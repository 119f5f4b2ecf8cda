"""Structured logs: one JSON object per line, with the run's correlation fields.

No line shows a URL's password: every message, field and traceback goes through `redacted`.

Every line about a run carries `run_id`. It carries `interrupt_id`, `team`, `channel` and `user`
where known. So one grep follows a run across bot and workers. When standard error is a
terminal, the same lines are written for a person to read. They show time, level, message, then
the fields as key=value.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from typing import Any

CORRELATION = ("run_id", "interrupt_id", "team", "channel", "user")
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<netloc>[^/\s?#]*)")
_SECRET_NAME = r"[\w-]*(?:password|passwd|secret|token)[\w-]*"
# `password=…` in a URL's query or an object's repr (redis-py's clients show their connection's
# password in "No master found" errors), and `'password': '…'` in a dict's.
_SECRET_PAIR = re.compile(
    rf"(?P<name>\b{_SECRET_NAME}=)[^&\s,)>'\"#]+|(?P<quoted>['\"]{_SECRET_NAME}['\"]:\s*)(?P<q>['\"])[^'\"]*(?P=q)",
    re.IGNORECASE,
)


def _hide_userinfo(match: re.Match[str]) -> str:
    userinfo, at, host = match["netloc"].rpartition("@")
    if not at:
        return match[0]
    user, colon, _ = userinfo.partition(":")
    return f"{match['scheme']}{user}:***@{host}" if colon else f"{match['scheme']}***@{host}"


def _hide_pair(match: re.Match[str]) -> str:
    return f"{match['name']}***" if match["name"] else f"{match['quoted']}{match['q']}***{match['q']}"


def redacted(text: str) -> str:
    """`text` with secrets masked, for anything shown or logged that may hold a URL.

    Such text includes `REDIS_URL`, `PARLEY_LLM_BASE_URL`, a webhook's URL or an error's.
    - The password of every URL is masked: `redis://parley:***@host:6379/0`.
    - A lone user name, often a token itself, is masked whole: `https://***@host`.
    - Every value named for a password, secret or token is masked. Examples are
      `?sentinel_password=***`, and `password=***` in a client's repr.
    """
    if "://" in text:
        text = _URL.sub(_hide_userinfo, text)
    return _SECRET_PAIR.sub(_hide_pair, text) if "=" in text or ":" in text else text


def _redact_fields(ctx: dict[str, Any]) -> dict[str, Any]:
    return {k: redacted(v) if isinstance(v, str) else v for k, v in ctx.items()}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": redacted(record.getMessage()),
        }
        doc.update(_redact_fields(getattr(record, "ctx", {})))
        if record.exc_info:
            doc["exc"] = redacted(self.formatException(record.exc_info))
        return json.dumps(doc, default=str)


class ReadableFormatter(logging.Formatter):
    """One line for a person: `12:04:05 INFO cancelled  run_id=r1 user=cli:jane`."""

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        fields = " ".join(f"{k}={v}" for k, v in _redact_fields(getattr(record, "ctx", {})).items())
        line = f"{when} {record.levelname} {redacted(record.getMessage())}" + (f"  {fields}" if fields else "")
        if record.exc_info:
            line += "\n" + redacted(self.formatException(record.exc_info))
        return line


LOG_FORMATS = ("auto", "text", "json")


def configure(level: str = "INFO", fmt: str = "auto") -> None:
    """Send every log line to stderr, readable on a terminal, else JSON.

    It is called once per process at its entry point. In production, servers and workers write to a
    pipe or file. So they keep JSON lines, and a command run by hand reads well. `fmt` ("text" or
    "json", `PARLEY_LOG_FORMAT`) decides instead when given. `parley dev` and `parley up` read their
    children's output through a pipe. So they choose by their own terminal.
    """
    readable = fmt == "text" or (fmt == "auto" and is_terminal(sys.stderr))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ReadableFormatter() if readable else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is a terminal a person reads.

    False for a pipe, a file or a closed stream.
    """
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
