"""Slack installations and OAuth states in Redis: slack_sdk's `InstallationStore` and `OAuthStateStore`.

slack_sdk implements these interfaces with files, SQLite, SQLAlchemy and Amazon S3, but not
Redis. Parley keeps all its state in one Redis, so they are implemented here. They use the store
layer's keys (`keys.install_*`, `keys.oauth_state`). Records are JSON, never pickled: the
models' own attributes, as slack_sdk's file store writes them.

A workspace is addressed by `(enterprise, team)`. An org-wide install (`is_enterprise_install`)
is one installation for the whole organisation. It is kept under its enterprise with no team.
Every lookup saying `is_enterprise_install` finds it, whatever team the payload names. Only the
latest installation is kept, per workspace and per installing user. slack_sdk's history of
earlier ones serves nothing Parley does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
from typing import Any

from redis import Redis
from slack_sdk.oauth.installation_store import Bot, Installation, InstallationStore
from slack_sdk.oauth.state_store import OAuthStateStore

from workers.store import keys
from workers.store.replies import reply

NONE = "none"
"""Stands for a missing enterprise or team id in a key, as in slack_sdk's own stores."""
STATE_TTL = 600
"""Seconds an issued OAuth state stays valid (slack_sdk's default)."""


def _ids(enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False) -> tuple[str, str]:
    return enterprise_id or NONE, NONE if is_enterprise_install else (team_id or NONE)


def _load(raw: bytes | str | None) -> dict[str, Any] | None:
    return json.loads(raw) if raw else None


class RedisInstallationStore(InstallationStore):
    """slack_sdk's `InstallationStore` on Redis: the bot and installer records of each workspace."""

    def __init__(self, redis: Redis, *, logger: logging.Logger | None = None) -> None:
        self.redis = redis
        self._logger = logger or logging.getLogger("parley.installations")

    @property
    def logger(self) -> logging.Logger:
        return self._logger

    # ---- writes ------------------------------------------------------------------
    def save(self, installation: Installation) -> None:
        """Keep `installation` as its workspace's latest, its installer's latest, and its bot."""
        e, t = _ids(installation.enterprise_id, installation.team_id, installation.is_enterprise_install)
        entity = json.dumps(installation.__dict__)
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(keys.install_installer(e, t), entity)
        if installation.user_id:
            user_key = keys.install_installer(e, t, installation.user_id)
            pipe.set(user_key, entity)
            pipe.sadd(keys.install_installers(e, t), user_key)
        bot = installation.to_bot()
        if bot.bot_token:
            pipe.set(keys.install_bot(e, t), json.dumps(bot.__dict__))
        pipe.execute()

    def save_bot(self, bot: Bot) -> None:
        if not bot.bot_token:
            self.logger.debug("not saving a bot installation without a bot token")
            return
        e, t = _ids(bot.enterprise_id, bot.team_id, bot.is_enterprise_install)
        self.redis.set(keys.install_bot(e, t), json.dumps(bot.__dict__))

    # ---- reads -------------------------------------------------------------------
    def find_bot(
        self, *, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False
    ) -> Bot | None:
        e, t = _ids(enterprise_id, team_id, is_enterprise_install)
        data = _load(reply(self.redis.get(keys.install_bot(e, t))))
        return Bot(**data) if data else None

    def find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        """The workspace's latest installation (or `user_id`'s), with the latest bot token.

        A user's own installation may predate a reinstall that replaced the bot token. So the bot fields
        come from the latest bot record, as in slack_sdk's stores.
        """
        e, t = _ids(enterprise_id, team_id, is_enterprise_install)
        data = _load(reply(self.redis.get(keys.install_installer(e, t, user_id))))
        if data is None:
            return None
        installation = Installation(**data)
        bot = self.find_bot(enterprise_id=enterprise_id, team_id=team_id, is_enterprise_install=is_enterprise_install)
        if bot is not None and bot.bot_token != installation.bot_token:
            installation.bot_id, installation.bot_user_id = bot.bot_id, bot.bot_user_id
            installation.bot_token, installation.bot_scopes = bot.bot_token, bot.bot_scopes
            installation.bot_refresh_token = bot.bot_refresh_token
            installation.bot_token_expires_at = bot.bot_token_expires_at
        return installation

    # ---- deletes -----------------------------------------------------------------
    def delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        e, t = _ids(enterprise_id, team_id)
        self.redis.delete(keys.install_bot(e, t))

    def delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        """Delete `user_id`'s installation of the workspace, or without a user all of them."""
        e, t = _ids(enterprise_id, team_id)
        index = keys.install_installers(e, t)
        pipe = self.redis.pipeline(transaction=True)
        if user_id:
            user_key = keys.install_installer(e, t, user_id)
            pipe.delete(user_key)
            pipe.srem(index, user_key)
        else:
            users = [k.decode() if isinstance(k, bytes) else k for k in reply(self.redis.smembers(index))]
            pipe.delete(keys.install_installer(e, t), index, *users)
        pipe.execute()

    def delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self.delete_bot(enterprise_id=enterprise_id, team_id=team_id)
        self.delete_installation(enterprise_id=enterprise_id, team_id=team_id)


class RedisOAuthStateStore(OAuthStateStore):
    """slack_sdk's `OAuthStateStore`, stateless until consumed: issuing a state writes nothing.

    A state is `<nonce>.<expiry in ms>.<HMAC of both with SLACK_STATE_SECRET>`. So a visit to
    `/slack/install` costs Redis nothing, though anyone may visit as often as they like. A state
    Parley did not sign, or past its expiry, is refused before Redis is asked. A valid one is
    recorded when the redirect consumes it, with SET NX. It is kept until it would have expired
    anyway. So it is consumed once.
    """

    def __init__(
        self,
        redis: Redis,
        secret: str,
        *,
        expiration_seconds: int = STATE_TTL,
        logger: logging.Logger | None = None,
    ) -> None:
        if not secret:
            raise ValueError("the OAuth state store needs a secret to sign states with")
        self.redis = redis
        self._secret = secret.encode()
        self.expiration_seconds = expiration_seconds
        self._logger = logger or logging.getLogger("parley.installations")

    @property
    def logger(self) -> logging.Logger:
        return self._logger

    def _sign(self, signed: str) -> str:
        return hmac.new(self._secret, signed.encode(), hashlib.sha256).hexdigest()[:32]

    def issue(self, *args: Any, **kwargs: Any) -> str:
        signed = f"{secrets.token_urlsafe(24)}.{int((time.time() + self.expiration_seconds) * 1000)}"
        return f"{signed}.{self._sign(signed)}"

    def consume(self, state: str) -> bool:
        """True once for a state signed here and unexpired.

        The first consume records it, so a second is false.
        """
        signed, _, signature = (state or "").rpartition(".")
        nonce, _, expiry = signed.partition(".")
        if not nonce or not expiry.isdigit() or not hmac.compare_digest(signature, self._sign(signed)):
            self.logger.info("OAuth state not signed by Parley; refused")
            return False
        left_ms = int(expiry) - int(time.time() * 1000)
        if left_ms <= 0:
            self.logger.info("expired OAuth state; refused")
            return False
        if not self.redis.set(keys.oauth_state(nonce), "1", nx=True, px=left_ms):
            self.logger.info("OAuth state already used; refused")
            return False
        return True
