"""Reading the blocks Parley posted and answering them the way a person fills a form.

Answers are built from the blocks the bot actually posted: an element is found by its
`action_id`, a click becomes the `actions[0]` entry Slack sends, and a form's `state.values`
is filled by the labels a person sees (`form_state`), with untouched inputs reported as
Slack reports them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import redis
from slack_payloads import action_ts

from workers.store.records import InterruptState
from workers.store.runs import RunStore


def posted_blocks(posts: Iterable[dict[str, Any]], question_id: str) -> list[dict[str, Any]]:
    """The blocks of the `chat.postMessage` among `posts` that posted question `question_id`."""
    for call in posts:
        found = call["args"].get("blocks") or []
        found = json.loads(found) if isinstance(found, str) else found
        if any(question_id in str(b.get("block_id", "")) for b in found):
            return list(found)
    raise AssertionError(f"question {question_id} was never posted")


# ---- finding an element and clicking it --------------------------------------------------
def find_element(blocks: list[dict[str, Any]], action_id: str | Callable[[str], bool]) -> tuple[dict, dict]:
    """The (block, element) of the first interactive element whose action_id matches."""
    match = action_id if callable(action_id) else (lambda a: a == action_id)
    for block in blocks:
        elements = list(block.get("elements") or [])
        for key in ("element", "accessory"):
            if isinstance(block.get(key), dict):
                elements.append(block[key])
        for element in elements:
            if isinstance(element, dict) and match(str(element.get("action_id", ""))):
                return block, element
    raise LookupError(f"no element with action_id {action_id!r} in {len(blocks)} blocks")


def home_row_button(home: dict[str, Any], run_id: str, action_id: str) -> tuple[dict, dict]:
    """The (block, button) of `action_id` in the App Home tab's row for run `run_id` (block id `hra|<run id>`)."""
    row = next(b for b in home["blocks"] if b.get("block_id") == f"hra|{run_id}")
    return find_element([row], action_id)


def button_action(block: dict[str, Any], element: dict[str, Any]) -> dict[str, Any]:
    """The `actions[0]` entry Slack sends for a click on a button."""
    action = {
        "type": "button",
        "action_id": element["action_id"],
        "block_id": block["block_id"],
        "text": element["text"],
        "action_ts": action_ts(),
    }
    if "value" in element:
        action["value"] = element["value"]
    if "style" in element:
        action["style"] = element["style"]
    return action


def users_select_action(block: dict[str, Any], element: dict[str, Any], selected_user: str) -> dict[str, Any]:
    """The `actions[0]` entry Slack sends when a person is picked in a `users_select`."""
    assert element["type"] == "users_select", element
    return {
        "type": "users_select",
        "action_id": element["action_id"],
        "block_id": block["block_id"],
        "selected_user": selected_user,
        "action_ts": action_ts(),
    }


def users_select_state(block: dict[str, Any], element: dict[str, Any], selected_user: str) -> dict[str, Any]:
    """`state.values` entry of a `users_select` holding `selected_user`, as block_actions carry it."""
    return {block["block_id"]: {element["action_id"]: {"type": "users_select", "selected_user": selected_user}}}


# ---- filling a form as a person would ----------------------------------------------------
@dataclass(frozen=True)
class Tampered:
    """An option value the form never offered, as a doctored request would carry it."""

    value: str


def option_object(label: str, value: str) -> dict[str, Any]:
    """An option as Slack echoes a selection back: plain_text with `emoji: true`, and its value."""
    return {"text": {"type": "plain_text", "text": label, "emoji": True}, "value": value}


def _echo(option: dict[str, Any]) -> dict[str, Any]:
    out = option_object(option["text"]["text"], option["value"])
    if option.get("description"):
        out["description"] = {**option["description"], "emoji": True}
    return out


def _pick(element: dict[str, Any], choice: Any) -> dict[str, Any]:
    if isinstance(choice, Tampered):
        return option_object(choice.value, choice.value)
    if isinstance(choice, dict):
        return choice
    for option in element.get("options") or []:
        if option["text"]["text"] == choice:
            return _echo(option)
    raise LookupError(f"no option labelled {choice!r} in {element.get('type')} {element.get('action_id')}")


