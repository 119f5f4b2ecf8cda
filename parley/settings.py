"""Parley's configuration, read once at a process's entry point from the environment and `.env`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from workers.exceptions import ConfigError
from workers.store import connection
from workers.store.embedded import default_data_dir

SLACK_API_DEFAULT = "https://slack.com/api/"
DEFAULT_RETENTION = 30 * 86400.0
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_HELP = "a duration such as 30d, 12h, 15m, 90s, or a number of seconds"


def parse_duration(value: object) -> float:
    """Seconds in `30d`, `12h`, `15m`, `90s` or a plain number of seconds; ValueError otherwise.

    One grammar for `PARLEY_RETENTION` and `parley runs purge --older-than`.
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _DURATION.fullmatch(str(value).strip().lower())
    if match is None:
        raise ValueError(f"must be {DURATION_HELP}, not {value!r}")
    return float(match[1]) * _UNIT_SECONDS[match[2]]


def _split(value: object) -> object:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


ENV_FILE = ".env"
"""Settings also come from this file in the working directory (`parley slack setup` writes it);
a variable set in the environment wins over the file."""


class Settings(BaseSettings):
    """Every setting, by its environment variable name."""

    model_config = SettingsConfigDict(
        env_prefix="", case_sensitive=False, extra="ignore", env_file=ENV_FILE, env_file_encoding="utf-8"
    )

    redis_url: str | None = None
    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_app_token: str | None = None
    slack_api_url: str = SLACK_API_DEFAULT
    parley_agents: Annotated[list[str], NoDecode] = Field(default_factory=list)
    parley_admins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    parley_data_dir: Path = Field(default_factory=default_data_dir)
    parley_log_level: str = "INFO"
    parley_lease_ttl: float = Field(default=30.0, gt=0)
    parley_sweep_interval: float = Field(default=5.0, gt=0)
    parley_retry_delays: Annotated[list[float], NoDecode] = Field(default_factory=lambda: [1.0, 5.0, 15.0])
    parley_requeue_grace: float = Field(default=10.0, ge=0)
    parley_retention: float = DEFAULT_RETENTION  # seconds; 0 keeps finished runs forever
    parley_redis_min_replicas: int = Field(default=0, ge=0)  # replicas holding an answer before its ack

    _split_lists = field_validator("parley_agents", "parley_admins", "parley_retry_delays", mode="before")(_split)
    _duration = field_validator("parley_retention", mode="before")(parse_duration)

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, v: str | None) -> str | None:
        if v:
            connection.check_url(v)
        return v or None

    @field_validator("slack_api_url")
    @classmethod
    def _api_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL")
        return v if v.endswith("/") else v + "/"

    @field_validator("slack_bot_token")
    @classmethod
    def _bot_token(cls, v: str | None) -> str | None:
        if v and not v.startswith("xoxb-"):
            raise ValueError("must be a bot token starting with xoxb-")
        return v or None

    @field_validator("slack_app_token")
    @classmethod
    def _app_token(cls, v: str | None) -> str | None:
        if v and not v.startswith("xapp-"):
            raise ValueError("must be an app-level token starting with xapp-")
        return v or None

    def require(self, *names: str) -> None:
        """Stop with one line naming the first missing variable among `names`."""
        for name in names:
            if not getattr(self, name):
                raise ConfigError(f"{name.upper()} is not set; it is needed here")


def load() -> Settings:
    """Read the environment; a malformed value becomes one `ConfigError` naming the variable."""
    try:
        return Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]).upper() if err.get("loc") else "configuration"
        raise ConfigError(f"{name}: {err['msg']}") from None
