"""The `ask_user` tool lets a language model ask a person typed questions.

A model calls `ask_user` with a short list of questions. It may add the facts the person decides
on (`context`). These are bound to the answer as `run.ask`'s context. `request_from_tool_call`
checks the arguments and makes them a port `Request`. `context_from_tool_call` returns the
facts. `answers_for_model` turns the answers into compact text, the model's tool result. Bad
arguments raise `ToolArgumentError` with one line per problem. The model can then correct its
call.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from workers.interaction.context import Context, canonical
from workers.interaction.exceptions import ContextError, InteractionError
from workers.interaction.lengths import utf16_len
from workers.interaction.models import ITEM_ID_PATTERN, OTHER_SUFFIX, Answer, Item, ItemType, Option, Request

TOOL_NAME = "ask_user"
MAX_QUESTIONS = 5
MIN_OPTIONS, MAX_OPTIONS = 2, 20
HEADER_MAX = 12
QUESTION_MAX = 1000
LABEL_MAX = 75
OTHER_TEXT = "Other (type your own answer)"
# A single question's id must leave room for its "__other" companion within 64 characters.
_SINGLE_ID_MAX = 64 - len(OTHER_SUFFIX)

_TYPES: dict[str, ItemType] = {
    "single": ItemType.SELECT,
    "multiple": ItemType.MULTI_SELECT,
    "free": ItemType.FREE_TEXT,
    "date": ItemType.DATE,
    "secret": ItemType.SECRET,
    "number": ItemType.NUMBER,
    "boolean": ItemType.BOOLEAN,
    "email": ItemType.EMAIL,
    "url": ItemType.URL,
    "time": ItemType.TIME,
    "datetime": ItemType.DATETIME,
}
_NUMBER_FIELDS = ("min", "max", "integer")
_TEXT_FIELDS = ("min_length", "max_length", "pattern", "pattern_hint")
SECRET_PLACEHOLDER = "(secret received; hidden from you, your tools get it from the run)"
"""What the model reads for a secret answer: never the value, which only the agent's code gets (`run.secret`)."""

_OPTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "minLength": 1, "maxLength": LABEL_MAX, "description": "What the person sees."},
        "description": {"type": "string", "maxLength": LABEL_MAX, "description": "Optional one-line explanation."},
    },
    "required": ["label"],
    "additionalProperties": False,
}

_QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {
            "type": "string",
            "pattern": ITEM_ID_PATTERN,
            "description": "Short unique key for this question, e.g. 'severity'.",
        },
        "header": {
            "type": "string",
            "minLength": 1,
            "maxLength": HEADER_MAX,
            "description": "A label of at most 12 characters, e.g. 'Severity'.",
        },
        "question": {
            "type": "string",
            "minLength": 1,
            "maxLength": QUESTION_MAX,
            "description": "The full question, phrased for a person.",
        },
        "type": {
            "type": "string",
            "enum": list(_TYPES),
            "description": "single: pick one option; multiple: pick any; free: typed text; date: YYYY-MM-DD; "
            "number: a number (see min, max, integer); boolean: yes or no; email: an email address; "
            "url: an http(s) address; time: HH:MM; datetime: a UTC date and time like 2026-12-04T17:30:00Z; "
            "secret: a value such as a one-time code or token that you never see (your tools get it).",
        },
        "min": {"type": "number", "description": "number only: the least value accepted."},
        "max": {"type": "number", "description": "number only: the greatest value accepted."},
        "integer": {"type": "boolean", "default": False, "description": "number only: whole numbers only."},
        "min_length": {"type": "integer", "minimum": 1, "maximum": 3000, "description": "free only."},
        "max_length": {"type": "integer", "minimum": 1, "maximum": 3000, "description": "free only."},
        "pattern": {
            "type": "string",
            "minLength": 1,
            "maxLength": 500,
            "description": "free only: a regular expression the whole answer must match.",
        },
        "pattern_hint": {
            "type": "string",
            "minLength": 1,
            "maxLength": 150,
            "description": "free only: what the pattern asks for, in words, e.g. 'a ticket key like ABC-123'.",
        },
        "options": {
            "type": "array",
            "minItems": MIN_OPTIONS,
            "maxItems": MAX_OPTIONS,
            "items": _OPTION_SCHEMA,
            "description": "2-20 options with distinct labels; required for single and multiple, omitted otherwise.",
        },
        "required": {"type": "boolean", "default": True, "description": "False if the person may skip it."},
    },
    "required": ["id", "header", "question", "type"],
    "additionalProperties": False,
}

