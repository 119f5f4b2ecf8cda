"""LangGraph interrupts as Parley questions, and their answers as LangGraph's resume values.

Each interrupt's value is read by its shape (`plan`):

- A Parley `Request`, or a dict that validates as one. It is asked as is, and resumed with its
  answers by item id. One with a secret item is refused (`SECRET_REFUSED`): LangGraph keeps a
  resume value in its checkpointer, in clear.
- LangChain v1's `HumanInTheLoopMiddleware` request: `HITLRequest`, with `action_requests` and
  `review_configs`. It lives in `langchain.agents.middleware.human_in_the_loop`. Each action is
  one approval. It resumes with `{"decisions": [...]}` in the actions' order. Approve is
  `approve`. Approve after Edit… is `edit`, with the edited args as `edited_action`. Reject is
  `reject`, with its reason as the message. Args too long to bind whole are shown in part,
  never editable, and `edited_action` holds them whole. An action allowing only `respond` is a
  free-text question, answered by the `respond` message. A Reject's reason is one too, where
  `respond` is allowed and `reject` is not.
- Its per-call form: `ToolApprovalRequest`, with `type` "tool_approval" and one tool call. The
  interrupt's `response_schema` lists the decisions allowed. It is asked the same way and
  resumed with the one decision.
- Anything else, like LangGraph's own approve-or-reject pattern. It is shown with Approve and
  Reject, and resumed with `True` or `False`. The value may ask a question: a string, or a dict
  with a text `question`, `instruction`, `task`, `prompt` or `message`. Then a reply may be
  typed beside the choice. Approve with a reply resumes with the reply. Reject is always
  `False`. The click decides, never a text's truth: a typed "no" cannot approve.

A pause is planned when the graph stops. It is recorded as JSON with the run's step. So a replay
asks exactly what was asked, without running the graph again.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from workers.agent_run import Answers
from workers.exceptions import AgentError
from workers.interaction import Context, Decision, Item, ItemType, Option, Request
from workers.interaction.approval import approval_request, approved_args
from workers.interaction.lengths import LABEL_MAX, REASON_MAX, utf16_prefix

DECISIONS = ("approve", "edit", "reject", "respond")
ANSWER_ID = "answer"
"""The item of a free-text question: what the graph resumes with, or the `respond` message."""
CHOICE_ID, REPLY_ID = "decision", "reply"
"""A choice's required Approve / Reject select, and the reply sent with Approve."""
ASKING_KEYS = ("question", "instruction", "task", "prompt", "message")
"""A dict's text fields that ask a question, the first one found heading what is shown."""
_NO = "no n nope nah not never false reject rejected deny denied decline declined cancel stop abort refuse don't dont"
NO_WORDS = frozenset([*_NO.split(), "wait", "hold"])
"""An earlier version's free-text answer opening with one of these is a no."""
_YES = "yes y yep yeah true approve approved ok okay proceed"
YES_WORDS = frozenset(_YES.split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
SECRET_REFUSED = (
    "interrupt {id!r} has a secret item: LangGraph keeps what a graph resumes with in its checkpointer, "
    "in clear; ask secrets with run.ask before run_graph, and read them in a node with run.secret"
)


class GraphError(AgentError):
    """A graph run that cannot go on.

    An interrupt asks a secret, or was answered with a decision its action does not allow.
    """


class Action(BaseModel):
    """One HITL request action, with the decisions its review config allows."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any]
    description: str = ""
    allowed: list[str]  # among DECISIONS

    @property
    def respond_only(self) -> bool:
        return not {"approve", "edit", "reject"} & set(self.allowed)


class Pause(BaseModel):
    """One interrupt as planned: its id, shape and questions.

    It is JSON, recorded in a step.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Literal["request", "hitl", "tool_approval", "choice", "text"]  # "text": recorded by earlier versions
    request: dict[str, Any] | None = None
    actions: list[Action] = []
    shown: str = ""
    reply: bool = False
    """A choice that may be answered with a typed reply instead."""


class Question(BaseModel):
    """One Parley question of a pause: request, bound facts, and whether an approval."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    key: str
    request: Request
    context: Context | None = None
    action: Action | None = None


def plan(interrupt_id: str, value: Any, response_schema: Any = None) -> Pause:
    """The pause for an interrupt's `value`, by its shape.

    It is answered as `response_schema` says, if given.
    """
    if isinstance(value, Request):
        return _request(interrupt_id, value)
    if isinstance(value, dict):
        if "action_requests" in value and "review_configs" in value:
            actions = _hitl_actions(value)
            if actions is not None:
                return Pause(id=interrupt_id, kind="hitl", actions=actions)
        elif value.get("type") == "tool_approval":
            action = _tool_approval(value, response_schema)
            if action is not None:
                return Pause(id=interrupt_id, kind="tool_approval", actions=[action])
        else:
            try:
                request = Request.model_validate(value)
            except ValidationError:
                pass
            else:
                return _request(interrupt_id, request)
    return _choice(interrupt_id, value)


def _request(interrupt_id: str, request: Request) -> Pause:
    """A request asked as is, unless it has a secret item."""
    _no_secret(interrupt_id, request)
    return Pause(id=interrupt_id, kind="request", request=request.model_dump(mode="json"))


def _no_secret(interrupt_id: str, request: Request) -> None:
    if request.has_secret:
        raise GraphError(SECRET_REFUSED.format(id=interrupt_id))


def _choice(interrupt_id: str, value: Any) -> Pause:
    """Approve or Reject for a value of unknown shape.

    A reply too, where it asks a question.
    """
    if isinstance(value, str):
        return Pause(id=interrupt_id, kind="choice", shown=value, reply=True)
    if isinstance(value, dict):
        key = next((k for k in ASKING_KEYS if isinstance(value.get(k), str) and value[k].strip()), None)
        if key is not None:
            rest = {k: v for k, v in value.items() if k != key}
            shown = f"{value[key]}\n{_shown(rest)}" if rest else value[key]
            return Pause(id=interrupt_id, kind="choice", shown=shown, reply=True)
    return Pause(id=interrupt_id, kind="choice", shown=f"The graph asks you to approve or reject:\n{_shown(value)}")


def _hitl_actions(value: dict[str, Any]) -> list[Action] | None:
    """A HITL request's actions with their review configs' decisions.

    None for another shape.
    """
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not isinstance(requests, list) or not isinstance(configs, list) or not requests:
        return None
    by_name = {c.get("action_name"): c for c in configs if isinstance(c, dict)}
    actions = []
    for n, req in enumerate(requests):
        if not isinstance(req, dict):
            return None
        config = configs[n] if len(configs) == len(requests) and isinstance(configs[n], dict) else None
        if config is None or config.get("action_name") != req.get("name"):
            config = by_name.get(req.get("name"))
        allowed = [d for d in (config or {}).get("allowed_decisions", []) if d in DECISIONS]
        try:
            actions.append(
                Action(name=req["name"], args=req["args"], description=req.get("description") or "", allowed=allowed)
            )
        except (KeyError, ValidationError):
            return None
        if not allowed:
            return None
    return actions


def _tool_approval(value: dict[str, Any], schema: Any) -> Action | None:
    """The one action of a per-call review.

    Its decisions are the `type`s its response schema takes.
    """
    allowed: list[str] = ["approve", "edit", "reject", "respond"]
    if isinstance(schema, dict):
        mapping = (schema.get("discriminator") or {}).get("mapping")
        const = ((schema.get("properties") or {}).get("type") or {}).get("const")
        allowed = list(mapping) if isinstance(mapping, dict) else [const] if isinstance(const, str) else allowed
    try:
        return Action(
            name=value["name"],
            args=value["args"],
            description=value.get("description") or "",
            allowed=[d for d in allowed if d in DECISIONS],
        )
    except (KeyError, ValidationError):
        return None


def _shown(value: Any) -> str:
    try:
        return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def questions(pause: Pause, key: str) -> list[Question]:
    """The questions to ask for `pause`, keyed from `key`.

    There is one, or one per HITL action.
    """
    if pause.kind == "request":
        request = Request.model_validate(pause.request)
        _no_secret(pause.id, request)  # as an earlier version recorded it: its answer is not sent to the graph
        return [Question(key=key, request=request)]
    if pause.kind == "choice":
        return [Question(key=key, request=_choice_request(pause))]
    if pause.kind == "text":
        reason = utf16_prefix(f"The graph is waiting for you:\n{pause.shown}", REASON_MAX)
        return [Question(key=key, request=_free_text(reason, "Your answer"))]
    return [_action_question(action, f"{key}.{n}") for n, action in enumerate(pause.actions)]


def _choice_request(pause: Pause) -> Request:
    """A required Approve / Reject, with an optional reply Approve sends."""
    options = [Option(value="approve", label="Approve"), Option(value="reject", label="Reject")]
    items = [Item(id=CHOICE_ID, text="Your decision", type=ItemType.SELECT, options=options)]
    if pause.reply:
        label = "Reply (sent with Approve)"
        items.append(Item(id=REPLY_ID, text=label, type=ItemType.FREE_TEXT, required=False, multiline=True))
    return Request(reason=utf16_prefix(pause.shown, REASON_MAX), items=items)


def _free_text(reason: str, label: str) -> Request:
    return Request(reason=reason, items=[Item(id=ANSWER_ID, text=label, type=ItemType.FREE_TEXT, multiline=True)])


def _action_question(action: Action, key: str) -> Question:
    reason = utf16_prefix(action.description or action.name, REASON_MAX)
    if action.respond_only:
        label = utf16_prefix(f"Your answer, in place of {action.name}", LABEL_MAX)
        return Question(key=key, request=_free_text(reason, label), action=action)
    editable = "edit" in action.allowed
    request = approval_request(action.name, action.args, editable=editable, reason=reason, in_part=True)
    assert request.approval is not None
    return Question(key=key, request=request, context=request.approval.args, action=action)


def resume_value(pause: Pause, asked: list[Question], answers: dict[str, Answers | Decision]) -> Any:
    """What the interrupt resumes with, from the answers to its questions `asked`."""
    if pause.kind == "request":
        return answers[asked[0].key]
    if pause.kind in ("choice", "text"):
        got = answers[asked[0].key]
        return choice_value(got) if isinstance(got, dict) else None
    decisions = [hitl_decision(q, answers[q.key]) for q in asked]
    return decisions[0] if pause.kind == "tool_approval" else {"decisions": decisions}


def choice_value(answers: Answers) -> Any:
    """A choice's resume value: Reject `False`; Approve the typed reply, or `True`."""
    chosen = answers.get(CHOICE_ID)
    if chosen is None:  # a free-text answer to a pause recorded by an earlier version
        return reply_value(answers.get(ANSWER_ID))
    if chosen != "approve":
        return False
    reply = answers.get(REPLY_ID)
    return reply if isinstance(reply, str) and reply.strip() else True


def reply_value(reply: Any) -> Any:
    """An earlier version's free-text answer as a resume value.

    A no is `False`, a lone yes `True`, else the text.
    """
    if not isinstance(reply, str) or not reply.strip():
        return False
    words = _WORD.findall(reply.replace("\u2019", "'").casefold())
    if words[:1] and (words[0] in NO_WORDS or words[:2] == ["do", "not"]):
        return False
    lone = _WORD.fullmatch(reply.strip().strip(".!").casefold())
    return True if lone is not None and lone.group() in YES_WORDS else reply


def hitl_decision(question: Question, answer: Answers | Decision) -> dict[str, Any]:
    """The HITL middleware's decision for one action, from its question's answer."""
    action = question.action
    assert action is not None
    if isinstance(answer, dict):  # a respond-only action's free-text answer
        return {"type": "respond", "message": str(answer.get(ANSWER_ID) or "")}
    if answer.approved:
        if answer.edited or "approve" not in action.allowed:
            return {"type": "edit", "edited_action": {"name": action.name, "args": approved_args(answer, action.args)}}
        return {"type": "approve"}
    if "reject" in action.allowed:
        return {"type": "reject", **({"message": answer.reason} if answer.reason else {})}
    if "respond" in action.allowed and answer.reason:
        return {"type": "respond", "message": answer.reason}
    raise GraphError(
        f"{action.name} was rejected, but its review allows only {', '.join(action.allowed)}"
        + (" (a rejection's reason would be its answer)" if "respond" in action.allowed else "")
    )
