"""Agents the Slack end-to-end tests start with `/parley`: `PARLEY_AGENTS=slack_agents`, tests on PYTHONPATH.

Each takes its parameters as JSON at the start of the run's text (`{"assignees": ["U0BOB"]} tag`);
whatever follows the JSON is a tag that keeps each test's run and thread apart.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from effect_counters import bump
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from workers import agent
from workers.interaction import Item, ItemType, Option, Request

NASTY = "<!channel> <@U123> Tom & Jerry <https://evil.example|click>"
"""Agent text that would ping, mention and link if it reached mrkdwn unescaped."""


def params(text: str) -> dict[str, Any]:
    text = text.strip()
    if not text.startswith("{"):
        return {}
    obj, _ = json.JSONDecoder().raw_decode(text)
    return obj


def _request(p: dict[str, Any], items: list[Item], reason: str) -> Request:
    return Request(
        reason=p.get("reason", reason),
        items=items,
        assignees=p.get("assignees", []),
        expires_in=p.get("expires_in"),
        escalate_after=p.get("escalate_after"),
        escalate_to=p.get("escalate_to", []),
        claim=p.get("claim", False),
    )


COLOURS = ["Red", "Green", "Blue"]


def form_request(p: dict[str, Any]) -> Request:
    """A two-item form (Submit button): a required colour and an optional note."""
    return _request(
        p,
        [
            Item(id="colour", text="Colour", type=ItemType.SELECT, options=COLOURS),
            Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
        ],
        "Pick a colour",
    )


@agent("s-form", description="Asks one two-item form and reports the answers")
def form_agent(run: Any, text: str) -> str:
    answers = run.ask(form_request(params(text)))
    return f"colour {answers['colour']}, note {answers['note'] or '-'}"


TARGETS = ["Staging EU", "Staging US", "Production"]


@agent("s-pick", description="Asks for one of three targets (one click, or a typed reply in the thread)")
def pick_agent(run: Any, text: str) -> str:
    p = params(text)
    item = Item(id="target", text="Where should it go?", type=ItemType.SELECT, options=p.get("options", TARGETS))
    answers = run.ask(_request(p, [item], "Choose a target"))
    return f"picked {answers['target']}"


TYPED_ITEMS = [
    Item(id="replicas", text="Replicas", type=ItemType.NUMBER, min=1, max=10, integer=True),
    Item(id="ratio", text="Ratio", type=ItemType.NUMBER, max=1, required=False),
    Item(id="go", text="Go ahead?", type=ItemType.BOOLEAN),
    Item(id="notify", text="Notify?", type=ItemType.BOOLEAN, required=False),
    Item(id="contact", text="Contact", type=ItemType.EMAIL),
    Item(id="runbook", text="Runbook", type=ItemType.URL, required=False),
    Item(id="at", text="At", type=ItemType.TIME, required=False),
    Item(id="start", text="Start", type=ItemType.DATETIME, required=False),
]


@agent("s-typed", description="Asks a number, yes/no, email, URL, time and date-and-time, and reports them typed")
def typed_agent(run: Any, text: str) -> str:
    p = params(text)
    items = [i for i in TYPED_ITEMS if i.id in p.get("items", [i.id for i in TYPED_ITEMS])]
    answers = run.ask(_request(p, items, "Deploy checkout"))
    return "; ".join(f"{k}={v!r}:{type(v).__name__}" for k, v in answers.items())


LONG_LABEL = "Region {n:03d} " + "with a long descriptive name " * 3


@agent("s-many", description="Asks a select with 100 long options, so Slack loads them as you type")
def many_agent(run: Any, text: str) -> str:
    options = [
        Option(value=f"region-{n:03d}", label=LONG_LABEL.format(n=n)[:75], description=("Datacentre " * 10)[:75])
        for n in range(100)
    ]
    item = Item(id="region", text="Region", type=ItemType.SELECT, options=options)
    note = Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False)
    answers = run.ask(_request(params(text), [item, note], "Which region?"))
    return f"region {answers['region']}"


def _wait_for_gate(path: Path, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gate {path} never opened")
        time.sleep(0.05)
    return True


@agent("s-gate", description="Waits for the test to open its gate file, then asks the s-form question")
def gate_agent(run: Any, text: str) -> str:
    p = params(text)
    run.step("gate", lambda: _wait_for_gate(run.data_dir / "gates" / p["gate"]))
    answers = run.ask(form_request(p))
    return f"colour {answers['colour']}"


@agent("s-escape", description="Says, asks and answers with text that must never become markup")
def escape_agent(run: Any, text: str) -> str:
    long_text = (NASTY + " ") * 60
    run.say(NASTY)
    run.say(long_text[:3000])
    reason = (f"{NASTY} needs an answer. " + long_text)[:3000]
    items = [
        Item(id="why", text=f"Why? {NASTY}", type=ItemType.FREE_TEXT, multiline=True),
        Item(
            id="pick",
            text=f"Pick {NASTY}",
            type=ItemType.SELECT,
            options=[Option(value="a", label="<!channel> & <@U123>"), Option(value="b", label="Tom & Jerry")],
        ),
    ]
    answers = run.ask(_request(params(text), items, reason))
    return f"{NASTY} answered {answers['why']} / {answers['pick']}"


@agent("s-team", description="Asks which team, whose names hold &, < and >, and reports it")
def team_agent(run: Any, text: str) -> str:
    teams = ["R&D", "Sales & Marketing", "<none>"]
    item = Item(id="team", text="Which team?", type=ItemType.SELECT, options=teams)
    answers = run.ask(_request(params(text), [item], "Which team runs it?"))
    return f"team {answers['team']}"


@agent("s-huge", description="Asks a question too big for any Slack message")
def huge_agent(run: Any, text: str) -> str:
    def big(n: int) -> Item:
        options = [Option(value=f"v{n}-{k}", label=f"{k:03d} " + "x" * 71, description="d" * 75) for k in range(100)]
        return Item(
            id=f"big{n}",
            text=f"Big {n}",
            type=ItemType.MULTI_SELECT,
            options=options,
            default=[o.value for o in options],
        )

    run.ask(_request(params(text), [big(1), big(2)], "Everything at once"))
    return "unreachable"


@agent("s-bound", description="Reads its facts from a file on every replay, asks to approve them, then acts once")
def bound_agent(run: Any, text: str) -> str:
    """The facts come from `facts/<name>` in the data directory, read live (not in a `run.step`), so a
    change between the question and the answer voids the answer; the act is counted in `act`."""
    p = params(text)
    facts = json.loads((run.data_dir / "facts" / p["facts"]).read_text())
    items = [
        Item(id="decision", text="Decision", type=ItemType.SELECT, options=["Approve", "Reject"]),
        Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
    ]
    answers = run.ask(_request(p, items, "Approve this deployment?"), key="approval", context=facts)
    if answers["decision"] != "Approve":
        return "rejected"
    run.step("act", lambda: bump(run.data_dir, run.run_id, "act"))
    again = " after the facts changed" if run.context_changed("approval") else ""
    return f"deployed {facts['service']} {facts['version']}{again}"


def _decision(reason: str, who: list[str]) -> Request:
    """An approval with a note: answered with Submit (two items, so no one-click buttons)."""
    items = [
        Item(id="decision", text="Decision", type=ItemType.SELECT, options=["Approve", "Reject"]),
        Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
    ]
    return Request(reason=reason, items=items, assignees=who)


@agent("s-all", description="Counts its executions, records an effect once, then asks two people at once")
def all_agent(run: Any, text: str) -> str:
    """`{"a": user, "b": user}`: a deploy question to a and a migration question to b, posted together."""
    p = params(text)
    bump(run.data_dir, run.run_id, "exec")
    run.step("effect", lambda: bump(run.data_dir, run.run_id, "effect"))
    got = run.ask_all({"deploy": _decision("Deploy?", [p["a"]]), "db": _decision("Migrate the database?", [p["b"]])})
    return f"deploy {got['deploy']['decision']}, db {got['db']['decision']}"


@agent("s-any", description="Asks two people at once and goes on with the first answer")
def any_agent(run: Any, text: str) -> str:
    p = params(text)
    bump(run.data_dir, run.run_id, "exec")
    key, got = run.ask_any({"first": _decision("Who takes it?", [p["a"]]), "second": _decision("Or you?", [p["b"]])})
    return f"{key} {got['decision']}"


@agent("s-each", description="Asks each person separately and goes on at the quorum")
def each_agent(run: Any, text: str) -> str:
    p = params(text)
    bump(run.data_dir, run.run_id, "exec")
    timing = {k: p[k] for k in ("expires_in", "escalate_after", "escalate_to", "last_call") if k in p}
    request = _decision("Approve the release?", p["people"]).model_copy(
        update={"show_answers": p.get("show", False), **timing}
    )
    got = run.ask_each(request, quorum=p.get("quorum"))
    return "; ".join(f"{user}: {answers['decision']}" for user, answers in sorted(got.items()))


@agent("s-twice", description="Asks the s-form question twice, as two questions, and reports both colours")
def twice_agent(run: Any, text: str) -> str:
    first = run.ask(form_request(params(text)), key="first")
    second = run.ask(form_request(params(text)), key="second")
    return f"colours {first['colour']} then {second['colour']}"


class Window(BaseModel):
    """A maintenance window: `ask_form` asks its fields, its own validator checks them together."""

    team: Literal["core", "web"] = Field(title="Team")
    note: str = Field(title="Note", min_length=3, description="What happens in the window")
    starts: str = Field(title="Starts", pattern=r"^\d\d:\d\d$")
    ends: str = Field(title="Ends", pattern=r"^\d\d:\d\d$")

    @field_validator("ends")
    @classmethod
    def _after_start(cls, ends: str, info: ValidationInfo) -> str:
        if ends <= str(info.data.get("starts", "")):
            raise ValueError("the window must end after it starts")
        return ends


@agent("s-window", description="Asks for a maintenance window with run.ask_form and reports it")
def s_window(run: Any, text: str) -> str:
    window = run.ask_form(Window, reason="Plan the maintenance window", assignees=params(text).get("assignees", []))
    assert isinstance(window, Window)
    return f"window for {window.team}: {window.starts}-{window.ends} ({window.note})"


@agent("s-approve", description="Asks to approve scaling a service, then reports the decision")
def approve_agent(run: Any, text: str) -> str:
    p = params(text)
    decision = run.approve(
        "Scale api", {"service": "api", "replicas": 3}, editable=False, assignees=p.get("assignees", [])
    )
    return f"approved: {decision.approved}"


@agent("s-each-claim", description="Asks each person separately with a Claim button, which ask_each refuses")
def each_claim_agent(run: Any, text: str) -> str:
    p = params(text)
    bump(run.data_dir, run.run_id, "exec")
    got = run.ask_each(_decision("Approve the release?", p["people"]).model_copy(update={"claim": True}))
    return "; ".join(f"{user}: {answers['decision']}" for user, answers in sorted(got.items()))


@agent("s-any-claim", description="Asks the channel, to be claimed, and one person at once; goes on with the first")
def any_claim_agent(run: Any, text: str) -> str:
    p = params(text)
    bump(run.data_dir, run.run_id, "exec")
    channel = _decision("Who takes the pager?", []).model_copy(update={"claim": True})
    key, got = run.ask_any({"channel": channel, "person": _decision("Or you?", [p["b"]])})
    return f"{key} {got['decision']}"
