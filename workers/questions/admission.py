"""What `QuestionService.create` checks before anything is written or posted.

A callback or Temporal target must be one Parley may reach. A `#name` channel must exist. The
caller must be under its cap on open questions and its rate limit. Each refusal is a
`QuestionError` the API answers as problem+json, and it changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from workers.logs import Log
from workers.questions.caller import Caller
from workers.questions.channels import ChannelNames, where_to_post
from workers.questions.config import QuestionConfig
from workers.questions.exceptions import (
    QuestionForbidden,
    QuestionInvalid,
    QuestionNotPosted,
    QuestionRateLimited,
    TooManyOpenQuestions,
)
from workers.questions.models import QuestionCreate
from workers.questions.tokens import temporal_granted
from workers.store.idempotency import Binding
from workers.store.questions import QuestionStore
from workers.store.records import ApiQuestionRecord

log = Log("parley.questions")


class QuestionAdmission:
    """The checks of a create, for `QuestionService`, which provides the fields below."""

    store: QuestionStore
    config: QuestionConfig
    team: str
    channels: ChannelNames | None

    def _check_temporal(self, caller: Caller, body: QuestionCreate) -> None:
        """Refuse a Temporal target this Parley cannot signal, or one not granted.

        Parley cannot signal without a configured Temporal, or in another namespace. It signals with its
        own credentials. So a caller may name only a granted id.
        """
        cfg = self.config.temporal
        assert body.temporal is not None
        if not cfg.address:
            detail = "this Parley signals no Temporal workflow: PARLEY_TEMPORAL_ADDRESS is not set"
            raise QuestionInvalid(detail, [field_error(["temporal"], detail)])
        if body.temporal.namespace != cfg.namespace:
            given = body.temporal.namespace
            detail = f"this Parley signals workflows of namespace {cfg.namespace!r} only, not {given!r}"
            raise QuestionInvalid(detail, [field_error(["temporal", "namespace"], detail)])
        workflow_id = body.temporal.workflow_id
        if not temporal_granted(caller.temporal, workflow_id):
            granted = ", ".join(repr(g) for g in caller.temporal) or "none"
            log.warning("temporal target refused: not granted", origin=caller.name, workflow_id=workflow_id[:200])
            detail = (
                f"this token may not signal Temporal workflow {workflow_id[:200]!r} (granted: {granted}); "
                "an operator grants ids with `parley tokens create NAME --temporal 'GLOB'`"
            )
            raise QuestionForbidden(detail, errors=[field_error(["temporal", "workflow_id"], detail)])

    def _channel_by_id(self, caller: Caller, body: QuestionCreate) -> QuestionCreate:
        """`body` with a `#name` channel replaced by its id.

        If no channel has that name, 422 lists the channels.
        """
        if not body.channel or not body.channel.startswith("#"):
            return body
        team = caller.team or self.team
        found = self.channels.find(body.channel[1:], team) if self.channels is not None else None
        if found is None:
            detail = f"Parley sees no channel {body.channel}; {where_to_post(self.channels, team)}"
            raise QuestionInvalid(detail, [field_error(["channel"], detail)], title=f"No channel {body.channel}")
        return body.model_copy(update={"channel": found})

    def _not_posted(self, record: ApiQuestionRecord, binding: Binding | None, exc: Exception) -> None:
        """Handle a create whose execution failed.

        A question not asked yet is withdrawn. The caller's error then stands, and no worker posts it
        later. Otherwise this raises `QuestionNotPosted` (503), naming it.
        """
        try:
            withdrawn = self.store.withdraw(record, binding)
        except Exception as failed:  # Redis still down: the question stays, bound to its key
            log.warning("could not withdraw the question", run_id=record.id, error=repr(failed))
            withdrawn = False
        if withdrawn:
            log.warning("question withdrawn: it failed before it was asked", run_id=record.id, error=repr(exc))
            return
        log.warning("question created but not posted yet", run_id=record.id, origin=record.token, error=repr(exc))
        raise QuestionNotPosted(record.id, binding is not None) from exc

    def _check_open(self, caller: Caller, binding: Binding | None) -> None:
        """Refuse a question past the caller's cap on open ones (`TooManyOpenQuestions`, 429).

        A retry whose Idempotency-Key made its question already passes, to be given that question.
        """
        cap = caller.open_questions or self.config.open_questions
        count = self.store.open.full(caller.owner, cap)
        if count and not (binding is not None and self.store.bound(binding) is not None):
            log.warning("question refused: too many open", origin=caller.name, open=count, cap=cap)
            detail = (
                f"{caller.name} has {count} question{'s' if count != 1 else ''} open and may have {cap} at once; "
                "more may be asked as these are answered, cancelled or expire"
            )
            raise TooManyOpenQuestions(detail, open_questions=count, limit=cap)

    def _charge_notices(self, caller: Caller, body: QuestionCreate) -> None:
        """Charge the question's DMs against the token's rate limit, one request each.

        There is one DM per person asked or escalated to. So asking 50 people costs what 50 requests
        cost. Over the limit, the answer is 429.
        """
        notices = len(body.request.assignees or ([body.user] if body.user else [])) + len(body.request.escalate_to)
        if not caller.is_token or not notices:
            return
        limit = caller.rate_limit or self.config.rate_limit
        wait = self.store.hit(caller.owner, limit, self.config.rate_window, cost=notices)
        if wait:
            detail = f"over {limit} requests in {self.config.rate_window} s (each person a question DMs counts as one)"
            raise QuestionRateLimited(detail, wait)


def body_digest(body: QuestionCreate) -> str:
    """The sha256 of the body's JSON with sorted keys.

    Equal bodies give one digest, whatever their order.
    """
    text = json.dumps(body.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def field_error(loc: list[str], msg: str) -> dict[str, Any]:
    return {"loc": loc, "msg": msg, "type": "value_error"}
