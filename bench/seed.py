"""Paused runs in bulk, and the signed Submit clicks that answer them.

`seed_paused` leaves each run exactly as a worker parks it after posting its
question: `RunStore.create`'s writes, the claim (`TRANSITION` bumping the epoch),
`OPEN_INTERRUPT` and `PARK`, all through the store's own Lua scripts, plus the
thread key `SlackHost.start_thread` sets. It pipelines them a batch of runs at a
time, so 100,000 runs take seconds rather than minutes. `check_fidelity` (run by
the footprint measurement) compares a seeded run with one a real worker parked.

`SubmitClicks` builds the `block_actions` form body Slack POSTs for a Submit click
on each run's question message, from the real `question_blocks`.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote_plus

import redis

from bot.playground.workspace import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID
from bot.slack import blocks
from workers.interaction import Request
from workers.store import ids, journal_names, keys
from workers.store.pieces import gathered, read_field
from workers.store.records import RunStatus
from workers.store.run_writes import interrupt_fields, park_call, stage_create, transition_call
from workers.store.runs import RunStore

DUMMY_IID = "qBENCHDUMMYIID00000000"
ANSWER_STATE = {
    "env": {
        "type": "static_select",
        "selected_option": {"text": {"type": "plain_text", "text": "Production", "emoji": True}, "value": "production"},
    },
    "regions": {
        "type": "multi_static_select",
        "selected_options": [
            {"text": {"type": "plain_text", "text": "eu-west-1", "emoji": True}, "value": "eu-west-1"}
        ],
    },
    "why": {"type": "plain_text_input", "value": "Hotfix for the login outage"},
}


@dataclass(frozen=True)
class Seeded:
    run_id: str
    iid: str
    user: str
    channel: str
    thread_ts: str
    message_ts: str


def seed_paused(
    store: RunStore,
    n: int,
    request: Request,
    *,
    agent: str,
    user_for: Callable[[int], str],
    messages: list[list[str]] | None = None,
    batch: int = 500,
    start: int = 0,
    text: str = "",
) -> list[Seeded]:
    """Create `n` runs paused on `request`, each asked of `user_for(i)`.

    `messages[i]` is (channel, root ts, question ts) of run i's thread and question message.
    """
    request_json = request.model_dump_json()
    out: list[Seeded] = []
    for lo in range(0, n, batch):
        pipe = store.redis.pipeline(transaction=False)
        for i in range(lo, min(lo + batch, n)):
            user = user_for(start + i)
            channel, root_ts, msg_ts = messages[i] if messages else (f"C0BENCH{i % 64:02d}", f"{i}.000001", "")
            run_id, iid = ids.new_id(ids.RUN), ids.new_question_id()
            conversation = {"host": "slack", "team": TEAM_ID, "channel": channel, "thread_ts": root_ts}
            message = {"channel": channel, "ts": msg_ts, "version": 1} if msg_ts else {}
            _queue_one(store, pipe, run_id, iid, agent, text, user, conversation, request_json, message)
            out.append(Seeded(run_id, iid, user, channel, root_ts, msg_ts))
        results = pipe.execute()
        bad = [r for r in results if r in (-1, -2) or (isinstance(r, list) and r and r[0] == 0)]
        if bad:
            raise RuntimeError(f"seeding refused by the store's scripts: {bad[:3]}")
    return out


@lru_cache(maxsize=8)
def _parsed(request_json: str) -> Request:
    return Request.model_validate_json(request_json)


@lru_cache(maxsize=1024)
def _asking(request_json: str, user: str) -> Request:
    """The request as `ask_one` stores it: with the run's starter as assignee if it names nobody."""
    request = _parsed(request_json)
    return request if request.assignees else request.model_copy(update={"assignees": [user]})


def _queue_one(
    store: RunStore,
    pipe: Any,
    run_id: str,
    iid: str,
    agent: str,
    text: str,
    user: str,
    conversation: dict[str, Any],
    request_json: str,
    message: dict[str, Any],
) -> None:
    now = time.time()
    stage_create(pipe, run_id, agent, text, user, conversation, now)  # RunStore.create
    # SlackHost.start_thread
    pipe.set(keys.thread(conversation["channel"], conversation["thread_ts"]), run_id)
    # execute(): the claim
    claim_keys, claim_argv = transition_call(
        run_id, [RunStatus.QUEUED], RunStatus.RUNNING, lease=repr(now + 30.0), bump_epoch=True, now=now
    )
    store._transition(keys=claim_keys, args=claim_argv, client=pipe)
    # Run.ask -> RunStore.open_interrupt, asking the run's starter when the request names nobody
    request = _asking(request_json, user)
    fields = interrupt_fields(iid, run_id, conversation["team"], "#1", 1, request, [user], now)
    argv: list[Any] = ["1", journal_names.ask("#1"), json.dumps([iid]), iid]
    for name, value in fields.items():
        argv += [name, value]
    store._open(keys=[keys.run(run_id), keys.journal(run_id), keys.interrupt(iid)], args=argv, client=pipe)
    # Run._solicit -> RunStore.park (with the message SlackHost recorded)
    park_keys, park_args = park_call(run_id, 1, now, iid, message)
    store._park(keys=park_keys, args=park_args, client=pipe)


