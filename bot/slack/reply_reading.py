"""Reading plain-words replies with the configured model, off the ack path, bounded per person.

`PARLEY_LLM_ANSWERS=on` turns it on. A reply no rule can read goes to `ReplyReader.read`. Such a
reply is not an ordinal or an option's name, or answers a question with several fields. Its own
two threads call the model. So a slow model never holds the threads that answer Slack. Each
person has one reading in flight, and at most `MAX_PENDING` wait in all. Past that, a reply is
told to use the buttons. The thread then shows what was read, with Confirm and Edit… for the
replier.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from slack_sdk import WebClient
from slack_sdk.models.blocks import ActionsBlock, ButtonElement, ContextBlock, MarkdownTextObject, SectionBlock

from bot.slack.mrkdwn import escape, user_ref
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


@dataclass(frozen=True)
class Reply:
    """One reply to read: whose, to which question, and where to answer."""

    interrupt: QuestionInfo
    user: str
    text: str
    channel: str
    thread_ts: str
    log_context: dict[str, Any]


@dataclass
class ReplyReader:
    """Reads replies with the model on its own threads, posting what it read for the replier."""

    config: LLMConfig
    proposals: Proposals
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(2, thread_name_prefix="parley-read"))
    _busy: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, client: WebClient, reply: Reply) -> bool:
        """Queue `reply` for reading.

        False when the person has one in flight, or too many wait.
        """
        with self._lock:
            if reply.user in self._busy or len(self._busy) >= MAX_PENDING:
                return False
            self._busy.add(reply.user)
        self.pool.submit(self._read, client, reply)
        return True

    def _read(self, client: WebClient, reply: Reply) -> None:
        try:
            config = self.config.model_copy(update={"timeout": min(self.config.timeout, READ_TIMEOUT)})
            with ChatClient(config) as model:
                answers = read_reply(model, reply.interrupt.request, reply.text)
            proposal = self.proposals.put(reply.interrupt.id, reply.user, answers)
            _post(client, reply, proposal_blocks(reply, answers, proposal), "Is this your answer?")
            log.info("reply read", **reply.log_context, proposal=proposal)
        except ReplyUnreadable as exc:
            _post(
                client,
                reply,
                None,
                f"{user_ref(reply.user)}: I could not read that as an answer ({exc}). "
                "Nothing was answered; use the question's buttons or its form.",
            )
        except LLMError as exc:
            log.warning("the model could not read a reply", **reply.log_context, error=str(exc))
            _post(
                client,
                reply,
                None,
                f"{user_ref(reply.user)}: the model could not read your reply just now. "
                "Nothing was answered; use the question's buttons or its form.",
            )
        except Exception:
            log.error("reading a reply failed", **reply.log_context, exc=True)
        finally:
            with self._lock:
                self._busy.discard(reply.user)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def shown(interrupt: QuestionInfo, answers: list[Answer]) -> list[str]:
    """One line per answer, by the item's label: "Colour: Red"."""
    lines = []
    for answer in answers:
        item = interrupt.request.item(answer.id)
        label = item.text if item is not None else answer.id
        value = answer.value
        if item is not None and item.options and isinstance(value, str):
            value = next((o.label for o in item.options if o.value == value), value)
        lines.append(f"• *{escape(label)}*: {escape(str(value))}")
    return lines


def proposal_blocks(reply: Reply, answers: list[Answer], proposal: str) -> list[dict[str, Any]]:
    """What was read, and Confirm and Edit… for the person who replied."""
    read = f"I read {user_ref(reply.user)}'s reply as:\n" + "\n".join(shown(reply.interrupt, answers))
    return [
        SectionBlock(text=MarkdownTextObject(text=read)).to_dict(),
        ContextBlock(
            elements=[MarkdownTextObject(text=f"Nothing is answered until {user_ref(reply.user)} clicks Confirm.")]
        ).to_dict(),
        ActionsBlock(
            block_id=f"rp|{proposal}",
            elements=[
                ButtonElement(text="Confirm", action_id=CONFIRM_ACTION_ID, value=proposal, style="primary"),
                ButtonElement(text="Edit…", action_id=EDIT_ACTION_ID, value=proposal),
            ],
        ).to_dict(),
    ]


def _post(client: WebClient, reply: Reply, blocks: list[dict[str, Any]] | None, text: str) -> None:
    client.chat_postMessage(channel=reply.channel, thread_ts=reply.thread_ts, text=text, blocks=blocks)
