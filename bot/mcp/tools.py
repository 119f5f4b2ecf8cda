"""The MCP tools' schemas, their arguments checked into a `QuestionCreate`, and their results.

`ask_human` takes exactly the `ask_user` tool's arguments (`workers.interaction.tools`). So a
model that knows one knows the other. It adds a few more:
- where to ask: `channel` or `user`
- who may answer: `assignees`
- the question's `title`, by default "<origin> needs your input", the origin being the token's
  or local server's name
- how long to wait in the call: `wait_seconds`, at most 50, below a host's own request timeout
  (commonly 60 s)
Every problem with the arguments is collected into one `ToolInputError`, one line each. Then
nothing is asked. A secret item is one such problem. A tool's result is read by the model. So
secrets go through the HTTP API, whose asker reads them once (`?reveal=secrets`).

Instead of `questions`, `ask_human` may take `requested_schema`. That is a form in MCP
elicitation's schema subset (`workers.interaction.elicitation`). `message` says what is asked.
Its result then also carries MCP's `ElicitResult`. That is `action`: `accept`, `decline` or
`cancel` (see `bot.mcp.elicitation`). When accepted, it has `content`, typed as the schema says.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import ValidationError

from bot.mcp.elicitation import ELICITATION, elicit_result
from workers.exceptions import ParleyError
from workers.interaction import Decision, Request
from workers.interaction.elicitation import ElicitationSchemaError, content_shape, items_from_requested_schema
from workers.interaction.tools import (
    ASK_USER_DESCRIPTION,
    ASK_USER_SCHEMA,
    ToolArgumentError,
    context_from_tool_call,
    request_from_tool_call,
)
from workers.questions.models import (
    CHANNEL_PATTERN,
    USER_PATTERN,
    ApprovalCreate,
    QuestionCreate,
    QuestionStatus,
    QuestionView,
)

ASK_HUMAN = "ask_human"
GET_ANSWER = "get_answer"
REQUEST_APPROVAL = "request_approval"
MAX_WAIT = 50
DEFAULT_WAIT = 45
MAX_ASSIGNEES = 20  # fewer than the API's 50: each is sent a DM, and a model should not fan out wider
REASON = "An assistant needs your input"
_OWN = ("channel", "user", "assignees", "title", "wait_seconds", "requested_schema", "message")
SECRET_REFUSED = (
    "question {id!r}: type 'secret' cannot be asked over MCP, whose results and form elicitation must not "
    "carry secrets; "
    "ask it with POST /api/v1/questions and read it once with GET /api/v1/questions/{{id}}?reveal=secrets"
)

_WAIT_SCHEMA: dict[str, Any] = {
    "type": "integer",
    "minimum": 0,
    "maximum": MAX_WAIT,
    "default": DEFAULT_WAIT,
    "description": f"Seconds to wait for the answers in this call (0-{MAX_WAIT}, default {DEFAULT_WAIT}).",
}


def _ask_human_schema() -> dict[str, Any]:
    schema = copy.deepcopy(ASK_USER_SCHEMA)
    schema["properties"].update(
        {
            "channel": {
                "type": "string",
                "pattern": CHANNEL_PATTERN,
                "description": "The Slack channel to ask in: its id (C…) or #name; give this or user.",
            },
            "user": {
                "type": "string",
                "pattern": USER_PATTERN,
                "description": "The Slack user id to ask in a direct message (U…); give this or channel.",
            },
            "assignees": {
                "type": "array",
                "items": {"type": "string", "pattern": USER_PATTERN},
                "maxItems": MAX_ASSIGNEES,
                "description": "Slack user ids who may answer; none: anyone in the channel (or the DM's person).",
            },
            "title": {
                "type": "string",
                "minLength": 1,
                "description": "The question's title, shown above the questions; default: '<origin> needs your input'.",
            },
            "wait_seconds": _WAIT_SCHEMA,
            "requested_schema": {
                "type": "object",
                "description": "Instead of questions: a form as MCP elicitation's requestedSchema (a flat object of "
                "string (format email, uri, date, date-time; minLength, maxLength, pattern), number, integer "
                "(minimum, maximum), boolean, enum or titled oneOf, array of enum or titled anyOf; defaults; "
                "required). The result then has action (accept, decline, cancel) and content.",
            },
            "message": {
                "type": "string",
                "minLength": 1,
                "description": "With requested_schema: what is asked, shown above the form; default: the title.",
            },
        }
    )
    schema["required"] = []  # `questions` or `requested_schema`: the parser says which is missing
    return schema


ASK_HUMAN_SCHEMA = _ask_human_schema()
GET_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question_id": {"type": "string", "minLength": 1, "description": "The question_id ask_human returned."},
        "wait_seconds": _WAIT_SCHEMA,
    },
    "required": ["question_id"],
    "additionalProperties": False,
}

REQUEST_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "minLength": 1, "description": "What is to be done, as people read it."},
        "args": {"type": "object", "description": "The arguments proposed for it; the approver may edit them."},
        "schema": {"type": "object", "description": "JSON Schema of the args: their types and bounds in the form."},
        "channel": {"type": "string", "pattern": CHANNEL_PATTERN, "description": "The Slack channel id to ask in."},
        "assignees": {
            "type": "array",
            "items": {"type": "string", "pattern": USER_PATTERN},
            "maxItems": MAX_ASSIGNEES,
            "description": "Slack user ids who may decide; none: anyone in the channel.",
        },
        "wait_seconds": _WAIT_SCHEMA,
    },
    "required": ["action", "args", "channel"],
    "additionalProperties": False,
}
REQUEST_APPROVAL_DESCRIPTION = (
    "Ask a person in Slack to approve an action with its arguments before you take it. They approve, edit the "
    "arguments first, or reject with an optional reason. The result's `decision` has `approved`, `args` (as "
    "approved: act on these, not on what you proposed), `edited`, `changes` and `reason`; if nobody has decided "
    'within `wait_seconds` it returns {"status": "waiting", "question_id": ...}: call get_answer to keep waiting.'
)

ASK_HUMAN_DESCRIPTION = (
    ASK_USER_DESCRIPTION.split(" The result has")[0]
    + " The questions are asked in Slack, in `channel` or in a direct message to `user`. "
    f"The call waits up to `wait_seconds` (default {DEFAULT_WAIT}) and returns "
    '{"status": "answered", "answers": {question id: value}, ...}; if nobody has answered by then it returns '
    '{"status": "waiting", "question_id": ...}: call get_answer with that id to keep waiting.'
)
GET_ANSWER_DESCRIPTION = (
    "Wait up to `wait_seconds` for the answers to a question ask_human asked. Returns the same result as "
    'ask_human: the answers once given, "expired" or "cancelled" when it closed without them, '
    'or {"status": "waiting", "question_id": ...} again.'
)

ELICITATION_ACTIONS = ("accept", "decline", "cancel")


def _decision_schema() -> dict[str, Any]:
    """`Decision`'s schema, each change a 3-item array without `prefixItems`.

    So every draft reads it. ajv's default draft (7) in strict mode refuses `prefixItems`, a 2020-12
    keyword.
    """
    schema = Decision.model_json_schema(mode="serialization")
    change = schema["properties"]["changes"]["items"]
    change.pop("prefixItems", None)
    change["description"] = "[argument name, proposed value, approved value]"
    return schema


RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A question's outcome: `waiting` with its question_id, or how it closed and its answers.",
    "properties": {
        "status": {"type": "string", "enum": [s.value for s in QuestionStatus]},
        "question_id": {"type": "string", "minLength": 1},
        "answers": {
            "type": ["object", "null"],
            "description": "The answers by question id; null when it closed without them.",
        },
        "answered_by": {"type": "string"},
        "answered_at": {"type": "string", "format": "date-time"},
        "cancelled_by": {"type": "string"},
        "error": {"type": "string", "description": "Why a `failed` question could not be asked."},
        "decision": {**_decision_schema(), "description": "An approval's decision."},
        "action": {
            "type": "string",
            "enum": list(ELICITATION_ACTIONS),
            "description": "For a question asked with `requested_schema`: MCP elicitation's outcome.",
        },
        "content": {
            "type": ["object", "null"],
            "description": "For a question asked with `requested_schema` and accepted: its values.",
        },
        "receipt": {
            "type": "object",
            "description": "The closed question's signed receipt, once written (docs/receipts.md).",
        },
    },
    "required": ["status", "question_id"],
    "additionalProperties": False,
}
"""`structuredContent` of ask_human, get_answer and request_approval: what `tool_result` returns."""


class ToolInputError(ParleyError, ValueError):
    """Tool arguments that cannot be used.

    `.problems` has one line per problem.
    """

    def __init__(self, tool: str, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(f"invalid {tool} arguments: " + "; ".join(self.problems))


def _wait(args: dict[str, Any], problems: list[str]) -> float:
    value = args.get("wait_seconds", DEFAULT_WAIT)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_WAIT:
        problems.append(f"wait_seconds must be a number of seconds from 0 to {MAX_WAIT}, not {value!r}")
        return 0.0
    return float(value)


def _loc(error: Any) -> str:
    return ".".join(map(str, error["loc"])) or "arguments"


def _title(args: dict[str, Any], origin: str, problems: list[str]) -> str:
    """The question's title: `title` if given, else "<origin> needs your input".

    Without an origin it is `REASON`.
    """
    if "title" not in args:
        return f"{origin} needs your input" if origin.strip() else REASON
    title = args["title"]
    if not isinstance(title, str) or not title.strip():
        problems.append(f"title must be a non-empty string, not {title!r}")
        return REASON
    return title.strip()


def parse_ask_human(args: Any, origin: str = "") -> tuple[QuestionCreate, float]:
    """The question `ask_human`'s arguments describe, and the seconds to wait.

    Otherwise `ToolInputError`. `origin` is the asker's name, the token's or the local server's. It
    is the default title's subject.
    """
    if not isinstance(args, dict):
        raise ToolInputError(ASK_HUMAN, ["arguments must be a JSON object with a 'questions' list"])
    problems: list[str] = []
    wait = _wait(args, problems)
    title = _title(args, origin, problems)
    rest = {k: v for k, v in args.items() if k not in _OWN}
    request: Request | None = None
    context = None
    metadata: dict[str, Any] = {}
    try:
        if "requested_schema" in args:
            request, metadata = _elicitation(args, title, problems)
        else:
            if "message" in args:
                problems.append("message goes with requested_schema; questions carry their own text")
            request = request_from_tool_call(rest, reason=title)
        context = context_from_tool_call(rest)
    except ToolArgumentError as exc:
        problems += exc.problems
    assignees = args.get("assignees", [])
    if not isinstance(assignees, list) or not all(isinstance(a, str) for a in assignees):
        problems.append("assignees must be a list of Slack user ids")
        assignees = []
    if len(assignees) > MAX_ASSIGNEES:
        problems.append(f"assignees: at most {MAX_ASSIGNEES} Slack user ids, not {len(assignees)}")
    problems += [f"assignees: {a!r} is not a Slack user id (U…)" for a in assignees if not re.match(USER_PATTERN, a)]
    if request is not None:
        problems += [SECRET_REFUSED.format(id=i.id) for i in request.items if i.is_secret]
    if problems or request is None:
        raise ToolInputError(ASK_HUMAN, problems)
    try:
        request = Request.model_validate({**request.model_dump(), "assignees": assignees})
        body = QuestionCreate(
            request=request, channel=args.get("channel"), user=args.get("user"), context=context, metadata=metadata
        )
    except ValidationError as exc:
        raise ToolInputError(ASK_HUMAN, [f"{_loc(e)}: {e['msg']}" for e in exc.errors()]) from None
    return body, wait


def _elicitation(args: dict[str, Any], title: str, problems: list[str]) -> tuple[Request | None, dict[str, Any]]:
    """The request a `requested_schema` asks, and metadata typing its answers.

    `message` is its reason.
    """
    if "questions" in args:
        problems.append("give questions or requested_schema, not both")
    unknown = sorted(set(args) - set(ASK_HUMAN_SCHEMA["properties"]))
    problems += [f"unknown property {k!r}" for k in unknown]
    message = args.get("message", title)
    if not isinstance(message, str) or not message.strip():
        problems.append(f"message must be non-empty text, not {message!r}")
        message = title
    schema = args["requested_schema"]
    try:
        items = items_from_requested_schema(schema)
    except ElicitationSchemaError as exc:
        problems += [f"requested_schema: {p}" for p in exc.problems]
        return None, {}
    try:
        return Request(reason=message.strip(), items=items), {ELICITATION: content_shape(schema)}
    except ValidationError as exc:
        where = {"reason": "message"}  # the request's reason is the message; its items are the schema's
        problems += [f"{where.get(_loc(e), 'requested_schema: ' + _loc(e))}: {e['msg']}" for e in exc.errors()]
        return None, {}


def parse_request_approval(args: Any) -> tuple[QuestionCreate, float]:
    """The approval `request_approval`'s arguments describe, and the seconds to wait.

    Otherwise `ToolInputError`.
    """
    if not isinstance(args, dict):
        raise ToolInputError(REQUEST_APPROVAL, ["arguments must be a JSON object with 'action', 'args' and 'channel'"])
    problems = [f"unknown property {k!r}" for k in sorted(set(args) - set(REQUEST_APPROVAL_SCHEMA["properties"]))]
    wait = _wait(args, problems)
    if len(args.get("assignees") or []) > MAX_ASSIGNEES:
        problems.append(f"assignees: at most {MAX_ASSIGNEES} Slack user ids")
    if problems:
        raise ToolInputError(REQUEST_APPROVAL, problems)
    try:
        body = ApprovalCreate.model_validate({k: v for k, v in args.items() if k != "wait_seconds"}).question()
    except ValidationError as exc:
        raise ToolInputError(REQUEST_APPROVAL, [f"{_loc(e)}: {e['msg']}" for e in exc.errors()]) from None
    except ValueError as exc:
        raise ToolInputError(REQUEST_APPROVAL, [str(exc)]) from None
    return body, wait


def parse_get_answer(args: Any) -> tuple[str, float]:
    """`get_answer`'s question id and seconds to wait, else `ToolInputError`."""
    if not isinstance(args, dict):
        raise ToolInputError(GET_ANSWER, ["arguments must be a JSON object with a 'question_id'"])
    problems = [f"unknown property {k!r}" for k in sorted(set(args) - {"question_id", "wait_seconds"})]
    wait = _wait(args, problems)
    qid = args.get("question_id")
    if not isinstance(qid, str) or not qid.strip():
        problems.append("question_id must be the question_id ask_human returned")
    if problems:
        raise ToolInputError(GET_ANSWER, problems)
    return str(qid).strip(), wait


def tool_result(view: QuestionView) -> dict[str, Any]:
    """What both tools return: `{"status": "waiting", "question_id"}`, or the closed question's outcome."""
    if view.status is QuestionStatus.WAITING:
        return {"status": "waiting", "question_id": view.id}
    result: dict[str, Any] = {"status": view.status.value, "question_id": view.id, "answers": view.answers}
    if view.answered_by:
        result["answered_by"] = view.answered_by
    if view.answered_at:
        result["answered_at"] = view.answered_at.isoformat()
    if view.cancelled_by:
        result["cancelled_by"] = view.cancelled_by
    if view.error:
        result["error"] = view.error
    if view.decision is not None:
        result["decision"] = view.decision.model_dump(mode="json")
    if view.receipt is not None:
        result["receipt"] = view.receipt
    shape = view.metadata.get(ELICITATION)
    if isinstance(shape, dict) and (elicited := elicit_result(view, shape)) is not None:
        result.update(elicited)  # MCP's ElicitResult: action, and content when accepted
    return result
