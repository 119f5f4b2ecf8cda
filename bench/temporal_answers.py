"""Slack's requests that answer measurement 13's questions, as Slack sends them (form bodies).

A Submit click is built from the question's message as the Web API stand-in holds it, so
a message people share (`ask_each`) is answered through its own ids. An approval's edit is
the submission of its Edit… form (`parley_form`) with a new amount.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any
from urllib.parse import quote_plus

import httpx

from bench.seed import ANSWER_STATE
from bench.slack_signing import BOT_TOKEN
from bot.playground.workspace import APP_ID, TEAM_ID
from bot.slack import blocks

SUBMIT = blocks.SUBMIT_ACTION_ID


def message(api_url: str, channel: str, ts: str) -> dict[str, Any]:
    """The message `ts` in `channel`, as the stand-in holds it now."""
    resp = httpx.post(
        f"{api_url}/api/conversations.replies",
        data={"channel": channel, "ts": ts},
        headers={"Authorization": f"Bearer {BOT_TOKEN}"},
        timeout=10,
    )
    body = resp.json()
    if not body.get("ok"):
        raise RuntimeError(f"the stand-in has no message {ts} in {channel}: {body.get('error')}")
    return dict(body["messages"][0])


def _form(payload: dict[str, Any]) -> bytes:
    return ("payload=" + quote_plus(json.dumps(payload, separators=(",", ":")), safe="")).encode()


def _user(user: str) -> dict[str, str]:
    return {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID}


def submit_body(msg: dict[str, Any], channel: str, user: str) -> bytes:
    """`user` clicking Submit on `msg` with every item of the bench's three-item request filled in."""
    found = [(b, e) for b in msg["blocks"] if b["type"] == "actions" for e in b["elements"] if e["action_id"] == SUBMIT]
    if not found:
        raise RuntimeError("the question's message has no Submit button")
    block, button = found[0]
    values: dict[str, Any] = {}
    for b in msg["blocks"]:
        item = str(b.get("block_id", "")).rsplit("|", 1)[-1]
        if b["type"] == "input" and item in ANSWER_STATE:
            values[b["block_id"]] = {blocks.ANSWER_ACTION_ID: ANSWER_STATE[item]}
    ts = msg["ts"]
    payload = {
        "type": "block_actions",
        "user": _user(user),
        "api_app_id": APP_ID,
        "token": "bench-verification-token",
        "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": False},
        "trigger_id": f"{secrets.randbelow(10**10)}.{secrets.token_hex(8)}",
        "team": {"id": TEAM_ID, "domain": "parley-bench"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "general"},
        "message": msg,
        "state": {"values": values},
        "response_url": f"https://hooks.slack.com/actions/{TEAM_ID}/1/{secrets.token_hex(4)}",
        "actions": [
            {
                "action_id": SUBMIT,
                "block_id": block["block_id"],
                "text": button["text"],
                "value": button["value"],
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    return _form(payload)


def edit_body(iid: str, channel: str, user: str, field: str, value: str) -> bytes:
    """`user` submitting an approval's Edit… form with `field` set to `value` (which approves it)."""
    block_id = f"f|{iid}|{field}"
    view = {
        "id": f"V{secrets.token_hex(5).upper()}",
        "hash": f"{int(time.time())}.{secrets.token_hex(4)}",
        "type": "modal",
        "callback_id": blocks.FORM_CALLBACK_ID,
        "private_metadata": f"{iid}|{channel}",
        "blocks": [{"type": "input", "block_id": block_id, "element": {"type": "plain_text_input"}}],
        "state": {"values": {block_id: {"answer": {"type": "plain_text_input", "value": value}}}},
    }
    payload = {
        "type": "view_submission",
        "team": {"id": TEAM_ID, "domain": "parley-bench"},
        "user": _user(user),
        "api_app_id": APP_ID,
        "token": "bench-verification-token",
        "trigger_id": f"{secrets.randbelow(10**10)}.{secrets.token_hex(8)}",
        "view": view,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }
    return _form(payload)
