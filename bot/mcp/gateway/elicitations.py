"""An upstream's elicitation (`elicitation/create`), put to people in Slack as a question.

The SDK's client delivers it one of two ways. On a handshake-era connection, it is a
server-initiated request. On a 2026-07-28 one, it is an `InputRequiredResult` of the tool call.
Either way it arrives in the upstream session's `elicitation_callback`. It is asked here as an
ordinary question, a Parley run. It goes in the rules file's `channel`, to its `assignees`,
expiring after its `expires_in`:

- Form mode: the `requestedSchema`'s properties are the items
  (`workers.interaction.elicitation`). Answered, it is `accept`, with the content typed as the
  schema says. Closed by a person, it is `decline`. Expired, or cancelled by the gateway, it is
  `cancel` (`bot.mcp.elicitation.elicit_result`). A schema outside the subset is not asked. The
  upstream gets an `invalid params` error naming the property. On a 2026-07-28 connection, the
  gateway's caller gets it as the call's tool error.
- URL mode: the message and the link, with a "Done" button (`accept`, no content) and a
  "Decline" one. Expired, it is `cancel`.

The question names the upstream tool and its caller, when known to come within a gateway call
(`Elicitations.calling`). On a 2026-07-28 connection, it arrives in the call's own context. A
handshake-era `elicitation/create` carries no link to its call. So it is the call's when that
call alone waits on that upstream. Otherwise it is the upstream's alone. Nothing of the message
or answers is logged. Only the question's run id, the upstream and the outcome are. An upstream
past its `elicitations` caps gets `decline`, and nobody is asked (`budget`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from bot.mcp.elicitation import ELICITATION, elicit_result
from bot.mcp.gateway.budget import Budget
from bot.mcp.rules import RulesConfig
from workers.interaction import Item, ItemType, Option, Request
from workers.interaction.elicitation import ElicitationSchemaError, content_shape, items_from_requested_schema
from workers.interaction.lengths import REASON_MAX
from workers.logs import Log
from workers.questions import Caller, QuestionService
from workers.questions.exceptions import QuestionError
from workers.questions.models import QuestionCreate, QuestionStatus, QuestionView
from workers.questions.waiting import Patience, Progress

log = Log("parley.mcp.gateway")
URL_ITEM = "done"
DONE, DECLINE = "done", "decline"


@dataclass(frozen=True)
class Asking:
    """The gateway call an upstream's elicitation belongs to.

    It gives the tool, who called it, and how to report progress.
    """

    upstream: str
    tool: str
    caller: Caller
    report: Progress | None = None


_asking: ContextVar[Asking | None] = ContextVar("parley_gateway_asking", default=None)


def refused(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_PARAMS, message=message)


class Elicitations:
    def __init__(self, service: QuestionService, config: RulesConfig, *, progress_every: float) -> None:
        self.service = service
        self.config = config
        self.progress_every = progress_every
        self._calls: dict[str, list[Asking]] = {}
        self.budget = Budget(config)

    @contextlib.asynccontextmanager
    async def calling(self, call: Asking) -> AsyncIterator[None]:
        """Within this block `call` waits on its upstream, owning the elicitations it causes."""
        token = _asking.set(call)
        calls = self._calls.setdefault(call.upstream, [])
        calls.append(call)
        try:
            yield
        finally:
            calls.remove(call)
            self.budget.done(call)
            _asking.reset(token)

    def _call_of(self, upstream: str) -> Asking | None:
        call = _asking.get()
        if call is not None and call.upstream == upstream:
            return call
        waiting = self._calls.get(upstream, [])
        return waiting[0] if len(waiting) == 1 else None

    async def answer(self, upstream: str, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        """`upstream`'s elicitation asked in Slack, with its outcome once answered or expired."""
        call = self._call_of(upstream)
        caller = call.caller if call is not None else Caller(f"upstream {upstream}", via="mcp")
        who = f"{call.tool}, called by {call.caller.name}," if call is not None else f"The upstream {upstream}"
        over = self.budget.spend(upstream, call)
        if over is not None:  # nobody is pinged: the upstream hears decline, and why
            tool = call.tool if call is not None else ""
            log.warning("upstream elicitation declined", upstream=upstream, tool=tool, reason=over)
            return types.ElicitResult(action="decline", _meta={"parley/reason": over})
        try:
            body, schema = self._question(who, params)
        except ElicitationSchemaError as exc:
            return refused(f"{upstream}'s elicitation cannot be asked in Slack: " + "; ".join(exc.problems))
        if self.config.channel is None:
            return refused("the gateway's rules file names no `channel` to ask in")
        saying = f"waiting for an answer in Slack to {call.tool}'s question" if call is not None else None
        progress = call.report if call is not None else None
        patience = Patience.decision(self.config.expires_in, progress, saying, every=self.progress_every)
        try:
            view, _ = await self.service.waiting.ask(caller, body, patience)
        except QuestionError as exc:
            return refused(f"{upstream}'s elicitation cannot be asked in Slack: {exc.detail}")
        except ValueError as exc:
            return refused(f"{upstream}'s elicitation cannot be asked in Slack: {exc}")
        result = self._result(view, schema)
        log.info("upstream elicitation answered", run_id=view.id, upstream=upstream, action=result.action)
        return result

    def _question(self, who: str, params: types.ElicitRequestParams) -> tuple[QuestionCreate, dict[str, Any] | None]:
        """The question asking `params`, and the form's schema (None in URL mode)."""
        common: dict[str, Any] = {"assignees": list(self.config.assignees), "expires_in": self.config.expires_in}
        if isinstance(params, types.ElicitRequestURLParams):
            reason = f"{who} asks you to open a link: {params.message}\n{params.url}"
            options = [Option(value=DONE, label="Done"), Option(value=DECLINE, label="Decline")]
            item = Item(
                id=URL_ITEM, text="Once you have done what the link asks", type=ItemType.SELECT, options=options
            )
            request = Request(reason=_fit(reason), items=[item], **common)
            return QuestionCreate(request=request, channel=self.config.channel), None
        schema = dict(params.requested_schema)
        items = items_from_requested_schema(schema)
        request = Request(reason=_fit(f"{who} asks: {params.message}"), items=items, **common)
        metadata = {ELICITATION: content_shape(schema)}
        return QuestionCreate(request=request, channel=self.config.channel, metadata=metadata), schema

    @staticmethod
    def _result(view: QuestionView, schema: dict[str, Any] | None) -> types.ElicitResult:
        if schema is None:  # URL mode: Done accepts, Decline declines, anything else cancels
            if view.status is QuestionStatus.ANSWERED:
                done = (view.answers or {}).get(URL_ITEM) == DONE
                return types.ElicitResult(action="accept" if done else "decline")
            return types.ElicitResult(action="cancel")
        result = elicit_result(view, schema) or {"action": "cancel"}
        return types.ElicitResult(action=result["action"], content=result.get("content"))


def _fit(text: str) -> str:
    return text if len(text) <= REASON_MAX else text[: REASON_MAX - 1] + "…"