def element_state(element: dict[str, Any], value: Any = None, *, filled: bool) -> dict[str, Any]:
    """`state.values[block_id][action_id]` for one element: what was filled, or what Slack shows untouched."""
    kind = element["type"]
    state: dict[str, Any] = {"type": kind}
    if kind in ("static_select", "external_select", "radio_buttons"):
        if filled:
            state["selected_option"] = None if value is None else _pick(element, value)
        else:
            initial = element.get("initial_option")
            state["selected_option"] = _echo(initial) if initial else None
    elif kind in ("multi_static_select", "multi_external_select", "checkboxes"):
        if filled:
            state["selected_options"] = [_pick(element, v) for v in value or []]
        else:
            state["selected_options"] = [_echo(o) for o in element.get("initial_options") or []]
    elif kind in ("plain_text_input", "number_input", "email_text_input", "url_text_input"):
        state["value"] = value if filled else element.get("initial_value")
    elif kind == "datepicker":
        state["selected_date"] = value if filled else element.get("initial_date")
    elif kind == "timepicker":
        state["selected_time"] = value if filled else element.get("initial_time")
    elif kind == "datetimepicker":  # a Unix timestamp, as Slack sends it
        state["selected_date_time"] = value if filled else element.get("initial_date_time")
    else:
        raise ValueError(f"no state format for {kind}")
    return state


def form_state(blocks: list[dict[str, Any]], fills: dict[str, Any], *, omit_untouched: bool = False) -> dict[str, Any]:
    """`state.values` for the input blocks in `blocks`, filled by label: {label text: answer}.

    Answers: an option label (or `Tampered(value)`, or a raw option dict) for selects and radio
    buttons, a list of labels for multi-selects and checkboxes, text for text, number, email and
    URL inputs, `YYYY-MM-DD` for date pickers, `HH:MM` for time pickers and a Unix timestamp for
    date-and-time pickers. Inputs not
    in `fills` hold their initial value or null, or are left out with `omit_untouched`.
    """
    labels = {b["label"]["text"] for b in blocks if b.get("type") == "input"}
    unknown = set(fills) - labels
    if unknown:
        raise LookupError(f"no input labelled {sorted(unknown)}; the form has {sorted(labels)}")
    values: dict[str, Any] = {}
    for block in blocks:
        if block.get("type") != "input":
            continue
        label, element = block["label"]["text"], block["element"]
        if label not in fills and omit_untouched:
            continue
        values[block["block_id"]] = {
            element["action_id"]: element_state(element, fills.get(label), filled=label in fills)
        }
    return values


# ---- Web API call log ------------------------------------------------------------------------
def blocks_of(call: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = call["args"].get("blocks")
    return blocks if isinstance(blocks, list) else []


def has_action(blocks: list[dict[str, Any]], prefix: str) -> bool:
    try:
        find_element(blocks, lambda a: a.startswith(prefix))
    except LookupError:
        return False
    return True


def is_question(message: dict[str, Any]) -> bool:
    """A question message still open: it carries Submit, one-click choice buttons, or (asking a
    secret) only the button that opens its form."""
    blocks = message.get("blocks") or []
    return any(has_action(blocks, a) for a in ("parley_submit", "parley_choose_", "parley_open_form"))


def texts(blocks: list[dict[str, Any]]) -> str:
    """Every text in `blocks`, joined: what a person reads in the message."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("plain_text", "mrkdwn") and isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(blocks)
    return "\n".join(found)


def _state(store: RunStore, message: dict[str, Any]) -> InterruptState | None:
    """The state of the question `message` carries in its metadata; None for any other message."""
    metadata = message.get("metadata")
    payload = metadata.get("event_payload") if isinstance(metadata, dict) else None
    iid = payload.get("interrupt_id") if isinstance(payload, dict) else None
    interrupt = store.interrupt(iid) if isinstance(iid, str) and iid else None
    return interrupt.state if interrupt is not None else None


def past_posting(store: RunStore, payload: dict[str, Any], timeout: float = 20.0) -> None:
    """Wait while the question a click's message carries is still being posted.

    Parley posts a question, then opens it, and refuses a click in between as not open yet.
    A test clicks as soon as the stand-in holds the message, which may be before Parley has
    opened the question. No person is that quick, and no test means to be.
    """
    message = payload.get("message")
    deadline = time.monotonic() + timeout
    while isinstance(message, dict):
        try:
            if _state(store, message) is not InterruptState.POSTING:
                return
        except redis.RedisError:  # a test of Redis trouble: the click goes as it is
            return
        assert time.monotonic() < deadline, f"the question at {message.get('ts')} was still being posted"
        time.sleep(0.02)
