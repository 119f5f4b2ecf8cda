"""Parley's configuration, read once at a process's entry point from the environment and `.env`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from workers.exceptions import ConfigError
from workers.questions.config import DEFAULT_SIGNAL_RETRY_INTERVALS
from workers.receipts import KeyRing, ReceiptError, Signer
from workers.store import connection
from workers.store.embedded import default_data_dir
from workers.store.receipts import DEFAULT_RETENTION as RECEIPT_RETENTION
from workers.store.sealed import SecretBox
from workers.store.starts import Rate, StartLimits

SLACK_API_DEFAULT = "https://slack.com/api/"
DEFAULT_RETENTION = 30 * 86400.0
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_HELP = "a duration such as 30d, 12h, 15m, 90s, or a number of seconds"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL_ALIASES = {"WARN": "WARNING", "FATAL": "CRITICAL"}
"""The other names Python's logging takes for a level, read as the level they name."""


def parse_duration(value: object) -> float:
    """Seconds in `30d`, `12h`, `15m`, `90s` or a plain number, else ValueError.

    One grammar serves `PARLEY_RETENTION` and `parley runs purge --older-than`.
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _DURATION.fullmatch(str(value).strip().lower())
    if match is None:
        raise ValueError(f"must be {DURATION_HELP}, not {value!r}")
    return float(match[1]) * _UNIT_SECONDS[match[2]]


_RATE = re.compile(r"(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*(s|sec|second|m|min|minute|h|hour|d|day)s?")
_RATE_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
RATE_HELP = "a rate such as 10/min, 30/hour, 5/10s, or off"


def parse_rate(value: object) -> Rate | None:
    """`10/min`, `30/hour` or `5/10s` as a `Rate`.

    `off` (or `0`) is None, meaning no limit. Anything else raises ValueError.
    """
    if value is None or isinstance(value, Rate):
        return value
    text = str(value).strip().lower()
    if text in ("off", "0", "none"):
        return None
    match = _RATE.fullmatch(text)
    if match is None or int(match[1]) < 1:
        raise ValueError(f"must be {RATE_HELP}, not {value!r}")
    per = float(match[2] or 1) * _RATE_UNITS[match[3]]
    if per <= 0:
        raise ValueError(f"must be {RATE_HELP}, not {value!r}")
    return Rate(int(match[1]), per)


def _split(value: object) -> object:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value


_SCOPE_ID = re.compile(r"[TE][A-Z0-9]+")
ADMINS_HELP = "user ids (U1,U2), or per workspace T1:U1,U2;T2:U3 (a team or enterprise id, a colon, its admins)"


def parse_admins(value: object) -> object:
    """`PARLEY_ADMINS` by workspace: `{"": every-workspace admins, "T1": T1's admins, ...}`.

    The plain form `U1,U2` names admins of every workspace, as single-workspace mode does. Per
    workspace, groups are separated by `;`. Each is `T1:U1,U2`: a team id, then its admins. An
    org-wide install uses an enterprise id `E…` instead. A group without `T…:` counts for every
    workspace. A malformed group is an error naming it.
    """
    if not isinstance(value, str):
        return value
    admins: dict[str, list[str]] = {}
    for group in (g.strip() for g in value.split(";")):
        if not group:
            continue
        scope, sep, users = group.rpartition(":") if ":" in group else ("", "", group)
        scope = scope.strip()
        if sep and not _SCOPE_ID.fullmatch(scope):
            raise ValueError(f"{group!r}: before the colon goes a team id (T…) or enterprise id (E…); {ADMINS_HELP}")
        ids = [u.strip() for u in users.split(",") if u.strip()]
        if not ids:
            raise ValueError(f"{group!r} names no user; {ADMINS_HELP}")
        admins.setdefault(scope, []).extend(ids)
    return admins


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
    slack_client_id: str | None = None
    slack_client_secret: str | None = None
    slack_state_secret: str | None = None
    parley_agents: Annotated[list[str], NoDecode] = Field(default_factory=list)
    parley_admins: Annotated[dict[str, list[str]], NoDecode] = Field(default_factory=dict)
    parley_data_dir: Path = Field(default_factory=default_data_dir)
    parley_log_level: str = "INFO"
    parley_log_format: Literal["auto", "text", "json"] = "auto"  # auto: readable on a terminal, else JSON
    parley_lease_ttl: float = Field(default=30.0, gt=0)
    parley_sweep_interval: float = Field(default=5.0, gt=0)
    parley_retry_delays: Annotated[list[float], NoDecode] = Field(default_factory=lambda: [1.0, 5.0, 15.0])
    parley_requeue_grace: float = Field(default=10.0, ge=0)
    parley_retention: float = DEFAULT_RETENTION  # seconds; 0 keeps finished runs forever
    parley_run_timeout: float = 3600.0  # seconds one execution of a run may take; 0: no bound
    parley_secret_key: SecretStr | None = None  # Fernet key sealing secret answers; never shown
    parley_redis_min_replicas: int = Field(default=0, ge=0)  # replicas holding an answer before its ack
    parley_receipt_key: Path | None = None  # PEM file of the Ed25519 key signing receipts; never shown
    parley_receipt_keys: Path | None = None  # PEM file of more public keys trusted to verify (rotated ones)
    parley_receipt_retention: float = RECEIPT_RETENTION  # seconds receipts are kept; 0 keeps them forever
    parley_notify_assignees: bool = True  # DM the people a question is put to (not the run's starter)
    parley_llm_answers: bool = False  # read plain-words replies with the PARLEY_LLM_* model, for people to confirm

    parley_webhook_allow: Annotated[list[str], NoDecode] = Field(default_factory=list)  # host patterns
    parley_webhook_loopback: bool = False  # also admit this machine on any port; `parley dev` sets it
    parley_webhook_retry_intervals: Annotated[list[int], NoDecode] = Field(
        default_factory=lambda: [60, 300, 600, 1200, 2400]  # seconds between attempts: 6 over 76 minutes
    )
    parley_webhook_workers: int = Field(default=4, ge=0)  # delivery threads in each `parley worker`
    parley_webhook_timeout: float = Field(default=10.0, gt=0, le=60)  # seconds for a whole attempt
    parley_webhook_per_token: int = Field(default=2, ge=1)  # attempts in flight at once per API token
    parley_webhook_per_host: int = Field(default=2, ge=1)  # attempts in flight at once per destination host
    parley_api_rate_limit: int = Field(default=120, ge=1)  # requests per token per window
    parley_api_rate_window: int = Field(default=60, ge=1)  # seconds
    parley_api_open_questions: int = Field(default=1000, ge=1)  # questions a token may have open at once
    parley_api_auth_failures: int = Field(default=20, ge=1)  # bad bearer tokens per client address per window
    parley_mcp_origin: str = Field(default="mcp", min_length=1, max_length=64)  # `parley mcp`'s questions' origin
    parley_mcp_config: str | None = None  # the rules file (a path) of approve_tool_use; with `upstreams`, /mcp/gateway
    # `Host` names /mcp answers (name, or name:port); unset: the loopback names, and --host if it is one address
    parley_allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # browser origins /mcp answers (https://app.example.com); a request without Origin is always answered
    parley_mcp_allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    parley_starts_per_user: Rate | None = StartLimits.per_user  # `/parley` starts per person of a workspace
    parley_starts_per_channel: Rate | None = StartLimits.per_channel  # `/parley` starts per channel
    parley_open_runs_per_user: int = Field(default=StartLimits.open_runs or 0, ge=0)  # 0: no cap
    parley_temporal_address: str | None = None  # host:port of the Temporal frontend workflows' signals go to
    parley_temporal_namespace: str = Field(default="default", min_length=1, max_length=255)
    parley_temporal_tls_cert: Path | None = None  # client certificate (PEM) for mTLS to Temporal
    parley_temporal_tls_key: Path | None = None  # its private key (PEM); never shown
    parley_temporal_retry_intervals: Annotated[list[int], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_SIGNAL_RETRY_INTERVALS)  # seconds between signal attempts
    )

    _split_lists = field_validator(
        "parley_agents",
        "parley_retry_delays",
        "parley_webhook_allow",
        "parley_webhook_retry_intervals",
        "parley_allowed_hosts",
        "parley_mcp_allowed_origins",
        "parley_temporal_retry_intervals",
        mode="before",
    )(_split)
    _admins = field_validator("parley_admins", mode="before")(parse_admins)
    _duration = field_validator("parley_retention", "parley_receipt_retention", "parley_run_timeout", mode="before")(
        parse_duration
    )
    _rates = field_validator("parley_starts_per_user", "parley_starts_per_channel", mode="before")(parse_rate)

    @field_validator("parley_receipt_key", "parley_receipt_keys", mode="before")
    @classmethod
    def _receipt_paths(cls, v: object) -> object:
        return None if v == "" else v  # set but empty reads as unset

    @field_validator("parley_log_level", mode="before")
    @classmethod
    def _log_level(cls, v: object) -> object:
        level = str(v).strip().upper()
        level = LOG_LEVEL_ALIASES.get(level, level)
        if level not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)} (in any case), not {v!r}")
        return level

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

    @property
    def oauth_mode(self) -> bool:
        """Many workspaces: installed through OAuth, each workspace's token in Redis.

        It is on when `SLACK_CLIENT_ID`, `SLACK_CLIENT_SECRET` and `SLACK_STATE_SECRET` are all set.
        `SLACK_BOT_TOKEN` is then not used.
        """
        return bool(self.slack_client_id and self.slack_client_secret and self.slack_state_secret)

    @property
    def start_limits(self) -> StartLimits:
        """How fast runs may start from Slack, per person and channel, and open-run caps.

        The cap is how many runs a person may have open.
        """
        return StartLimits(
            per_user=self.parley_starts_per_user,
            per_channel=self.parley_starts_per_channel,
            open_runs=self.parley_open_runs_per_user or None,
        )

    @field_validator("parley_temporal_tls_key")
    @classmethod
    def _temporal_tls(cls, v: Path | None, info: ValidationInfo) -> Path | None:
        if (v is None) != (info.data.get("parley_temporal_tls_cert") is None):
            raise ValueError("PARLEY_TEMPORAL_TLS_CERT and PARLEY_TEMPORAL_TLS_KEY go together: set both or neither")
        return v

    @field_validator("parley_secret_key")
    @classmethod
    def _secret_key(cls, v: SecretStr | None) -> SecretStr | None:
        if v is None or not v.get_secret_value():
            return None
        SecretBox(v.get_secret_value())  # ValueError names what a key must be, never the value
        return v

    def receipt_key_pem(self) -> bytes | None:
        """The receipt signing key's PEM, read once here.

        A `ConfigError` names what is wrong with it.
        """
        if self.parley_receipt_key is None:
            return None
        try:
            pem = self.parley_receipt_key.read_bytes()
            Signer.from_pem(pem)
        except OSError as exc:
            raise ConfigError(f"PARLEY_RECEIPT_KEY: cannot read {self.parley_receipt_key}: {exc.strerror}") from None
        except ReceiptError as exc:
            raise ConfigError(f"PARLEY_RECEIPT_KEY: {exc}") from None
        return pem

    def receipt_trusted_pem(self) -> bytes | None:
        """`PARLEY_RECEIPT_KEYS`' PEM public keys (of rotated signers), read and checked once here."""
        if self.parley_receipt_keys is None:
            return None
        try:
            pem = self.parley_receipt_keys.read_bytes()
            KeyRing.from_pem_text(pem)
        except OSError as exc:
            raise ConfigError(f"PARLEY_RECEIPT_KEYS: cannot read {self.parley_receipt_keys}: {exc.strerror}") from None
        except ReceiptError as exc:
            raise ConfigError(f"PARLEY_RECEIPT_KEYS: {exc}") from None
        return pem

    def require(self, *names: str) -> None:
        """Stop with one line naming the first missing variable among `names`."""
        for name in names:
            if not getattr(self, name):
                raise ConfigError(f"{name.upper()} is not set; it is needed here")


def load() -> Settings:
    """Read the environment.

    A malformed value becomes one `ConfigError` naming the variable.
    """
    try:
        return Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]).upper() if err.get("loc") else "configuration"
        raise ConfigError(f"{name}: {str(err['msg']).removeprefix('Value error, ')}") from None
