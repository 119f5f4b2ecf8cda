"""The stand-in's agent surfaces: agent sessions and assistant thread statuses, as Slack answers.

`agents.sessions.setStatus` creates a thread's session or sets its status. The status is one of
`active`, `processing`, `suspended` or `closed`. Its `title` and `initiator_user_id` count only
on creation. `agents.sessions.rename` sets the title, 1 to 200 characters.
`assistant.threads.setStatus` sets a thread's status line, and an empty one clears it. See
https://docs.slack.dev/ai/agent-sessions/ and the methods' reference pages.

A workspace made `without_agents` answers each of them `unknown_method`. It refuses a message
with a `plan`, `task_card`, `context_actions`, `alert` or `card` block (`invalid_blocks`). That
is what a Slack without these surfaces does. Each session keeps every status it was given, for
tests to read.
"""

from __future__ import annotations

from collections.abc import Callable
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
AGENT_BLOCKS = frozenset({"plan", "task_card", "context_actions", "alert", "card"})


@dataclass
class AgentSession:
    """One thread's session: title, starter, and every status given, in order."""

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
    streams: dict[str, list[str]] = field(default_factory=dict)
    """Each streamed message's `markdown_text`s by ts, in the order they came."""
    live: set[str] = field(default_factory=set)
    """The streamed messages not stopped yet."""
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
    ws.touch()
    return {}


def rename(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    channel, thread_ts = _where(ws, args)
    title = _title(args, required=True)
    session = state(ws).sessions.setdefault((channel, thread_ts), AgentSession(channel, thread_ts))
    session.title = title
    session.titles.append(title)
    ws.touch()
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
    """Refuse agent blocks in a `without_agents` workspace, as a Slack lacking them would."""
    if not ws.agents.without_agents or not isinstance(blocks, list):
        return
    errors = [
        f"unsupported block type {b['type']!r} [json-pointer:/blocks/{n}/type]"
        for n, b in enumerate(blocks)
        if isinstance(b, dict) and b.get("type") in AGENT_BLOCKS
    ]
    if errors:
        raise SlackError("invalid_blocks", errors=errors)


# ---- streaming (https://docs.slack.dev/reference/methods/chat.startStream) ----------------------
STREAM_TEXT_MAX = 12_000
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def markdown_of(args: dict[str, Any]) -> str:
    """The text a stream call adds: its `markdown_text`, then its chunks' `markdown_text`.

    slack_sdk sends these.
    """
    text = args.get("markdown_text") or ""
    chunks = args.get("chunks") or []
    if not isinstance(text, str) or not isinstance(chunks, list) or not all(isinstance(c, dict) for c in chunks):
        raise SlackError("invalid_arguments")
    text += "".join(str(c.get("text") or "") for c in chunks if c.get("type") == "markdown_text")
    if utf16_len(text) > STREAM_TEXT_MAX:
        raise SlackError("invalid_arguments")
    return text


def _streaming(ws: Workspace, args: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    if ws.agents.without_agents:
        raise SlackError("unknown_method")
    channel = ws.resolve_channel(str(args.get("channel") or ""))
    if channel is None:
        raise SlackError("channel_not_found")
    ts = str(args.get("ts") or "")
    msg = ws.message(channel, ts)
    if msg is None or ts not in ws.agents.streams:
        raise SlackError("message_not_found")
    if ts not in ws.agents.live:
        raise SlackError("message_not_in_streaming_state")
    return channel, ts, msg


def start_stream(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    """A growing message in thread `thread_ts`, appended to until stopped."""
    if ws.agents.without_agents:
        raise SlackError("unknown_method")
    channel = ws.resolve_channel(str(args.get("channel") or ""))
    if channel is None:
        raise SlackError("channel_not_found")
    thread_ts = str(args.get("thread_ts") or "")
    if not thread_ts or ws.message(channel, thread_ts) is None:
        raise SlackError("invalid_thread_ts")
    if not channel.startswith("D") and not (args.get("recipient_user_id") and args.get("recipient_team_id")):
        raise SlackError("invalid_arguments")  # required when streaming to channels
    msg = ws.post_message(channel, markdown_of(args), thread_ts=thread_ts)
    ws.agents.streams[msg["ts"]] = [markdown_of(args)]
    ws.agents.live.add(msg["ts"])
    return {"channel": channel, "ts": msg["ts"]}


def append_stream(ws: Workspace, args: dict[str, Any], token: str, request: Request) -> dict[str, Any]:
    channel, ts, msg = _streaming(ws, args)
    ws.agents.streams[ts].append(markdown_of(args))
    ws.update_message(channel, ts, msg["text"] + markdown_of(args))
    return {"channel": channel, "ts": ts}


def stop_stream(
    ws: Workspace, args: dict[str, Any], token: str, request: Request, check: Callable[[Any], None] | None = None
) -> dict[str, Any]:
    """End the stream with its last text, and the `blocks` shown under it.

    The blocks are `check`ed as a message's.
    """
    channel, ts, msg = _streaming(ws, args)
    blocks = args.get("blocks")
    if blocks is not None and check is not None:
        check(blocks)
    ws.agents.streams[ts].append(markdown_of(args))
    ws.agents.live.discard(ts)
    ws.update_message(channel, ts, msg["text"] + markdown_of(args), blocks)
    return {"channel": channel, "ts": ts, "message": ws.message(channel, ts)}


def sessions_shown(ws: Workspace) -> list[dict[str, str]]:
    """Each thread's session as the page draws it: where, status and title."""
    return [
        {"channel": s.channel, "thread_ts": s.thread_ts, "status": s.status, "title": s.title}
        for s in ws.agents.sessions.values()
    ]


def stopped_event(ws: Workspace, user: str, channel: str, thread_ts: str, now: float) -> dict[str, Any]:
    """The `agent_session_stopped` event of a stop-button click, with its documented fields."""
    return {
        "type": "agent_session_stopped",
        "channel": channel,
        "thread_ts": thread_ts,
        "user": user,
        "streaming_message_ts": sorted(
            ts for ts in ws.agents.live if (ws.message(channel, ts) or {}).get("thread_ts") == thread_ts
        ),
        "event_ts": f"{now:.6f}",
    }
