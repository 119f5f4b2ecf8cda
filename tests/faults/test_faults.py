"""Parley under faults: each scenario alone, then a seeded random mix; every invariant after each.

`pytest -m faults` runs it with the fixed default seed; `pytest -m faults --seed N --rounds M`
replays a seed or soaks longer. The seed is printed at the start and with the figures at the end.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from slack_forms import Tampered, is_question
from slack_payloads import BOT_TOKEN, FORM, JSON_TYPE, interaction_body, mrkdwn_escape, signed_headers, slack_signature
from slack_sdk import WebClient
from slack_stack import RunRef

from faults.agents import bump
from faults.conftest import FaultStack, Ledger
from faults.invariants import Checker, unchanged
from faults.scenarios import ACK_DEADLINE, GLOBAL, MIXABLE, REGISTRY, Ctx, run_scenario

pytestmark = pytest.mark.faults


@pytest.mark.parametrize("name", list(REGISTRY))
def test_scenario_alone(name: str, stack: FaultStack, ledger: Ledger) -> None:
    run_scenario(name, stack, ledger, random.Random(f"{ledger.seed}:{name}"))


def test_seeded_mix(stack: FaultStack, ledger: Ledger) -> None:
    """`rounds` scenarios drawn by the seed; shared-part faults (Redis, the bot) at most every other round."""
    rng = random.Random(ledger.seed)
    previous = ""
    for n in range(ledger.rounds):
        choices = [s for s in MIXABLE if not (previous in GLOBAL and s in GLOBAL)]
        name = rng.choice(choices)
        print(f"round {n + 1}/{ledger.rounds}: {name}")
        run_scenario(name, stack, ledger, random.Random(f"{ledger.seed}:{n}:{name}"))
        previous = name


# ---- the checker itself -----------------------------------------------------------------------------
def test_the_checker_catches_each_kind_of_violation(stack: FaultStack, ledger: Ledger) -> None:
    """Tamper with a finished run in each way the invariants forbid; the checker must name every one."""
    ctx = Ctx(stack, random.Random(ledger.seed), ledger)
    run = ctx.start()
    q = ctx.question(run)
    ctx.answer(run, q, colour="Red")
    ctx.wait_status(run, "succeeded")
    quiet = Ledger(seed=ledger.seed, rounds=ledger.rounds)
    checker = Checker(stack, quiet)
    checker.check([run])  # clean before tampering

    assert stack.redis is not None
    iid = ctx.interrupt_id(run)
    bump(stack.data_dir, run.run_id, "step.apply")  # a side effect repeated
    history = stack.redis.lrange(f"parley:run:{run.run_id}:history", 0, -1)
    answered = next(h for h in history if json.loads(h)["event"] == "answered")
    stack.redis.rpush(f"parley:run:{run.run_id}:history", answered)  # accepted twice
    stack.redis.hset(f"parley:interrupt:{iid}", "answered_by", "U0MALLORY")  # not an assignee
    WebClient(token=BOT_TOKEN, base_url=stack.api_url).chat_postMessage(
        channel=run.channel, thread_ts=run.root_ts, text="again", blocks=blocks_of_question(q)
    )  # posted twice
    receipt = stack.redis.hgetall(f"parley:receipt:{iid}")  # put back below: the stack is shared
    stack.redis.delete(f"parley:receipt:{iid}")  # an accepted answer without its receipt
    gate = secrets.token_hex(4)
    stuck = ctx.start(gate=gate)  # running, waiting for a gate: neither ended nor paused
    ctx.wait_status(stuck, "running")

    try:
        with pytest.raises(AssertionError) as failed:
            checker.check([run, stuck], timeout=1.0)
    finally:  # the workspace's chain is whole again for the tests after this one
        stack.redis.hset(f"parley:receipt:{iid}", mapping=receipt)
    report = str(failed.value)
    for needle in (
        "step 'apply' ran its side effect 2 times",
        "was accepted 2 times",
        "answered by U0MALLORY",
        "was posted 2 times",
        f"{stuck.run_id}: stuck running",
        f"question {iid} is answered without its receipt",
        "breaks the chain",
    ):
        assert needle in report, (needle, report[:3000])
    ctx.open_gate(gate)  # let it go on to its question
    ctx.question(stuck)


def blocks_of_question(q: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in q["blocks"] if b.get("block_id")]


# ---- hostile input -----------------------------------------------------------------------------------
def refused(stack: FaultStack, ledger: Ledger, runs: list[RunRef], send: Callable[[], httpx.Response]) -> int:
    """Send a request Parley must refuse: no 5xx, an ack in time, nothing it keeps about `runs` changed."""
    assert stack.redis is not None
    stack.settle(quiet=0.3)
    mark = stack.mark()
    with unchanged(stack.redis, [r.run_id for r in runs], "a refused request"):
        resp = send()
        ledger.requests += 1
        assert resp.status_code < 500, (resp.status_code, resp.text)
        assert resp.elapsed.total_seconds() < ACK_DEADLINE
        stack.settle(quiet=0.4)
    assert stack.calls("chat.update", since=mark) == []
    for run in runs:
        assert (
            stack.calls("chat.postMessage", lambda c, r=run: c["args"].get("thread_ts") == r.root_ts, since=mark) == []
        )
    return resp.status_code


@pytest.fixture
def open_question(stack: FaultStack, ledger: Ledger) -> tuple[Ctx, RunRef, dict[str, Any]]:
    ctx = Ctx(stack, random.Random(ledger.seed), ledger)
    run = ctx.start(assignees=["U0BOB"])
    return ctx, run, ctx.question(run)


NOW = "now"
FORGERIES: dict[str, Callable[[str], dict[str, str]]] = {
    "wrong secret": lambda body: signed_headers(body, FORM, secret="not-the-secret"),
    "no signature": lambda body: {k: v for k, v in signed_headers(body, FORM).items() if k != "X-Slack-Signature"},
    "no timestamp": lambda body: {
        k: v for k, v in signed_headers(body, FORM).items() if k != "X-Slack-Request-Timestamp"
    },
    "no headers": lambda body: {"Content-Type": FORM},
    "stale": lambda body: signed_headers(body, FORM, timestamp=int(time.time()) - 6 * 60),
    "from the future": lambda body: signed_headers(body, FORM, timestamp=int(time.time()) + 6 * 60),
    "signature of another body": lambda body: {
        **signed_headers(body, FORM),
        "X-Slack-Signature": slack_signature(body + "&x=1", str(int(time.time()))),
    },
    "signature not hex": lambda body: {**signed_headers(body, FORM), "X-Slack-Signature": "v0=" + "zz" * 32},
    "signature not ascii": lambda body: {
        **signed_headers(body, FORM),
        "X-Slack-Signature": "v0=\u00e9t\u00e9".encode(),
    },
}
# Header values go out as bytes: the server reads them as latin-1, whatever a client encoded.
for _garbage in ("abc", "", "12.5", "1e9", "-1", "9" * 40, "\u0661\u0662\u0663", "+1700000000", "0x10"):
    FORGERIES[f"timestamp {_garbage!r}"] = lambda body, g=_garbage: {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": g.encode(),
        "X-Slack-Signature": slack_signature(body, g),
    }


@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_forged_and_garbled_signatures_are_refused(
    stack: FaultStack, ledger: Ledger, open_question: tuple[Ctx, RunRef, dict[str, Any]], forgery: str
) -> None:
    ctx, run, q = open_question
    body = interaction_body(ctx.payload(run, q, "Red"))
    status = refused(stack, ledger, [run], lambda: stack.send(body, FORM, headers=FORGERIES[forgery](body)))
    assert status == 401
    ledger.fault("forged or garbled signature")
    assert stack.send(body, FORM).status_code == 200  # the same body, signed: accepted
    ctx.wait_status(run, "succeeded")
    ctx.checker.check([run])


def _not_offered(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    return ctx.stack.submit_payload(run, q, {"Colour": Tampered("Purple")})


def _unknown_interrupt(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    payload = ctx.payload(run, q, "Red")
    payload["actions"][0]["value"] = "q" + secrets.token_urlsafe(16)
    return payload


def _other_team(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    """An org-wide install elsewhere: no team, another enterprise (a shared channel's own clicks are allowed)."""
    payload = ctx.payload(run, q, "Red", team="T0ELSEWHERE")
    payload.update(team=None, enterprise={"id": "E0ELSEWHERE", "name": "Elsewhere"}, is_enterprise_install=True)
    return payload


def _not_asked(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    return ctx.payload(run, q, "Red", user="U0CAROL")


def _over_our_limit(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    return ctx.payload(run, q, "Red", note="n" * 3001)


def _over_block_kit(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    return ctx.payload(run, q, "Red", note="\U0001f4a5" * 20_000)  # far over Block Kit's 3,000, under the body cap


def _huge_payload(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    payload = ctx.payload(run, q, "Red", user="U0CAROL")
    payload["junk"] = ["x" * 1000] * 5000  # five megabytes
    return payload


def _deep_state(ctx: Ctx, run: RunRef, q: dict[str, Any]) -> dict[str, Any]:
    payload = ctx.payload(run, q, "Red")
    deep: Any = "Red"
    for _ in range(400):
        deep = {"value": deep}
    block_id = next(iter(payload["state"]["values"]))
    payload["state"]["values"][block_id]["answer"]["selected_option"] = deep
    return payload


HOSTILE: dict[str, tuple[Callable[[Ctx, RunRef, dict[str, Any]], dict[str, Any]], str | None]] = {
    "an option value that was not offered": (_not_offered, "not one of the offered options"),
    "an unknown interrupt id": (_unknown_interrupt, "no longer exists"),
    "another team's run": (_other_team, "asked in another Slack workspace"),
    "someone who was not asked": (_not_asked, "not yours to answer"),
    "a text over our limit": (_over_our_limit, "over the limit of 3000"),
    "a text over Block Kit's limits": (_over_block_kit, "over the limit of 3000"),
    "a five-megabyte payload": (_huge_payload, None),  # over the 1 MiB body cap: 413 before it is read
    "a deeply nested answer": (_deep_state, "Your answer was not accepted"),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_hostile_answers_are_refused_and_change_nothing(
    stack: FaultStack, ledger: Ledger, open_question: tuple[Ctx, RunRef, dict[str, Any]], hostile: str
) -> None:
    ctx, run, q = open_question
    build, says = HOSTILE[hostile]
    payload = build(ctx, run, q)
    user = payload["user"]["id"]
    mark = stack.mark()
    status = refused(stack, ledger, [run], lambda: stack.interact(payload))
    ledger.fault(f"hostile: {hostile}")
    if says is None:
        assert status == 413
    else:
        note = stack.wait_ephemeral(user, lambda t: says in t, since=mark)
        assert note["args"]["channel"] == run.channel
    assert is_question(stack.message(run, q["ts"]))  # still open, controls intact
    ctx.answer(run, q, colour="Blue")
    ctx.wait_status(run, "succeeded")
    ctx.checker.check([run])


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(urlencode({"payload": "[" * 100_000 + "]" * 100_000}), id="deep-form"),
        pytest.param("[" * 100_000 + "]" * 100_000, id="deep-json"),
        pytest.param(
            json.dumps({"type": "event_callback", "event": {"type": "message", "text": "x" * 5_000_000}}),
            id="five-megabyte-event",
        ),
        pytest.param("payload=%FF%FE%00", id="not-utf8"),
    ],
)
def test_unreadable_bodies_are_refused(stack: FaultStack, ledger: Ledger, body: str) -> None:
    assert stack.redis is not None
    before = sorted(k for k in stack.redis.scan_iter(match="parley:*") if not k.startswith(b"parley:seen:"))
    content_type = JSON_TYPE if body.startswith(("[", "{")) else FORM
    resp = stack.send(body, content_type)
    ledger.requests += 1
    ledger.fault("unreadable body")
    assert resp.status_code < 500 and resp.elapsed.total_seconds() < ACK_DEADLINE
    after = sorted(k for k in stack.redis.scan_iter(match="parley:*") if not k.startswith(b"parley:seen:"))
    assert after == before


def test_an_oversize_slash_command_starts_nothing(stack: FaultStack, ledger: Ledger) -> None:
    assert stack.redis is not None
    runs = stack.redis.zcard("parley:idx:runs")
    resp = stack.command("f-flow " + "x" * 3001)
    ledger.requests += 1
    ledger.fault("hostile: oversize command text")
    assert resp.status_code == 200 and "the limit is 3000" in resp.json()["text"]
    assert stack.redis.zcard("parley:idx:runs") == runs


UNICODE = (
    "Ship it \U0001f680\U0001f469\U0001f3fd\u200d\U0001f4bb \u05e9\u05dc\u05d5\u05dd \u202eevil\u202c"
    " zero\u200bwidth \ufeffbom\u2060 e\u0301"
)
CONTROLS = ("<!channel>", "<!here|here>", "<@U0ALICE>", "<#C0OPS>", "<https://evil.example|click>")
MRKDWN = "<!channel> <!here|here> <@U0ALICE> <#C0OPS> <https://evil.example|click> *bold* _it_ ~s~ `c` &amp; &lt;"


def _mrkdwn_texts(node: Any, out: list[str]) -> list[str]:
    """Every text Slack parses as mrkdwn: message `text` and mrkdwn text objects."""
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
            out.append(node["text"])
        for value in node.values():
            _mrkdwn_texts(value, out)
    elif isinstance(node, list):
        for value in node:
            _mrkdwn_texts(value, out)
    return out


@pytest.mark.parametrize("text", [UNICODE, MRKDWN], ids=["unicode", "mrkdwn"])
def test_answers_round_trip_intact_and_never_become_markup(stack: FaultStack, ledger: Ledger, text: str) -> None:
    ctx = Ctx(stack, random.Random(ledger.seed), ledger)
    options = ["\U0001f534 Red", "\u202eneerG", "Blue\u200b"] if text == UNICODE else ["<!here>", "*Bold*", "a & b"]
    run = ctx.start(reason=f"Pick one: {text}", options=options, say=text)
    q = ctx.question(run)
    mark = stack.mark()
    ctx.post(ctx.payload(run, q, options[1], note=text))
    ledger.fault("hostile: unicode and mrkdwn in answers")
    ctx.wait_status(run, "succeeded")
    assert stack.redis is not None
    record = json.loads(stack.redis.hget(f"parley:interrupt:{ctx.interrupt_id(run)}", "answers"))
    assert {a["id"]: a.get("choice", a.get("free_text")) for a in record} == {"colour": options[1], "note": text}
    assert ctx.result(run) == f"colour {options[1]}, note {text}"

    locked = stack.wait_call("chat.update", lambda c: c["args"].get("ts") == q["ts"], since=mark)
    shown = "\n".join(_mrkdwn_texts(locked["args"]["blocks"], []))
    assert mrkdwn_escape(text) in shown and mrkdwn_escape(options[1]) in shown
    thread = stack.thread(run)
    final = next(m for m in thread if m["text"].startswith(":white_check_mark:"))
    assert final["text"] == f":white_check_mark: Done: colour {mrkdwn_escape(options[1])}, note {mrkdwn_escape(text)}"
    # Nothing the agent or a person typed reached Slack as a mention, a broadcast or a link.
    for message in [stack.message(run, run.root_ts), *thread]:
        for parsed in [message["text"], *_mrkdwn_texts(message.get("blocks", []), [])]:
            for control in CONTROLS:
                assert control not in parsed, (control, parsed[:300])
    ctx.checker.check([run])
