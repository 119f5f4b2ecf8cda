"""Parley's configuration, read from the environment once, at a process's entry point."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from workers.exceptions import ConfigError
from workers.store.embedded import default_data_dir

SLACK_API_DEFAULT = "https://slack.com/api/"


def _split(value: object) -> object:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


class Settings(BaseSettings):
    """Every setting, by its environment variable name."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

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

    _split_lists = field_validator("parley_agents", "parley_admins", "parley_retry_delays", mode="before")(_split)

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, v: str | None) -> str | None:
        if v and not v.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
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
