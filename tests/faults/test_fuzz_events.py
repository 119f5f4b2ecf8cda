"""Fuzzing `POST /slack/events` with validly signed bodies Slack would never send.

Hypothesis mutates real payloads (a Submit click, a one-click choice, "Answer in a form",
a form submission, an options load, an admin's Cancel, a slash command, thread replies,
the Home tab) and makes up garbage ones (random JSON, deep nesting, huge strings, wrong
content types). Every body is signed with the real secret, so it reaches the listeners.

The bot must never answer 5xx, and no body may change what Parley keeps: every body is
made unusable (the person is not asked, not an admin, or the agent does not exist), so a
snapshot of the `parley:*` keys must stay as it was, whatever parsing path the body takes.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from slack_forms import button_action, find_element, home_row_button
from slack_payloads import (
    ADMIN,
    FORM,
    JSON_TYPE,
    app_home_opened_event,
    block_actions_payload,
    block_suggestion_payload,
    event_callback_body,
    home_actions_payload,
    slash_command_fields,
    thread_reply_event,
    view_submission_payload,
)
from slack_stack import RunRef

from faults.conftest import FaultStack, Ledger
from faults.invariants import snapshot_run

pytestmark = pytest.mark.faults

ASSIGNEE = "U0BOB"
RECORDS = (b"parley:run:", b"parley:interrupt:", b"parley:thread:")  # a new one means something was created
OUTSIDERS = ["U0CAROL", "U0MALLORY", "W0NOBODY", "", "U0BOB ", "u0bob"]
AGENTS = {"f-flow", "s-form", "s-pick", "s-gate", "s-many", "s-escape", "s-huge", "ticket", "deploy", "assistant"}


# ---- the targets: live runs whose questions the bodies aim at --------------------------------------
class Targets:
    def __init__(self, stack: FaultStack) -> None:
        self.stack = stack
        tag = secrets.token_hex(4)
        self.form_run = stack.start_run("f-flow", json.dumps({"assignees": [ASSIGNEE]}) + f" fuzz-{tag}")
        self.pick_run = stack.start_run("s-pick", json.dumps({"assignees": [ASSIGNEE]}) + f" fuzz-{tag}")
        self.form_q = stack.question(self.form_run)
        self.pick_q = stack.question(self.pick_run)
        assert stack.redis is not None
        self.iids = [stack.redis.hget(f"parley:run:{r.run_id}", "interrupt").decode() for r in self.runs]
        self.view = self._open_form()
        self.home = stack.open_home(ADMIN)
        stack.settle(quiet=0.3)

    @property
    def runs(self) -> list[RunRef]:
        return [self.form_run, self.pick_run]

    def _open_form(self) -> dict[str, Any]:
        block, button = find_element(self.form_q["blocks"], "parley_open_form")
        trigger = self.stack.ws.issue_trigger(ASSIGNEE)
        mark = self.stack.mark()
        payload = block_actions_payload(
            user=ASSIGNEE,
            message=self.form_q,
            channel=self.form_run.channel,
            action=button_action(block, button),
            trigger=trigger,
        )
        assert self.stack.interact(payload).status_code == 200
        self.stack.wait_call("views.open", since=mark)
        return self.stack.ws.open_views(ASSIGNEE)[-1]

    # -- real payloads to mutate --
    def bases(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """name -> (kind, payload); kind is "interaction", "command" or "event"."""
        run, q = self.form_run, self.form_q
        submit = self.stack.submit_payload(run, q, {"Colour": "Red", "Note": "fuzz"})
        pick_block, pick_button = find_element(self.pick_q["blocks"], lambda a: a.startswith("parley_choose_"))
        choose = block_actions_payload(
            user=ASSIGNEE,
            message=self.pick_q,
            channel=self.pick_run.channel,
            action=button_action(pick_block, pick_button),
        )
        form_block, form_button = find_element(q["blocks"], "parley_open_form")
        open_form = block_actions_payload(
            user=ASSIGNEE, message=q, channel=run.channel, action=button_action(form_block, form_button)
        )
        fields = {b["label"]["text"]: b for b in self.view["blocks"] if b.get("type") == "input"}
        colour = fields["Colour"]
        state = {
            colour["block_id"]: {
                "answer": {
                    "type": "static_select",
                    "selected_option": {"text": {"type": "plain_text", "text": "Red"}, "value": "Red"},
                }
            }
        }
        submission = view_submission_payload(user=ASSIGNEE, view=self.view, state_values=state)
        suggestion = block_suggestion_payload(
            user=ASSIGNEE,
            message=q,
            channel=run.channel,
            block_id=colour["block_id"].replace("f|", "q|", 1),
            action_id="answer",
            value="re",
        )
        cancel_block, cancel_button = home_row_button(self.home, run.run_id, "parley_admin_cancel")
        cancel = home_actions_payload(user=ADMIN, view=self.home, action=button_action(cancel_block, cancel_button))
        reply = thread_reply_event(
            user=ASSIGNEE,
            channel=self.pick_run.channel,
            text="2",
            ts=f"{secrets.randbelow(10**9)}.000100",
            thread_ts=self.pick_run.root_ts,
        )
        return {
            "submit": ("interaction", submit),
            "choose": ("interaction", choose),
            "open_form": ("interaction", open_form),
            "view_submission": ("interaction", submission),
            "block_suggestion": ("interaction", suggestion),
            "admin_cancel": ("interaction", cancel),
            "command": ("command", slash_command_fields("f-flow {} fuzz", user=ASSIGNEE)),
            "thread_reply": ("event", json.loads(event_callback_body(reply))),
            "home_opened": ("event", json.loads(event_callback_body(app_home_opened_event(ASSIGNEE)))),
        }

    # -- what must not change --
    def snapshot(self) -> dict[str, Any]:
        assert self.stack.redis is not None
        r = self.stack.redis
        keys = sorted(k for k in r.scan_iter(match="parley:*", count=1000) if k.startswith(RECORDS))
        return {"keys": keys, **{rid: snapshot_run(r, rid) for rid in (x.run_id for x in self.runs)}}


# ---- making any payload unusable ------------------------------------------------------------------
def disarm(kind: str, payload: Any, outsider: str) -> Any:
    """Whatever a mutation left, the body must not be an answer Parley could accept, or an admin's."""
    if not isinstance(payload, dict):
        return payload
    user = payload.get("user")
    if kind == "interaction" and isinstance(user, dict) and user.get("id") in (ASSIGNEE, ADMIN):
        user["id"] = outsider
    if kind == "command":
        if payload.get("user_id") in (ASSIGNEE, ADMIN):
            payload["user_id"] = outsider
        text = payload.get("text")
        if isinstance(text, str) and text.strip().split(" ")[0] in AGENTS:
            payload["text"] = "zz" + text.strip()
    event = payload.get("event")
    if kind == "event" and isinstance(event, dict) and event.get("user") in (ASSIGNEE, ADMIN):
        event["user"] = outsider
    return payload


