"""`HostRecords`: what a Slack host reads and writes beside its messages, nothing more.

A host keeps a run's thread, a question's message and who was told of it. It reads a run's
conversation, history and questions to draw them. The run store provides all of it. But a host
sees only this narrow contract, never the store's other operations.
"""

from __future__ import annotations

from typing import Any, Protocol

from redis import Redis

from workers.interaction import Answer, GroupInfo
from workers.store.records import HistoryEntry, InterruptRecord, RunRecord


class Notices(Protocol):
    """Who was told of a question already, so nobody is told twice."""

    def first_notice(self, interrupt_id: str, user: str) -> bool: ...


class GroupMembers(Protocol):
    """The questions of a group asked at once (`ask_all`, `ask_any`, `ask_each`)."""

    def members(self, group: GroupInfo) -> list[InterruptRecord]: ...


class Proposals(Protocol):
    """Where answers read from a plain-words reply wait for the replier's Confirm."""

    def put(self, interrupt_id: str, user: str, answers: list[Answer], ttl: int = ...) -> str: ...


class HostRecords(Protocol):
    """The records a host keeps and reads beside its messages.

    The run store is one.
    """

    @property
    def people(self) -> Notices: ...

    @property
    def groups(self) -> GroupMembers: ...

    @property
    def redis(self) -> Redis:
        """The connection the host's own small stores share (its agent surfaces)."""
        ...

    def find(self, run_id: str) -> RunRecord | None: ...

    def get(self, run_id: str) -> RunRecord: ...

    def interrupt(self, interrupt_id: str) -> InterruptRecord | None: ...

    def conversation(self, run_id: str) -> dict[str, Any]: ...

    def history(self, run_id: str) -> list[HistoryEntry]: ...

    def set_thread(self, run_id: str, conversation: dict[str, Any]) -> None: ...

    def set_message(self, interrupt_id: str, message: dict[str, Any]) -> None: ...

    def thread_run(self, channel: str, thread_ts: str) -> str | None: ...
