"""Reading plain-words replies with the configured model, off the ack path, bounded per person.

`PARLEY_LLM_ANSWERS=on` turns it on. A reply no rule can read goes to `ReplyReader.read`. Such a
reply is not an ordinal or an option's name, or answers a question with several fields. Its own
two threads call the model. So a slow model never holds the threads that answer Slack. Each
person has one reading in flight, and at most `MAX_PENDING` wait in all. Past that, a reply is
told to use the buttons. Each person has `READS_PER_QUESTION` readings per question. Past them, a
reply goes the rule path's way. The thread then shows what was read, with Confirm and Edit… for
the replier. A reply that gives no answer is said once per question and person. So chatter in the
thread is neither read without end nor answered at every message.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from slack_sdk import WebClient
from slack_sdk.models.blocks import ActionsBlock, ButtonElement, ContextBlock, MarkdownTextObject, SectionBlock

from bot.slack.limits import SECTION_MAX
from bot.slack.mrkdwn import clip, cut_escaped, escape, user_ref
from workers.interaction import Answer, QuestionInfo
from workers.llm import ChatClient, LLMConfig, LLMError
from workers.llm.replies import ReplyUnreadable, read_reply
from workers.logs import Log
from workers.runs import Proposals

log = Log("parley.replies")
CONFIRM_ACTION_ID = "parley_reply_confirm"
EDIT_ACTION_ID = "parley_reply_edit"
MAX_PENDING = 20
READ_TIMEOUT = 20.0
READS_PER_QUESTION = 3
"""How many replies per question and person the model reads, within a day."""
VALUE_MAX = 300
"""How much of a read value the thread shows. Confirm records it whole."""
LABEL_MAX = 150
WHY_MAX = 300


class Readings(Proposals, Protocol):
    """Proposals, and how many readings each person has left per question."""

    def take_reading(self, interrupt_id: str, user: str, budget: int, ttl: int = ...) -> bool: ...

    def take(self, proposal_id: str, user: str) -> object: ...


def _told_first() -> bool:
    return True


class Reading(StrEnum):
    """What became of a reply handed to the reader."""

    QUEUED = "queued"
    BUSY = "busy"  # the person has one in flight, or too many wait: the rule path answers
    SPENT = "spent"  # the person's readings of the question are used up


@dataclass(frozen=True)
class Reply:
    """One reply to read: whose, to which question, and where to answer."""

    interrupt: QuestionInfo
    user: str
    text: str
    channel: str
    thread_ts: str
    log_context: dict[str, Any]
    first_told: Callable[[], bool] = _told_first
    """True the first time, per question, that the replier is told nothing was answered."""


@dataclass
class ReplyReader:
    """Reads replies with the model on its own threads, posting what it read for the replier."""

    config: LLMConfig
    proposals: Readings
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(2, thread_name_prefix="parley-read"))
    _busy: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, client: WebClient, reply: Reply) -> Reading:
        """Queue `reply` for reading, or say why not.

        `BUSY` when the person has one in flight, or too many wait. `SPENT` past the person's
        `READS_PER_QUESTION` readings of the question.
        """
        with self._lock:
            if reply.user in self._busy or len(self._busy) >= MAX_PENDING:
                return Reading.BUSY
            self._busy.add(reply.user)
        try:
            taken = self.proposals.take_reading(reply.interrupt.id, reply.user, READS_PER_QUESTION)
        except BaseException:
            with self._lock:
                self._busy.discard(reply.user)
            raise
        if not taken:
            with self._lock:
                self._busy.discard(reply.user)
            log.info("reply not read: the replier's readings of this question are used up", **reply.log_context)
            return Reading.SPENT
        self.pool.submit(self._read, client, reply)
        return Reading.QUEUED

    def _read(self, client: WebClient, reply: Reply) -> None:
        try:
            config = self.config.model_copy(update={"timeout": min(self.config.timeout, READ_TIMEOUT)})
            with ChatClient(config) as model:
                answers = read_reply(model, reply.interrupt.request, reply.text)
            read = reading_blocks(reply, answers)  # built first: a reading that cannot be shown is never kept
            proposal = self.proposals.put(reply.interrupt.id, reply.user, answers)
            self._show(client, reply, [*read, confirm_block(proposal)], proposal)
        except ReplyUnreadable as exc:
            why = clip(" ".join(str(exc).split()), WHY_MAX)  # the model's words, as plain text on one line
            self._tell_once(
                client,
                reply,
                f"{user_ref(reply.user)}: I could not read that as an answer ({why}). "
                "Nothing was answered; use the question's buttons or its form.",
            )
        except LLMError as exc:
            log.warning("the model could not read a reply", **reply.log_context, error=str(exc))
            self._tell_once(
                client,
                reply,
                f"{user_ref(reply.user)}: the model could not read your reply just now. "
                "Nothing was answered; use the question's buttons or its form.",
            )
        except Exception:
            log.error("reading a reply failed", **reply.log_context, exc=True)
        finally:
            with self._lock:
                self._busy.discard(reply.user)

    def _show(self, client: WebClient, reply: Reply, blocks: list[dict[str, Any]], proposal: str) -> None:
        """Post what was read. If that fails, the proposal goes and the replier is told privately."""
        try:
            _post(client, reply, blocks, "Is this your answer?")
        except Exception:
            self.proposals.take(proposal, reply.user)
            log.error("showing a reply's reading failed", **reply.log_context, proposal=proposal, exc=True)
            client.chat_postEphemeral(
                channel=reply.channel,
                user=reply.user,
                thread_ts=reply.thread_ts,
                text="I read your reply but could not show it here. Nothing was answered; "
                "use the question's buttons or its form.",
            )
            return
        log.info("reply read", **reply.log_context, proposal=proposal)

    def _tell_once(self, client: WebClient, reply: Reply, text: str) -> None:
        """Say in the thread that nothing was answered, once per question and person."""
        if reply.first_told():
            _post(client, reply, None, text)
        else:
            log.info("reply not read, and the replier was told before", **reply.log_context)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def shown(interrupt: QuestionInfo, answers: list[Answer]) -> list[str]:
    """One line per answer, by the item's label: "Colour: Red".

    A long value is cut, and says so. Confirm records it whole.
    """
    lines = []
    for answer in answers:
        item = interrupt.request.item(answer.id)
        label = item.text if item is not None else answer.id
        value = answer.value
        if item is not None and item.options and isinstance(value, str):
            value = next((o.label for o in item.options if o.value == value), value)
        whole = escape(str(value))
        text = cut_escaped(whole, VALUE_MAX)
        if text != whole:
            text += " _(cut here; Confirm records it whole)_"
        lines.append(f"• *{clip(label, LABEL_MAX)}*: {text}")
    return lines


def reading_blocks(reply: Reply, answers: list[Answer]) -> list[dict[str, Any]]:
    """What was read, and that nothing is answered until the replier confirms."""
    read = f"I read {user_ref(reply.user)}'s reply as:\n" + "\n".join(shown(reply.interrupt, answers))
    return [
        SectionBlock(text=MarkdownTextObject(text=cut_escaped(read, SECTION_MAX))).to_dict(),
        ContextBlock(
            elements=[MarkdownTextObject(text=f"Nothing is answered until {user_ref(reply.user)} clicks Confirm.")]
        ).to_dict(),
    ]


def confirm_block(proposal: str) -> dict[str, Any]:
    """Confirm and Edit… for the proposal."""
    return ActionsBlock(
        block_id=f"rp|{proposal}",
        elements=[
            ButtonElement(text="Confirm", action_id=CONFIRM_ACTION_ID, value=proposal, style="primary"),
            ButtonElement(text="Edit…", action_id=EDIT_ACTION_ID, value=proposal),
        ],
    ).to_dict()


def proposal_blocks(reply: Reply, answers: list[Answer], proposal: str) -> list[dict[str, Any]]:
    """What was read, and Confirm and Edit… for the person who replied."""
    return [*reading_blocks(reply, answers), confirm_block(proposal)]


def _post(client: WebClient, reply: Reply, blocks: list[dict[str, Any]] | None, text: str) -> None:
    client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts, text=text, blocks=blocks)