# ---- strategies ---------------------------------------------------------------------------------
INTERESTING = [
    "",
    " ",
    "null",
    "0",
    "-1",
    "1e309",
    "NaN",
    "parley_submit",
    "parley_choose_0",
    "parley_open_form",
    "parley_form",
    "parley_admin_cancel",
    "q|x|1|colour",
    "qa|x|1",
    "f|x|colour",
    "Red",
    "Purple",
    "<!channel>",
    "<@U0ALICE>",
    "*bold*",
    "\u202eevil",
    "a\u200bb",
    "\U0001f469\u200d\U0001f680",
    "\x00",
    "x" * 3001,
    "%00",
    "T0ELSEWHERE",
    "U0CAROL",
    "view_submission",
    "block_actions",
    "event_callback",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(INTERESTING)
)
FIELDS = ["type", "user", "id", "value", "block_id", "action_id", "actions", "state", "values", "view", "team"]
FIELDS += ["private_metadata", "selected_option", "selected_options", "event", "channel", "thread_ts"]


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.text(max_size=12) | st.sampled_from(FIELDS)
    return st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4)


json_values = st.recursive(scalars, _containers, max_leaves=12)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*prefix, i))
    return found


def mutate(data: st.DataObject, payload: Any, targets_ids: list[str]) -> Any:
    """Apply 1-4 random edits: replace a value, delete a key, add a key, or swap in a target's id."""
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(_paths(payload)))
        op = data.draw(st.sampled_from(["replace", "delete", "add", "iid", "stringify"]))
        if not path:
            if op == "replace":
                payload = data.draw(json_values)
            continue
        parent = payload
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        if op == "replace":
            parent[key] = data.draw(json_values)
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][data.draw(st.text(max_size=12))] = data.draw(json_values)
        elif op == "iid":
            parent[key] = data.draw(st.sampled_from(targets_ids))
        elif op == "stringify":
            parent[key] = json.dumps(parent[key])
    return payload