def run_keys(client: redis.Redis, run_id: str) -> list[str]:
    """The keys that belong to one paused run alone (not the shared indexes)."""
    data = {k.decode(): v.decode() for k, v in client.hgetall(keys.run(run_id)).items()}
    conv = json.loads(gathered(data, "conversation") or "{}")
    found = [keys.run(run_id), keys.journal(run_id), keys.history(run_id), keys.interrupt(data.get("interrupt", ""))]
    if conv.get("thread_ts"):
        found.append(keys.thread(conv["channel"], conv["thread_ts"]))
    return [k for k in found if client.exists(k)]


def check_fidelity(client: redis.Redis, real_run: str, seeded_run: str) -> list[str]:
    """Differences in key types and hash fields between a worker-parked run and a seeded one."""
    problems: list[str] = []
    real, seeded = run_keys(client, real_run), run_keys(client, seeded_run)
    if len(real) != len(seeded):
        problems.append(f"keys: real {len(real)}, seeded {len(seeded)}")
    for a, b in zip(real, seeded, strict=False):
        ta, tb = client.type(a), client.type(b)
        if ta != tb:
            problems.append(f"{a}: type {ta!r} vs {tb!r}")
        elif ta == b"hash":
            fa, fb = set(client.hkeys(a)), set(client.hkeys(b))
            if fa != fb:
                problems.append(f"{a}: fields differ: {sorted(fa ^ fb)}")
    return problems


class SubmitClicks:
    """Form bodies of Submit clicks, as Slack sends them: `payload=<url-encoded block_actions JSON>`."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self._templates: dict[str, str] = {}

    def _template(self, user: str) -> str:
        if user not in self._templates:
            question = blocks.question_blocks(self.request, DUMMY_IID, assignees=[user])
            submit = next(
                e
                for b in question
                if b["type"] == "actions"
                for e in b["elements"]
                if e["action_id"] == blocks.SUBMIT_ACTION_ID
            )
            values = {
                f"q|{DUMMY_IID}|1|{item}": {blocks.ANSWER_ACTION_ID: state} for item, state in ANSWER_STATE.items()
            }
            payload = {
                "type": "block_actions",
                "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM_ID},
                "api_app_id": APP_ID,
                "token": "bench-verification-token",
                "container": {
                    "type": "message",
                    "message_ts": "@MSG@",
                    "channel_id": "@CH@",
                    "is_ephemeral": False,
                    "thread_ts": "@ROOT@",
                },
                "trigger_id": "@TRIGGER@",
                "team": {"id": TEAM_ID, "domain": "parley-bench"},
                "enterprise": None,
                "is_enterprise_install": False,
                "channel": {"id": "@CH@", "name": "bench"},
                "message": {
                    "user": BOT_USER_ID,
                    "type": "message",
                    "ts": "@MSG@",
                    "bot_id": BOT_ID,
                    "app_id": APP_ID,
                    "text": blocks.fallback_text(self.request),
                    "team": TEAM_ID,
                    "thread_ts": "@ROOT@",
                    "parent_user_id": user,
                    "blocks": question,
                },
                "state": {"values": values},
                "response_url": f"https://hooks.slack.com/actions/{TEAM_ID}/1/@TRIGGER@",
                "actions": [
                    {
                        "action_id": submit["action_id"],
                        "block_id": f"qa|{DUMMY_IID}|1",
                        "text": submit["text"],
                        "value": DUMMY_IID,
                        "style": "primary",
                        "type": "button",
                        "action_ts": "@ATS@",
                    }
                ],
            }
            self._templates[user] = json.dumps(payload, separators=(",", ":"))
        return self._templates[user]

    def body(self, run: Seeded) -> bytes:
        """The form body for a Submit click on `run`'s question, answering every item."""
        text = (
            self._template(run.user)
            .replace(DUMMY_IID, run.iid)
            .replace("@MSG@", run.message_ts or "1.000001")
            .replace("@CH@", run.channel)
            .replace("@ROOT@", run.thread_ts)
            .replace("@TRIGGER@", f"{secrets.randbelow(10**10)}.{secrets.token_hex(8)}")
            .replace("@ATS@", f"{time.time():.6f}")
        )
        return ("payload=" + quote_plus(text, safe="")).encode()


def seeded(r: redis.Redis, run_id: str) -> Seeded:
    """A paused run's question, as a click needs it (two reads)."""
    iid, user = (x.decode() for x in r.hmget(keys.run(run_id), "interrupt", "started_by"))
    conv = read_field(r, keys.run(run_id), "conversation") or "{}"
    message = json.loads(r.hget(keys.interrupt(iid), "message") or b"{}")
    thread = json.loads(conv)
    return Seeded(run_id, iid, user, thread["channel"], thread["thread_ts"], message.get("ts", ""))