ASK_USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {"type": "array", "minItems": 1, "maxItems": MAX_QUESTIONS, "items": _QUESTION_SCHEMA},
        "context": {
            "type": "object",
            "description": "The facts the person decides on, e.g. {'order': 'A-17', 'refund': '40 EUR'}; "
            "shown with the questions, at most 2,000 characters as JSON.",
        },
    },
    "required": ["questions"],
    "additionalProperties": False,
}
"""JSON Schema (draft 2020-12) of the `ask_user` arguments; `$schema` is left out because some APIs reject it."""

ASK_USER_DESCRIPTION = (
    "Ask the person you are working for one to five questions and wait for their answers. "
    "Use it only when you lack information that only a person can give (a preference, a decision, "
    "a fact not available to you), or when a request is ambiguous in a way that changes the result. "
    "Do not ask for what you can find out or reasonably assume yourself. "
    "Batch related questions into a single call rather than asking one at a time. "
    "Never ask again for something already answered earlier in the conversation. "
    "Prefer 'single' or 'multiple' questions with concrete options; a 'single' question always lets "
    "the person type their own answer instead. When the person approves or decides something, pass the "
    "facts they decide on as 'context'. The result has one line per question id, e.g. "
    "'severity: High', 'areas: [API, Web]', 'notes: \"text\"', 'due: 2026-12-01', "
    "'replicas: 3', 'approve: true', 'severity: other \"text\"' or 'notes: (skipped)'. "
    "Ask for a password, token or one-time code only with "
    "type 'secret': its answer reads 'code: (secret received; ...)' and reaches your tools, never you."
)


