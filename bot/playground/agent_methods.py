"""The stand-in's agent surfaces: agent sessions and assistant thread statuses, as Slack answers them.

`agents.sessions.setStatus` creates a thread's session or sets its status (one of `active`,
`processing`, `suspended`, `closed`); its `title` and `initiator_user_id` count only on
creation. `agents.sessions.rename` sets the title (1 to 200 characters).
`assistant.threads.setStatus` sets a thread's status line, an empty one clearing it
(https://docs.slack.dev/ai/agent-sessions/, the methods' reference pages).

A workspace made `without_agents` answers each of them `unknown_method`, and refuses a message
with a `plan` or `task_card` block (`invalid_blocks`), as a Slack without these surfaces does.
Each session keeps every status it was given, for tests to read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from bot.playground.slack_error import SlackError
from bot.slack.limits import utf16_len

if TYPE_CHECKING:
    from bot.playground.workspace import Workspace

STATUSES = frozenset({"active", "processing", "suspended", "closed"})
TITLE_MAX = 200
LOADING_MESSAGES_MAX = 10
METHODS = ("agents.sessions.setStatus", "agents.sessions.rename", "assistant.threads.setStatus")
AGENT_BLOCKS = frozenset({"plan", "task_card"})


@dataclass
class AgentSession:
    """One thread's session: its title, who started it, and every status it was given in order."""

    channel: str
    thread_ts: str
    title: str = ""
    initiator: str = ""
    statuses: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.statuses[-1] if self.statuses else ""


@dataclass
class AgentState:
    """The workspace's sessions and assistant statuses, by (channel, thread_ts)."""

    without_agents: bool = False
    sessions: dict[tuple[str, str], AgentSession] = field(default_factory=dict)
    assistant: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def state(ws: Workspace) -> AgentState:
    return ws.agents


def _where(ws: Workspace, args: dict[str, Any]) -> tuple[str, str]:
    if state(ws).without_agents:
        raise SlackError("unknown_method")
    channel = ws.resolve_channel(str(args.get("channel_id") or ""))
    if channel is None:
        raise SlackError("channel_not_found")
    thread_ts = str(args.get("thread_ts") or "")
    if not thread_ts or ws.message(channel, thread_ts) is None:
        raise SlackError("invalid_thread_ts")
    return channel, thread_ts


def _title(args: dict[str, Any], *, required: bool) -> str:
    title = args.get("title")
    if title is None and not required:
        return ""
    if not isinstance(title, str) or not 1 <= utf16_len(title) <= TITLE_MAX:
        raise SlackError("invalid_arguments")
    return title


def set_status(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    channel, thread_ts = _where(ws, args)
    status = str(args.get("status") or "")
    if status not in STATUSES:
        raise SlackError("invalid_arguments")
    title = _title(args, required=False)
    sessions = state(ws).sessions
    session = sessions.get((channel, thread_ts))
    if session is None:
        session = AgentSession(channel, thread_ts, title=title, initiator=str(args.get("initiator_user_id") or ""))
        session.titles.append(title)
        sessions[(channel, thread_ts)] = session
    session.statuses.append(status)
    return {}


def rename(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    channel, thread_ts = _where(ws, args)
    title = _title(args, required=True)
    session = state(ws).sessions.setdefault((channel, thread_ts), AgentSession(channel, thread_ts))
    session.title = title
    session.titles.append(title)
    return {}


def assistant_status(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    channel, thread_ts = _where(ws, args)
    status = args.get("status")
    if not isinstance(status, str):
        raise SlackError("invalid_arguments")
    if len(args.get("loading_messages") or []) > LOADING_MESSAGES_MAX:
        raise SlackError("invalid_arguments")
    state(ws).assistant.setdefault((channel, thread_ts), []).append(status)
    return {}


def refuse_agent_blocks(ws: Workspace, blocks: Any) -> None:
    """A workspace `without_agents` refuses a message with agent blocks, as a Slack that lacks them would."""
    if not ws.agents.without_agents or not isinstance(blocks, list):
        return
    errors = [
        f"unsupported block type {b['type']!r} [json-pointer:/blocks/{n}/type]"
        for n, b in enumerate(blocks)
        if isinstance(b, dict) and b.get("type") in AGENT_BLOCKS
    ]
    if errors:
        raise SlackError("invalid_blocks", errors=errors)
