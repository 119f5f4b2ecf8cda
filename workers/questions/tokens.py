"""API tokens: created once (shown once), found by their value's sha256, revoked by name.

A token is 32 random bytes, so a plain sha256 stores it safely. Nothing about it can be guessed
faster than the token itself. A slow password hash protects low-entropy secrets, which these are
not. The webhook signing secret is kept as it is, since Parley signs with it. It is shown once
too.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from fnmatch import fnmatchcase

from workers.questions.exceptions import QuestionError
from workers.questions.models import TokenScope
from workers.store.questions import QuestionStore
from workers.store.records import ApiTokenRecord

TOKEN_PREFIX = "pk_"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class TokenError(QuestionError):
    """A token command refused: bad or taken name, unknown scope, no such token."""


@dataclass(frozen=True)
class NewToken:
    """What `create` returns, the only time token and secret are seen whole."""

    record: ApiTokenRecord
    token: str
    webhook_secret: str


TEAM_PATTERN = re.compile(r"[TE][A-Z0-9]{2,20}")
GLOB_PATTERN = re.compile(r"[!-~]{1,1000}")
"""A workflow-id glob: printable ASCII, no spaces, as long as a workflow id may be."""


def temporal_granted(globs: tuple[str, ...] | list[str], workflow_id: str) -> bool:
    """Whether one of a token's `--temporal` globs matches `workflow_id`.

    The match is case-sensitive, as ids are.
    """
    return any(fnmatchcase(workflow_id, glob) for glob in globs)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(
    store: QuestionStore,
    name: str,
    scopes: list[str],
    rate_limit: int | None = None,
    team: str = "",
    temporal: list[str] | None = None,
    open_questions: int | None = None,
) -> NewToken:
    """A new token `name` with `scopes` (default: ask), and optional limits of its own.

    `rate_limit` is its requests per window, `open_questions` how many it may have open at once.

    `team` is the Slack workspace its questions are asked in. For an admin token, it is also the
    only one it sees. With many workspaces (OAuth mode), it says which installation posts them.
    `temporal` lists the workflow-id globs its questions may signal. There are none by default, so a
    token reaches no workflow unless granted one.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise TokenError(
            f"token name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    known = {s.value for s in TokenScope}
    bad = [s for s in scopes if s not in known]
    if bad:
        raise TokenError(f"unknown scope {bad[0]!r}; scopes are: {', '.join(sorted(known))}")
    if team and not TEAM_PATTERN.fullmatch(team):
        raise TokenError(f"--team {team!r}: a Slack workspace id (T…) or organisation id (E…)")
    if rate_limit is not None and rate_limit < 1:
        raise TokenError(f"--rate-limit must be at least 1 request per window, not {rate_limit}")
    if open_questions is not None and open_questions < 1:
        raise TokenError(f"--open-questions must be at least 1, not {open_questions}")
    for glob in temporal or []:
        if not GLOB_PATTERN.fullmatch(glob):
            raise TokenError(f"--temporal {glob!r}: a workflow-id glob of printable characters, no spaces")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    record = ApiTokenRecord(
        name=name,
        token_hash=token_hash(token),
        scopes=sorted(set(scopes or [TokenScope.ASK.value])),
        webhook_secret=secret,
        created_at=time.time(),
        rate_limit=rate_limit,
        open_questions=open_questions,
        team=team,
        temporal=sorted(set(temporal or [])),
    )
    if not store.add_token(record):
        raise TokenError(
            f"a token named {name!r} exists, and a token is shown only once: "
            f"`parley tokens revoke {name}` first, or pick another name"
        )
    return NewToken(record=record, token=token, webhook_secret=secret)


def verify(store: QuestionStore, token: str) -> ApiTokenRecord | None:
    """The token's record, or None for an unknown or revoked token."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    return store.token_by_hash(token_hash(token))


def revoke(store: QuestionStore, name: str) -> None:
    if not store.revoke_token(name):
        raise TokenError(f"no token named {name!r}")
