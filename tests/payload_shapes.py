"""The shapes of what Slack sends an app, as documented, written down as checkers.

Each ``check_*`` returns a list of problems (empty when the payload has the documented
shape), so a test can assert ``== []`` and see every deviation at once. Sources: Slack's
docs for slash commands, interaction payloads (block_actions, view_submission,
block_suggestion), the Events API envelope, ``message`` and ``app_home_opened`` events,
request signing, and the ``state.values`` layout per element type (as summarised in our
Slack platform contract notes).

``DOCS_SLASH_COMMAND`` and ``DOCS_SIGNED_REQUEST`` are Slack's own published examples:
the first checks the checkers, the second the signing code.
"""

from __future__ import annotations

import re
from typing import Any

# Slack docs, "Implementing slash commands" → "Payload example".
DOCS_SLASH_COMMAND = (
    "token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&team_domain=example&enterprise_id=E0001"
    "&enterprise_name=Globular%20Construct%20Inc&channel_id=C2147483705&channel_name=test&user_id=U2147483697"
    "&user_name=Steve&command=/weather&text=94070&response_url=https://hooks.slack.com/commands/1234/5678"
    "&trigger_id=13345224609.738474920.8088930838d88f008e0&api_app_id=A123456"
)

# Slack docs, "Verifying requests from Slack" worked example.
DOCS_SIGNED_REQUEST = {
    "signing_secret": "8f742231b10e8888abcd99yyyzzz85a5",
    "timestamp": "1531420618",
    "signature": "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
    "body": (
        "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
        "&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
        "&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
        "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    ),
}

SLASH_COMMAND_FIELDS = (
    "token", "team_id", "team_domain", "channel_id", "channel_name", "user_id", "user_name",
    "command", "text", "response_url", "trigger_id", "api_app_id",
)  # fmt: skip
VALUE_FIELDS = {
    "static_select": "selected_option",
    "external_select": "selected_option",
    "radio_buttons": "selected_option",
    "multi_static_select": "selected_options",
    "multi_external_select": "selected_options",
    "checkboxes": "selected_options",
    "plain_text_input": "value",
    "datepicker": "selected_date",
    "timepicker": "selected_time",
    "users_select": "selected_user",
}
TS = re.compile(r"^\d{10}\.\d{6}$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SIGNATURE = re.compile(r"^v0=[0-9a-f]{64}$")


def _need(obj: Any, keys: tuple[str, ...] | list[str], where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: expected an object, got {type(obj).__name__}"]
    return [f"{where}: missing {k!r}" for k in keys if k not in obj]


def _str(obj: dict[str, Any], key: str, where: str, pattern: re.Pattern[str] | None = None) -> list[str]:
    value = obj.get(key)
    if not isinstance(value, str):
        return [f"{where}.{key}: expected a string, got {value!r}"]
    if pattern and not pattern.fullmatch(value):
        return [f"{where}.{key}: {value!r} does not match {pattern.pattern}"]
    return []


def check_signed_headers(headers: dict[str, str]) -> list[str]:
    """``X-Slack-Request-Timestamp`` (unix seconds) and ``X-Slack-Signature`` (``v0=`` + 64 hex)."""
    lower = {k.lower(): v for k, v in headers.items()}
    problems = []
    if not str(lower.get("x-slack-request-timestamp", "")).isdigit():
        problems.append("X-Slack-Request-Timestamp must be unix seconds")
    if not SIGNATURE.fullmatch(str(lower.get("x-slack-signature", ""))):
        problems.append("X-Slack-Signature must be v0= followed by a hex HMAC-SHA256")
    return problems


def check_slash_command(fields: dict[str, str]) -> list[str]:
    """A slash command's form fields: every documented field, all strings, ``command`` starting with ``/``."""
    problems = _need(fields, SLASH_COMMAND_FIELDS, "slash_command")
    problems += [f"slash_command.{k}: not a string" for k, v in fields.items() if not isinstance(v, str)]
    if not str(fields.get("command", "")).startswith("/"):
        problems.append("slash_command.command must start with '/'")
    for key, prefix in (("team_id", "T"), ("channel_id", ("C", "G", "D")), ("user_id", ("U", "W"))):
        if not str(fields.get(key, "")).startswith(prefix):
            problems.append(f"slash_command.{key}: unexpected id {fields.get(key)!r}")
    return problems


def check_user(user: Any, where: str = "user") -> list[str]:
    return _need(user, ("id", "username", "name", "team_id"), where)


def check_option(option: Any, where: str) -> list[str]:
    """An option as Slack echoes it: ``{"text": {"type": "plain_text", "text", "emoji": true}, "value"}``."""
    problems = _need(option, ("text", "value"), where)
    if problems:
        return problems
    text = option["text"]
    if not isinstance(text, dict) or text.get("type") != "plain_text" or not isinstance(text.get("text"), str):
        problems.append(f"{where}.text: must be a plain_text object")
    elif text.get("emoji") is not True:
        problems.append(f"{where}.text.emoji: Slack echoes true")
    return problems + _str(option, "value", where)


def check_element_value(element: Any, where: str) -> list[str]:
    """One ``state.values[block_id][action_id]`` entry, per element type (null where documented)."""
    problems = _need(element, ("type",), where)
    if problems:
        return problems
    kind = element["type"]
    field = VALUE_FIELDS.get(kind)
    if field is None:
        return [f"{where}: element type {kind!r} is not one Parley uses"]
    if field not in element:
        return [f"{where}: {kind} needs {field!r}"]
    value = element[field]
    if field == "selected_option":
        return [] if value is None else check_option(value, f"{where}.{field}")
    if field == "selected_options":
        if not isinstance(value, list):
            return [f"{where}.{field}: must be a list"]
        return [p for n, o in enumerate(value) for p in check_option(o, f"{where}.{field}[{n}]")]
    if value is not None and not isinstance(value, str):
        return [f"{where}.{field}: must be a string or null"]
    if kind == "datepicker" and value is not None and not DATE.fullmatch(value):
        return [f"{where}.{field}: must be YYYY-MM-DD"]
    return []


def check_state(state: Any, where: str = "state") -> list[str]:
    """``{"values": {block_id: {action_id: element value}}}``."""
    problems = _need(state, ("values",), where)
    if problems:
        return problems
    for block_id, actions in state["values"].items():
        if not isinstance(actions, dict):
            problems.append(f"{where}.values[{block_id!r}]: must be an object")
            continue
        for action_id, element in actions.items():
            problems += check_element_value(element, f"{where}.values[{block_id!r}][{action_id!r}]")
    return problems


def check_action(action: Any, where: str = "actions[0]") -> list[str]:
    """The element used: ``type``, ``action_id``, ``block_id``, ``action_ts``, plus the element's own value."""
    problems = _need(action, ("type", "action_id", "block_id", "action_ts"), where)
    if problems:
        return problems
    if action["type"] == "button":
        problems += _need(action, ("text",), where)
    elif action["type"] in VALUE_FIELDS:
        problems += check_element_value({k: v for k, v in action.items() if k != "placeholder"}, where)
    return problems + _str(action, "action_ts", where, re.compile(r"^\d+\.\d+$"))


def _check_container(payload: dict[str, Any], kind: str) -> list[str]:
    container = payload.get("container")
    if not isinstance(container, dict):
        return [f"{kind}.container: missing"]
    if container.get("type") == "view":
        problems = _need(container, ("view_id",), f"{kind}.container")
        return problems + _need(payload, ("view",), kind)
    problems = _need(container, ("type", "message_ts", "channel_id", "is_ephemeral"), f"{kind}.container")
    if container.get("type") != "message":
        problems.append(f"{kind}.container.type must be 'message' or 'view'")
    if not isinstance(container.get("is_ephemeral"), bool):
        problems.append(f"{kind}.container.is_ephemeral must be a bool")
    problems += _need(payload.get("channel"), ("id", "name"), f"{kind}.channel")
    if container.get("is_ephemeral") is False:
        problems += _need(payload, ("message",), kind)
        message = payload.get("message") or {}
        if message.get("thread_ts") and container.get("thread_ts") != message["thread_ts"]:
            problems.append(f"{kind}.container.thread_ts must be the message's thread_ts")
    elif "message" in payload:
        problems.append(f"{kind}: an ephemeral message is not echoed back")
    return problems


def _common(payload: Any, kind: str) -> list[str]:
    problems = _need(payload, ("type", "user", "api_app_id", "token", "team"), kind)
    if problems:
        return problems
    if payload["type"] != kind:
        problems.append(f"type must be {kind!r}, not {payload['type']!r}")
    return problems + check_user(payload["user"], f"{kind}.user") + _need(payload["team"], ("id", "domain"), "team")


def check_block_actions(payload: Any) -> list[str]:
    problems = _common(payload, "block_actions")
    if problems:
        return problems
    problems += _need(payload, ("container", "trigger_id", "actions"), "block_actions")
    problems += _check_container(payload, "block_actions")
    state = payload["view"]["state"] if payload.get("container", {}).get("type") == "view" else payload.get("state")
    problems += check_state(state)
    actions = payload.get("actions")
    if not isinstance(actions, list) or len(actions) != 1:
        return [*problems, "block_actions.actions: one element per click"]
    return problems + check_action(actions[0])


def check_view(view: Any, kind: str = "modal") -> list[str]:
    keys = ("id", "team_id", "type", "blocks", "private_metadata", "callback_id", "state", "hash")
    problems = _need(view, keys + (("title",) if kind == "modal" else ()), "view")
    if problems:
        return problems
    if view["type"] != kind:
        problems.append(f"view.type must be {kind!r}")
    return problems + check_state(view["state"], "view.state")


def check_view_submission(payload: Any) -> list[str]:
    problems = _common(payload, "view_submission")
    if problems:
        return problems
    problems += _need(payload, ("trigger_id", "view", "response_urls"), "view_submission")
    return problems + check_view(payload.get("view"))


def check_block_suggestion(payload: Any) -> list[str]:
    problems = _common(payload, "block_suggestion")
    if problems:
        return problems
    problems += _need(payload, ("container", "action_id", "block_id", "value"), "block_suggestion")
    return problems + _check_container(payload, "block_suggestion") + _str(payload, "value", "block_suggestion")


def check_event_callback(body: Any) -> list[str]:
    """The Events API envelope: ``token``, ``team_id``, ``api_app_id``, ``event``, ``event_id``, ``event_time``."""
    problems = _need(body, ("token", "team_id", "api_app_id", "event", "type", "event_id", "event_time"), "envelope")
    if problems:
        return problems
    if body["type"] != "event_callback":
        problems.append("envelope.type must be 'event_callback'")
    if not str(body["event_id"]).startswith("Ev"):
        problems.append("envelope.event_id must look like Ev…")
    if not isinstance(body["event_time"], int):
        problems.append("envelope.event_time must be unix seconds (int)")
    return problems + _need(body["event"], ("type",), "event")


def check_message_event(event: Any, *, reply: bool) -> list[str]:
    keys = ("type", "user", "text", "ts", "channel", "event_ts", "channel_type")
    problems = _need(event, keys + (("thread_ts",) if reply else ()), "event")
    if problems:
        return problems
    if event["type"] != "message" or event["channel_type"] != "channel":
        problems.append("event: a channel message has type 'message', channel_type 'channel'")
    return problems + _str(event, "ts", "event", TS) + (_str(event, "thread_ts", "event", TS) if reply else [])


def check_app_home_opened(event: Any) -> list[str]:
    problems = _need(event, ("type", "user", "channel", "tab", "event_ts"), "event")
    if problems:
        return problems
    if event["type"] != "app_home_opened" or event["tab"] not in ("home", "messages"):
        problems.append("event: app_home_opened with tab home|messages")
    if not str(event["channel"]).startswith("D"):
        problems.append("event.channel: the app's DM with the user (D…)")
    if "view" in event:
        problems += check_view(event["view"], "home")
    return problems