def encode(kind: str, payload: Any) -> tuple[str, str]:
    if kind == "event":
        return json.dumps(payload), JSON_TYPE
    if kind == "command" and isinstance(payload, dict):
        return urlencode({str(k): v if isinstance(v, str) else json.dumps(v) for k, v in payload.items()}), FORM
    return urlencode({"payload": json.dumps(payload)}), FORM


def garbage() -> st.SearchStrategy[tuple[str, str]]:
    deep = st.integers(50, 5000).map(lambda n: "[" * n + "]" * n)
    deep_obj = st.integers(50, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n)
    content_types = st.sampled_from(
        [FORM, JSON_TYPE, "text/plain", "", "multipart/form-data; boundary=x", "application/json; charset=utf-16"]
    )
    raw = st.one_of(
        st.text(max_size=300),
        json_values.map(json.dumps),
        deep,
        deep_obj,
        json_values.map(lambda v: urlencode({"payload": json.dumps(v)})),
        deep.map(lambda d: urlencode({"payload": d})),
        st.text(max_size=200).map(lambda t: "payload=" + t),
        st.integers(1, 3).map(
            lambda n: urlencode({"payload": json.dumps({"type": "block_actions", "x": "y" * 10**5 * n})})
        ),
        st.just("ssl_check=1&token=x"),
        st.just('{"type":"url_verification","challenge":"abc","token":"x"}'),
        st.just(
            urlencode(
                {
                    "command": "/parley",
                    "text": "runs",
                    "user_id": "U0CAROL",
                    "team_id": "T0PARLEY",
                    "channel_id": "C0GENERAL",
                }
            )
        ),
    )
    return st.tuples(raw, content_types)


@pytest.fixture(scope="module")
def targets(fault_stack: FaultStack) -> Iterator[Targets]:
    fault_stack.ensure()
    yield Targets(fault_stack)


def test_signed_garbage_and_mutated_payloads_never_fail_or_change_state(
    stack: FaultStack, targets: Targets, ledger: Ledger
) -> None:
    bases = targets.bases()
    names = sorted(bases)
    baseline = targets.snapshot()
    mark = stack.mark()
    problems: list[str] = []

    @seed(ledger.seed)
    @settings(
        max_examples=60 * ledger.rounds,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        if data.draw(st.integers(0, 4)) == 0:
            body, content_type = data.draw(garbage())
            what = "garbage"
        else:
            name = data.draw(st.sampled_from(names))
            kind, base = bases[name]
            payload = mutate(data, json.loads(json.dumps(base)), targets.iids)
            payload = disarm(kind, payload, data.draw(st.sampled_from(OUTSIDERS)))
            body, content_type = encode(kind, payload)
            what = f"mutated {name}"
        ledger.requests += 1
        resp = stack.send(body, content_type)
        if resp.status_code >= 500:
            problems.append(f"{what}: HTTP {resp.status_code} for {body[:300]!r}")
        assert resp.status_code < 500, (what, content_type, body[:3000])

    fuzz()
    stack.settle(quiet=0.5)
    after = targets.snapshot()
    assert after == baseline, "a fuzzed body changed Parley's state"
    for run in targets.runs:
        asked = stack.calls("chat.postMessage", lambda c, r=run: c["args"].get("thread_ts") == r.root_ts, since=mark)
        assert asked == [], f"a fuzzed body made Parley post in run {run.run_id}'s thread"
        assert stack.calls("chat.update", since=mark) == []
    assert not problems
