"""The playground's scripted model: chat completions for trying the model agents offline.

`parley dev` points `PARLEY_LLM_*` here when no model is configured. It makes the decisions a
model would for the shipped agents. It decides from the request and the tools' results, and the
agents' real tools run. `pai_invoice` calls `send_invoice` with what the text names.
`oa_cleanup` lists the folder and deletes the files the request covers. It also reads thread
replies (`PARLEY_LLM_ANSWERS`) by their words, for the person to confirm. Every reply it ends
says it came from this script. So nobody takes it for a model's answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SCRIPTED_PATH = "/scripted-model/v1"
"""Where the playground serves it: `PARLEY_LLM_BASE_URL` is the playground's URL and this."""
LABEL = "(scripted model: no PARLEY_LLM_* configured)"
_INVOICE = re.compile(
    r"^(?:invoice\s+)?(?P<customer>.+?)\s+(?P<amount>\d+(?:\.\d+)?)\s*(?P<currency>[A-Za-z]{3})?\b"
    r"(?:\s+for\s+(?P<description>.+))?$",
    re.IGNORECASE | re.DOTALL,
)
_TEMPORARY = re.compile(r"(?i)(\.(tmp|temp|bak|swp)$|~$|(^|[/._-])(tmp|temp)([/._-]|$))")
Message = dict[str, Any]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def final(text: str) -> Message:
    return {"role": "assistant", "content": f"{text} {LABEL}"}


def calls(turn: int, *named: tuple[str, dict[str, Any]]) -> Message:
    tool_calls = [
        {"id": f"call_{turn}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(named)
    ]
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def invoice(request: str, called: list[str], results: list[str], turn: int) -> Message:
    """Call `send_invoice` with what the request names, then report the tool's answer."""
    if "send_invoice" in called:
        return final(results[-1] if results else "The invoice was not sent.")
    found = _INVOICE.match(request.strip())
    if not found:
        return final("Say who pays, how much and in what currency: `Invoice ACME Corp 1200 EUR for March consulting`.")
    args = {
        "customer": found["customer"].strip(),
        "amount": float(found["amount"]),
        "currency": (found["currency"] or "EUR").upper(),
        "description": (found["description"] or request).strip(),
    }
    return calls(turn, ("send_invoice", args))


def covered(request: str, path: str) -> bool:
    """Whether the request covers a file: it names it, says "all", or asks for temporary files."""
    asked = request.lower()
    for name in {path.lower(), path.rsplit("/", 1)[-1].lower()}:
        if re.search(rf"(?<![\w./-]){re.escape(name)}(?!\.?[\w-])", asked):
            return True
    if re.search(r"\b(all|every|everything)\b", asked):
        return True
    return bool(re.search(r"\b(temp|temporary|tmp)\b", asked)) and bool(_TEMPORARY.search(path))


def cleanup(request: str, called: list[str], results: list[str], turn: int) -> Message:
    """List the folder, delete what the request covers, then say what happened."""
    if "delete_file" in called:
        return final("; ".join(results[1:]) + ".")
    if "list_files" not in called:
        return calls(turn, ("list_files", {}))
    try:
        files = [f["path"] for f in json.loads(results[-1])]
    except (ValueError, TypeError, KeyError, IndexError):
        files = []
    doomed = [p for p in files if covered(request, p)]
    if not doomed:
        kept = ", ".join(files) or "nothing"
        return final(f"No file in the folder matches the request, so nothing was deleted (it holds {kept}).")
    return calls(turn, *(("delete_file", {"path": p}) for p in doomed))


UNSCRIPTED = (
    "the playground's scripted model drives only pai_invoice and oa_cleanup, and reads replies; "
    "set PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL to a real model for the others"
)


def reading(document: str) -> Message:
    """A reply read as a model would, by words: named options, numbers, yes and no.

    It is deliberately literal, so the playground shows the Confirm step. What it reads is always
    shown for the person to confirm. An approval's safety check still applies to it.
    """
    try:
        data = json.loads(document)
        items, reply = data["question"]["items"], str(data["reply"]).lower()
    except (ValueError, KeyError, TypeError):
        return {"role": "assistant", "content": json.dumps({"unreadable": "the scripted model could not parse it"})}
    words = set(re.findall(r"[\w']+", reply))
    answers: dict[str, Any] = {}
    for item in items:
        options = item.get("options") or []
        named = [o["value"] for o in options if {o["value"].lower(), o["label"].lower()} & words]
        if len(named) == 1:
            answers[item["id"]] = named[0]
        elif item.get("type") == "number" and (n := re.search(r"-?\d+(?:\.\d+)?", reply)):
            answers[item["id"]] = float(n.group()) if "." in n.group() else int(n.group())
        elif item.get("type") == "boolean" and words & {"yes", "no"}:
            answers[item["id"]] = "yes" in words
    said = {"answers": answers} if answers else {"unreadable": "the scripted model found no option, number or yes/no"}
    return {"role": "assistant", "content": json.dumps(said)}


def decide(body: dict[str, Any]) -> Message | None:
    """The next assistant message for one chat-completions request.

    None for an agent it has no script for.
    """
    tools = {t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    request = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    asked = [m for m in messages if m.get("role") == "assistant"]
    called = [c["function"]["name"] for m in asked for c in m.get("tool_calls") or []]
    results = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    turn = len(asked)
    system = next((_text(m.get("content")) for m in messages if m.get("role") == "system"), "")
    if system.startswith("You read a person's reply"):  # PARLEY_LLM_ANSWERS: read a thread reply
        return reading(request)
    if "send_invoice" in tools:
        return invoice(request, called, results, turn)
    if {"list_files", "delete_file"} <= tools:
        return cleanup(request, called, results, turn)
    return None


async def completions(request: Request) -> JSONResponse:
    """`POST …/chat/completions` in the OpenAI wire format."""
    try:
        body = await request.json()
    except ValueError:
        return JSONResponse({"error": {"message": "the body is not JSON"}}, status_code=400)
    if not isinstance(body, dict):
        return JSONResponse({"error": {"message": "the body is not a JSON object"}}, status_code=400)
    message = decide(body)
    if message is None:  # refused: the run fails saying so, rather than passing off a canned reply
        return JSONResponse({"error": {"message": UNSCRIPTED}}, status_code=400)
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return JSONResponse(
        {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": 0,
            "model": str(body.get("model", "")),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )


def scripted_model_routes() -> list[Route]:
    return [Route(f"{SCRIPTED_PATH}/chat/completions", completions, methods=["POST"])]
