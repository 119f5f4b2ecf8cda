"""The shape every request must have before a listener reads it.

Slack's payloads are documented. A signed body not following them comes from a bug, or from
someone holding the signing secret. Examples are a field of the wrong type, or a missing user.
Either way it is refused with 400 before any listener runs. It does not fail inside one with a
500. Only the fields the listeners read are checked, and everything else passes.
"""

from __future__ import annotations

from typing import Any

_OPTIONAL_OBJECTS = ("team", "enterprise", "state", "container", "channel", "view", "message")


def _is_user(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("id"), str)


def _optional(body: dict[str, Any], name: str, kind: type) -> bool:
    return body.get(name) is None or isinstance(body[name], kind)


def problem(body: Any) -> str | None:
    """Why `body` cannot be handled, or None when its shape is fine."""
    if not isinstance(body, dict):
        return "the body is not an object"
    kind = body.get("type")
    if kind in ("block_actions", "view_submission", "view_closed", "block_suggestion"):
        if not _is_user(body.get("user")):
            return "user must be an object with a string id"
        for name in _OPTIONAL_OBJECTS:
            if not _optional(body, name, dict):
                return f"{name} must be an object"
        if not _optional(body, "trigger_id", str):
            return "trigger_id must be a string"
    if "event" in body and not isinstance(body["event"], dict):
        return "event must be an object"
    if kind == "block_actions":
        actions = body.get("actions")
        if not isinstance(actions, list) or not actions or not all(isinstance(a, dict) for a in actions):
            return "actions must be a non-empty list of objects"
        for action in actions:
            if not isinstance(action.get("action_id"), str) or not _optional(action, "block_id", str):
                return "every action needs a string action_id (and block_id)"
    if kind in ("view_submission", "view_closed"):
        view = body.get("view")
        if not isinstance(view, dict):
            return "view must be an object"
        blocks = view.get("blocks")
        if blocks is not None and not (isinstance(blocks, list) and all(isinstance(b, dict) for b in blocks)):
            return "view.blocks must be a list of objects"
        if not _optional(view, "state", dict):
            return "view.state must be an object"
    if "command" in body:
        for name in ("user_id", "channel_id"):
            if not isinstance(body.get(name), str):
                return f"{name} must be a string"
        if not _optional(body, "text", str):
            return "text must be a string"
    if kind == "event_callback":
        event = body.get("event")
        if not isinstance(event, dict):
            return "event must be an object"
        if event.get("type") == "app_home_opened" and not isinstance(event.get("user"), str):
            return "event.user must be a string"
        if event.get("type") in ("message", "app_home_opened"):
            for name in ("user", "channel", "thread_ts", "text", "ts", "subtype", "tab", "team", "user_team"):
                if not _optional(event, name, str):
                    return f"event.{name} must be a string"
        for name in ("team_id", "enterprise_id"):
            if not _optional(body, name, str):
                return f"{name} must be a string"
    return None
