"""`Caller`: who asks the question service, and which questions it may see.

A question belongs to its asker's owner id, never to a name. An admin token sees every question of
its workspace, or of all workspaces when it has none.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workers.questions.models import TokenScope
from workers.store.questions import UnreadableQuestion
from workers.store.records import LOCAL_OWNER, TOKEN_OWNER, ApiQuestionRecord, ApiTokenRecord


@dataclass(frozen=True)
class Caller:
    """Who asks: its questions' owner, the origin name shown, and its rights.

    `Caller(name)` alone is a local MCP server's origin (`parley mcp`), owned by `mcp:<name>`. A
    token's caller is `Caller.of(token)`. It is owned by the token itself, never by its name.
    """

    name: str
    scopes: frozenset[str] = field(default_factory=lambda: frozenset({TokenScope.ASK.value}))
    team: str = ""  # the token's workspace: its questions are asked there, and an admin sees only those
    owner: str = ""  # "": `mcp:<name>`
    since: float = 0.0  # when the owner came to be: questions asked under its name before owners existed, from then
    rate_limit: int | None = None  # a token's own rate limit (None: the API's); a local origin has none
    open_questions: int | None = None  # a token's own cap on open questions (None: the API's)
    via: str = "api"  # how it asks: "api" (HTTP API) or "mcp"; Slack shows it above the question
    temporal: tuple[str, ...] = ()  # the workflow-id globs it may signal (a token's `--temporal`); none by default

    def __post_init__(self) -> None:
        if not self.owner:
            object.__setattr__(self, "owner", f"{LOCAL_OWNER}{self.name}")

    @property
    def admin(self) -> bool:
        return TokenScope.ADMIN.value in self.scopes

    @property
    def is_token(self) -> bool:
        return self.owner.startswith(TOKEN_OWNER)

    @classmethod
    def of(cls, token: ApiTokenRecord) -> Caller:
        return cls(
            name=token.name,
            scopes=frozenset(token.scopes),
            team=token.team,
            owner=token.owner,
            since=token.created_at,
            rate_limit=token.rate_limit,
            open_questions=token.open_questions,
            temporal=tuple(token.temporal),
        )


def owns(caller: Caller, record: ApiQuestionRecord | UnreadableQuestion) -> bool:
    """Whether `caller` asked the question.

    A question from before owners existed belongs to its name's owner. That owner must have existed
    when it was asked. So a token created later under a revoked token's name never owns it.
    """
    if record.owner:
        return record.owner == caller.owner
    return record.token == caller.name and record.created_at >= caller.since


def visible(caller: Caller, record: ApiQuestionRecord | UnreadableQuestion) -> bool:
    """What a token sees: its own questions, or an admin's all.

    An admin token with a workspace sees only that workspace's questions.
    """
    if owns(caller, record):
        return True
    return caller.admin and (not caller.team or record.team == caller.team)