class ToolArgumentError(InteractionError):
    """`ask_user` arguments that cannot become a request.

    `.problems` has one line per problem.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(f"invalid {TOOL_NAME} arguments: " + "; ".join(self.problems))


def openai_tool() -> dict[str, Any]:
    """The tool definition in the OpenAI function-calling shape."""
    return {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": ASK_USER_DESCRIPTION, "parameters": ASK_USER_SCHEMA},
    }


def anthropic_tool() -> dict[str, Any]:
    """The tool definition in the Anthropic tool-use shape."""
    return {"name": TOOL_NAME, "description": ASK_USER_DESCRIPTION, "input_schema": ASK_USER_SCHEMA}


def _line(value: Any, limit: int, what: str, *, multiline: bool = False) -> str | None:
    """The problem with `value` as non-empty text of at most `limit`, or None.

    The limit counts UTF-16 code units.
    """
    if not isinstance(value, str) or not value.strip():
        return f"{what} must be non-empty text"
    if not multiline and any(ord(c) < 32 for c in value):
        return f"{what} {value!r} must be a single line"
    if (size := utf16_len(value.strip())) > limit:
        emoji = " (an emoji counts 2)" if size != len(value.strip()) else ""
        return f"{what} {value!r} is over {limit} characters{emoji}"
    return None


def _unknown(given: dict[Any, Any], known: set[str], where: str) -> list[str]:
    return [f"{where}unknown property {k!r}" for k in sorted(set(given) - known, key=str)]


def _check_options(raw: Any, kind: str, where: str) -> list[str]:
    if not isinstance(raw, list) or not MIN_OPTIONS <= len(raw) <= MAX_OPTIONS:
        got = f", got {len(raw)}" if isinstance(raw, list) else ""
        return [f"{where}: a {kind} question needs {MIN_OPTIONS}-{MAX_OPTIONS} options{got}"]
    problems: list[str] = []
    seen: set[str] = set()
    for j, opt in enumerate(raw):
        at = f"{where}: options[{j}]"
        if not isinstance(opt, dict):
            problems.append(f"{at} must be an object with a label")
            continue
        problems += _unknown(opt, {"label", "description"}, f"{at}: ")
        problem = _line(opt.get("label"), LABEL_MAX, "label")
        if problem is None and opt["label"].strip().casefold() in seen:
            problem = f"duplicate option label {opt['label'].strip()!r}"
        if problem:
            problems.append(f"{at}: {problem}")
        else:
            seen.add(opt["label"].strip().casefold())
        if opt.get("description", "") != "" and (problem := _line(opt["description"], LABEL_MAX, "description")):
            problems.append(f"{at}: {problem}")
    return problems


def _check_question(q: Any, i: int) -> list[str]:
    if not isinstance(q, dict):
        return [f"questions[{i}] must be an object"]
    qid, kind = q.get("id"), q.get("type")
    where = f"questions[{i}]" + (f" (id {qid!r})" if isinstance(qid, str) else "")
    problems = _unknown(q, set(_QUESTION_SCHEMA["properties"]), f"{where}: ")
    if not isinstance(qid, str) or not re.fullmatch(ITEM_ID_PATTERN, qid):
        problems.append(f"{where}: id must be 1-64 letters, digits, '_' or '-'")
    elif qid.endswith(OTHER_SUFFIX):
        problems.append(f"{where}: ids ending in {OTHER_SUFFIX!r} are reserved")
    elif kind == "single" and len(qid) > _SINGLE_ID_MAX:
        problems.append(f"{where}: the id of a single question is at most {_SINGLE_ID_MAX} characters")
    if problem := _line(q.get("header"), HEADER_MAX, "header"):
        problems.append(f"{where}: {problem}")
    if problem := _line(q.get("question"), QUESTION_MAX, "question", multiline=True):
        problems.append(f"{where}: {problem}")
    if not isinstance(kind, str) or kind not in _TYPES:
        problems.append(f"{where}: type {kind!r} is not one of {', '.join(_TYPES)}")
    elif kind in ("single", "multiple"):
        problems += _check_options(q.get("options"), kind, where)
    elif "options" in q:
        problems.append(f"{where}: a {kind} question takes no options")
    for fields, owner in ((_NUMBER_FIELDS, "number"), (_TEXT_FIELDS, "free")):
        misplaced = [f for f in fields if f in q]
        if misplaced and kind != owner:
            problems.append(f"{where}: {', '.join(misplaced)} only apply to {owner} questions")
    if not isinstance(q.get("required", True), bool):
        problems.append(f"{where}: required must be true or false")
    return problems


def _problems(args: Any) -> list[str]:
    """Every problem with `args` as `ask_user` arguments, empty if acceptable."""
    if not isinstance(args, dict):
        return ["arguments must be a JSON object with a 'questions' list"]
    problems = _unknown(args, {"questions", "context"}, "")
    if "context" in args:
        try:
            canonical(args["context"])
        except ContextError as exc:
            problems.append(str(exc))
    questions = args.get("questions")
    if not isinstance(questions, list):
        return [*problems, "'questions' must be a list of 1-5 questions"]
    if not 1 <= len(questions) <= MAX_QUESTIONS:
        return [*problems, f"ask 1-{MAX_QUESTIONS} questions, got {len(questions)}"]
    for i, q in enumerate(questions):
        problems += _check_question(q, i)
    ids: list[str] = [q["id"] for q in questions if isinstance(q, dict) and isinstance(q.get("id"), str)]
    problems += [f"duplicate question id {d!r}" for d in sorted({d for d in ids if ids.count(d) > 1})]
    return problems


def _items(q: dict[str, Any]) -> list[Item]:
    """The port items for one checked question.

    A single also gets an optional free-text "other" item.
    """
    kind, qid = q["type"], q["id"]
    options = [
        Option(value=o["label"].strip(), label=o["label"].strip(), description=o.get("description") or None)
        for o in q.get("options") or []
    ]
    text = f"{q['header'].strip()}: {q['question'].strip()}"
    if kind != "single":
        rules = {f: q[f] for f in (*_NUMBER_FIELDS, *_TEXT_FIELDS) if f in q}
        required = q.get("required", True)
        return [Item(id=qid, text=text, type=_TYPES[kind], options=options or None, required=required, **rules)]
    # A required choice is answered by an option or by the "other" text (`Request.typed_other`),
    # so a person whose answer is not listed can type it instead.
    return [
        Item(id=qid, text=text, type=ItemType.SELECT, options=options, required=q.get("required", True)),
        Item(id=qid + OTHER_SUFFIX, text=OTHER_TEXT, type=ItemType.FREE_TEXT, required=False),
    ]


def request_from_tool_call(arguments: dict[str, Any] | str, reason: str = "The assistant needs your input") -> Request:
    """Check `ask_user` arguments (a dict or JSON text) and build their `Request`.

    Question types map to item types:
    - single: select, plus an optional "<id>__other" free-text item that may replace the choice
    - multiple: multi_select
    - free: free_text
    - any other type: the item type of its name
    A required single thus needs one of its two items. Each option's value is its label. Bad input
    raises only `ToolArgumentError`, listing every problem.
    """
    decoded = _decoded(arguments)
    problems = _problems(decoded)
    if problems:
        raise ToolArgumentError(problems)
    try:
        items = [item for q in decoded["questions"] for item in _items(q)]
        return Request(reason=reason, items=items)
    except ValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors()]
        raise ToolArgumentError(problems) from None


def context_from_tool_call(arguments: dict[str, Any] | str) -> Context | None:
    """The facts the `ask_user` call passed as `context`, or None.

    Raises `ToolArgumentError` if they are unusable.
    """
    arguments = _decoded(arguments)
    context = arguments.get("context") if isinstance(arguments, dict) else None
    if context is None:
        return None
    try:
        canonical(context)
    except ContextError as exc:
        raise ToolArgumentError([str(exc)]) from None
    return dict(context)


def _decoded(arguments: Any) -> Any:
    """Arguments as given, or decoded when they are JSON text."""
    if not isinstance(arguments, str | bytes):
        return arguments
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        raise ToolArgumentError([f"arguments are not valid JSON: {exc}"]) from None


# Bare text may not start like a quote, "(skipped)" or a list, nor hold separators used on the line.
_PLAIN = re.compile(r"[^\s\"(\[][^\x00-\x1f,;\"\[\]]*")


def _show(value: str) -> str:
    """`value` bare when that cannot be misread, otherwise JSON-quoted."""
    return value if _PLAIN.fullmatch(value) and value == value.strip() else json.dumps(value, ensure_ascii=False)


def answers_for_model(request: Request, answers: list[Answer] | None, *, expired: bool = False) -> str:
    """The tool result the model reads: one line per question, in order.

    Examples: `sev: High`, `components: [API, Web]`, `details: "quoted text"`, `due: 2026-12-01`. A
    single's "other" answer reads `sev: other "typed text"`, after the choice if both were given. An
    unanswered question reads `id: (skipped)`. When nobody answered in time, every question reads
    `id: (expired: no answer)`. A secret answer reads `SECRET_PLACEHOLDER`. Its value never reaches
    the text the model reads.
    """
    values = {a.id: a.value for a in answers or []}
    folded = {
        i.id + OTHER_SUFFIX
        for i in request.items
        if i.type is ItemType.SELECT
        and (other := request.item(i.id + OTHER_SUFFIX)) is not None
        and other.type is ItemType.FREE_TEXT
    }
    lines: list[str] = []
    for item in request.items:
        if item.id in folded:
            continue
        if expired:
            lines.append(f"{item.id}: (expired: no answer)")
            continue
        value = values.get(item.id)
        if item.is_secret:
            lines.append(f"{item.id}: {SECRET_PLACEHOLDER if isinstance(value, str) and value else '(skipped)'}")
            continue
        other_value = values.get(item.id + OTHER_SUFFIX) if item.id + OTHER_SUFFIX in folded else None
        parts: list[str] = []
        if isinstance(value, bool | int | float):
            parts.append(json.dumps(value))  # true / false, 3, 0.5
        elif isinstance(value, list) and value:
            parts.append("[" + ", ".join(_show(v) for v in value) + "]")
        elif isinstance(value, str) and value.strip():
            parts.append(json.dumps(value, ensure_ascii=False) if item.type is ItemType.FREE_TEXT else _show(value))
        if isinstance(other_value, str) and other_value.strip():
            parts.append("other " + json.dumps(other_value, ensure_ascii=False))
        lines.append(f"{item.id}: {'; '.join(parts) or '(skipped)'}")
    return "\n".join(lines)
