"""The `Interactor` contract: one suite every host passes, driven through the real runtime.

Each host (Slack, the API question host, the terminal, the log) runs the same scenarios: runs
of small test agents on the test Redis, executed by an in-process RQ worker, answered,
cancelled and escalated through the runtime's own functions. A driver per host builds it on
real parts and reads back what it showed; "shown" is defined per host:

- Slack and the API host: the Web API stand-in's calls. Every `chat.postMessage` is shown; a
  `chat.update` is shown when it changes what that message shows (the same content again shows
  nothing new, as Slack's message then looks the same).
- The terminal: every non-empty line printed (a line printed again is shown again).
- The log: every distinct `parley.host` record, message and fields (a record repeated word for
  word tells the reader nothing new).

A new host (email, Teams, a web page) implements `Interactor` and adds its driver here.
"""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import agents_for_tests  # noqa: F401  (registers t-ask, t-each)
import pytest
from effect_counters import bump
from prompt_toolkit.application import create_app_session
from prompt_toolkit.output.plain_text import PlainTextOutput
from redis import Redis
from runtime_helpers import work
from slack_payloads import BOT_TOKEN
from slack_sdk import WebClient
from terminal_support import ScriptedPrompter

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from bot.playground.workspace import TEAM_ID
from bot.slack.api_host import ApiQuestionHost
from bot.slack.host import SlackHost
from bot.terminal import TerminalHost
from workers import agent
from workers.interaction import Answer, Interactor, Item, ItemType, Outcome, PausingRun, Request
from workers.runtime import admin
from workers.runtime.acceptance import accept
from workers.runtime.group_close import progress_of
from workers.runtime.host import LogHost
from workers.runtime.people import escalate_due, reassign
from workers.runtime.queues import enqueue_run
from workers.runtime.wiring import Runtime, RuntimeSettings, install
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

STARTER = "U0BOB"
ASKED = "Pick a colour"  # the reason of the test agents' question (agents_for_tests._colour)
FACTS: dict[str, dict[str, str]] = {}
"""run id -> the facts `t-contract-bound` decides on now; the agent moves them once."""


@agent("t-contract-bound")
def bound_agent(run: Any, text: str) -> str:
    """Asks for a colour on its facts; the first time the answer comes back, the facts move and the
    execution fails (retried), so the replay finds the answer given on other facts: it is superseded."""
    item = Item(id="colour", text="Colour", type=ItemType.SELECT, options=["red", "green"])
    answer = run.ask(Request(reason=ASKED, items=[item]), key="colour", context=FACTS[run.run_id])
    if not run.context_changed("colour") and bump(run.data_dir, run.run_id, "moved") == 1:
        FACTS[run.run_id] = {**FACTS[run.run_id], "version": "v2"}
        raise ConnectionError("the facts moved while the answer was on its way")
    return f"colour {answer['colour']}"


@agent("t-contract-lost")
def lost_agent(run: Any, text: str) -> str:
    """Asks for a colour; the first execution that gets the answer fails (retried) and the replay goes on."""
    item = Item(id="colour", text="Colour", type=ItemType.SELECT, options=["red", "green"])
    answer = run.ask(Request(reason=ASKED, items=[item]))
    if bump(run.data_dir, run.run_id, "lost") == 1:
        raise ConnectionError("the worker lost the run after the answer")
    return f"colour {answer['colour']}"


# ---- drivers: each host on real parts, and what it showed --------------------------------------
class Driver:
    """One host under test: how its runs' conversations look and what it showed so far."""

    kind = ""
    synchronous = False  # answers in `solicit` (the terminal) rather than pausing
    host: Interactor

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.stack = ExitStack()

    def conversation(self) -> dict[str, Any]:
        raise NotImplementedError

    def shown(self) -> list[str]:
        """Everything the host showed, oldest first, per this host's meaning of "shown"."""
        raise NotImplementedError

    def will_answer(self, *values: Any) -> None:
        """What the person at a synchronous host gives for the next questions (an exception: quits)."""

    def asked(self, reason: str) -> list[str]:
        """The entries of `shown` that put a question with this reason to people."""
        raise NotImplementedError

    def register(self, host: Interactor) -> None:
        self.rt.hosts.register(self.kind, host)


class SlackDriver(Driver):
    kind = "slack"

    def __init__(self, rt: Runtime) -> None:
        super().__init__(rt)
        self.ws = Workspace()
        api = self.stack.enter_context(LoopbackServer(make_webapi_app(self.ws)))
        self.web = WebClient(token=BOT_TOKEN, base_url=api.url + "/api/")
        self.host = self.make_host()
        self.register(self.host)

    def make_host(self) -> Interactor:
        return SlackHost(self.web, self.rt.store)

    def conversation(self) -> dict[str, Any]:
        return {"host": self.kind, "team": TEAM_ID, "channel": "C0GENERAL"}

    def shown(self) -> list[str]:
        out: list[str] = []
        now: dict[tuple[str, str], str] = {}
        for call in self.ws.calls():
            args = call["args"]
            if call["error"] or call["method"] not in ("chat.postMessage", "chat.update"):
                continue
            blocks = args.get("blocks")
            content = f"{args.get('text', '')} {blocks if isinstance(blocks, str) else json.dumps(blocks)}"
            if call["method"] == "chat.postMessage":
                out.append(f"post in {args['channel']}: {content}")
            elif now.get((args["channel"], args["ts"])) != content:
                now[(args["channel"], args["ts"])] = content
                out.append(f"update of {args['ts']}: {content}")
        return out

    def asked(self, reason: str) -> list[str]:
        return [e for e in self.shown() if e.startswith("post in") and reason in e]


class ApiDriver(SlackDriver):
    kind = "api"

    def make_host(self) -> Interactor:
        return ApiQuestionHost(self.web, self.rt.store)


class TerminalDriver(Driver):
    kind = "terminal"
    synchronous = True

    def __init__(self, rt: Runtime) -> None:
        super().__init__(rt)
        self.printed = io.StringIO()
        self.stack.enter_context(create_app_session(output=PlainTextOutput(self.printed)))
        self.prompter = ScriptedPrompter({"colour": []})
        self.host = TerminalHost(self.prompter)
        self.register(self.host)

    def conversation(self) -> dict[str, Any]:
        return {"host": self.kind}

    def will_answer(self, *values: Any) -> None:
        self.prompter.script["colour"].extend(values)

    def shown(self) -> list[str]:
        return [line for line in self.printed.getvalue().replace("\r\n", "\n").splitlines() if line.strip()]

    def asked(self, reason: str) -> list[str]:
        return [line for line in self.shown() if line == reason]


class LogDriver(Driver):
    kind = "log"

    def __init__(self, rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
        super().__init__(rt)
        self.caplog = caplog
        caplog.set_level(logging.INFO, logger="parley.host")
        self.host = LogHost()
        self.register(self.host)

    def conversation(self) -> dict[str, Any]:
        return {"host": self.kind, "team": "T1"}

    def shown(self) -> list[str]:
        out: list[str] = []
        for record in self.caplog.records:
            if record.name != "parley.host":
                continue
            fields = " ".join(f"{k}={v}" for k, v in sorted(getattr(record, "ctx", {}).items()))
            if (line := f"{record.getMessage()} {fields}") not in out:
                out.append(line)
        return out

    def asked(self, reason: str) -> list[str]:
        return [e for e in self.shown() if e.startswith("question waiting") and f"reason={reason}" in e]


@pytest.fixture(params=["slack", "api", "terminal", "log"])
def d(request: pytest.FixtureRequest, r: Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Driver]:
    settings = RuntimeSettings(
        lease_ttl=5.0, sweep_interval=1.0, retry_delays=(0.0,), requeue_grace=0.0, data_dir=tmp_path
    )
    rt = install(Runtime.build(r, settings=settings))
    driver: Driver
    if request.param == "slack":
        driver = SlackDriver(rt)
    elif request.param == "api":
        driver = ApiDriver(rt)
    elif request.param == "terminal":
        driver = TerminalDriver(rt)
    else:
        driver = LogDriver(rt, caplog)
    with driver.stack:
        yield driver


# ---- helpers -----------------------------------------------------------------------------------
def run_agent(d: Driver, name: str, params: dict[str, Any] | None = None) -> str:
    """Start a run of `name` on the driver's host as the starter and work the queue; returns the run id."""
    run = d.rt.store.create(name, json.dumps(params or {}), STARTER, d.conversation())
    enqueue_run(d.rt.queue, run.id, run.job)
    work(d.rt)
    return run.id


def waiting_on(d: Driver, run_id: str) -> str:
    """The question (or group) the run is paused on; fails unless it is paused."""
    record = d.rt.store.get(run_id)
    assert record.status is RunStatus.PAUSED, (record.status, record.error)
    return record.interrupt


def showing(entries: list[str], text: str) -> list[str]:
    """The entries that mention `text`, whatever its case."""
    return [e for e in entries if text.lower() in e.lower()]


GREEN = [Answer(id="colour", choice="green")]


# ---- the contract ------------------------------------------------------------------------------
def test_a_question_put_pauses_the_run_or_is_answered(d: Driver) -> None:
    d.will_answer("green")
    run_id = run_agent(d, "t-ask")
    record = d.rt.store.get(run_id)
    if d.synchronous:
        assert (record.status, record.result) == (RunStatus.SUCCEEDED, "colour green")
    else:
        question = d.rt.store.interrupt(waiting_on(d, run_id))
        assert question is not None and question.state is InterruptState.OPEN
    assert len(d.asked(ASKED)) == 1


class LosesTheRunOnceShown:
    """The host under test, but the first execution is lost right after the host showed its question
    (as when a worker dies between the post and the park): the runtime retries and replays the run,
    and the replay puts the same question to the same host again."""

    def __init__(self, d: Driver) -> None:
        self.d, self.host = d, d.host
        self.shown_when_lost: list[str] | None = None

    def solicit(self, request: Request, run: PausingRun) -> Outcome:
        outcome = self.host.solicit(request, run)
        if self.shown_when_lost is None:
            self.shown_when_lost = self.d.shown()
            raise ConnectionError("the worker lost the run after showing its question")
        return outcome

    def __getattr__(self, name: str) -> Any:
        return getattr(self.host, name)


@pytest.mark.parametrize("assignees", [[], ["U0CAROL"]], ids=["starter", "assignee"])
def test_a_replay_of_a_shown_question_shows_nothing_new(d: Driver, assignees: list[str]) -> None:
    if d.synchronous:
        pytest.skip("a synchronous host's answers are recorded after solicit returns: a lost run asks again")
    lossy = LosesTheRunOnceShown(d)
    d.register(cast(Interactor, lossy))
    run_id = run_agent(d, "t-ask", {"assignees": assignees})
    waiting_on(d, run_id)
    assert [h.event for h in d.rt.store.history(run_id)].count("retry") == 1  # the run was replayed
    assert lossy.shown_when_lost is not None and len(d.asked(ASKED)) == 1
    assert d.shown() == lossy.shown_when_lost


def test_a_replay_after_the_answer_shows_nothing_again(d: Driver) -> None:
    d.will_answer("green")
    run_id = run_agent(d, "t-contract-lost")
    if not d.synchronous:
        accept(d.rt, waiting_on(d, run_id), STARTER, GREEN)
        work(d.rt)
    record = d.rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "colour green")
    assert [h.event for h in d.rt.store.history(run_id)].count("retry") == 1  # replayed after the answer
    assert len(d.asked(ASKED)) == 1


def test_closed_is_shown_once_even_when_called_twice(d: Driver) -> None:
    d.will_answer(KeyboardInterrupt())  # the person at the terminal quits: the question stays open
    run_id = run_agent(d, "t-ask")
    iid = waiting_on(d, run_id)
    before = d.shown()
    admin.cancel(d.rt, run_id, by="U0ALICE")
    assert d.shown() == before  # the cancel is shown by a worker, not by the process that asked
    work(d.rt)
    closed = d.rt.store.interrupt(iid)
    assert closed is not None and closed.state is InterruptState.CANCELLED
    new = d.shown()[len(before) :]
    assert showing(new, "cancelled"), new
    once = d.shown()
    d.host.question_closed(d.rt.store.get(run_id), closed)  # as a replay of the close does
    assert d.shown() == once


def test_an_answered_close_is_shown_once_even_when_called_twice(d: Driver) -> None:
    if d.synchronous:
        pytest.skip("a synchronous host takes the answer itself: there is no close to show")
    run_id = run_agent(d, "t-ask")
    iid = waiting_on(d, run_id)
    before = d.shown()
    accept(d.rt, iid, STARTER, GREEN)
    work(d.rt)  # the resumed run shows the answer on the question
    answered = d.rt.store.interrupt(iid)
    assert answered is not None and answered.state is InterruptState.ANSWERED
    if not answered.message:
        pytest.skip("the host keeps no message of its questions: the runtime has nothing to update when one closes")
    assert d.rt.store.get(run_id).status is RunStatus.SUCCEEDED
    new = d.shown()[len(before) :]
    assert showing(new, "answered") or showing(new, "closed"), new
    once = d.shown()
    d.host.question_closed(d.rt.store.get(run_id), answered)
    assert d.shown() == once


def test_superseded_is_shown_once_even_when_called_twice(d: Driver) -> None:
    d.will_answer("green", "red")
    run = d.rt.store.create("t-contract-bound", "", STARTER, d.conversation())
    FACTS[run.id] = {"version": "v1"}
    enqueue_run(d.rt.queue, run.id, run.job)
    work(d.rt)
    if not d.synchronous:
        accept(d.rt, waiting_on(d, run.id), STARTER, GREEN)
        work(d.rt)
    q1, q2 = d.rt.store.journal(run.id)["ask:colour"][:2]
    first, again = d.rt.store.interrupt(q1), d.rt.store.interrupt(q2)
    assert first is not None and again is not None
    assert [c.field for c in again.context_changes] == ["version"]
    assert len(showing(d.shown(), "superseded")) == 1
    if d.synchronous:
        assert d.rt.store.get(run.id).result == "colour red"
    once = d.shown()
    d.host.question_superseded(d.rt.store.get(run.id), first, list(again.context_changes))
    assert d.shown() == once


def test_ask_each_progress_is_shown_once_per_answer(d: Driver) -> None:
    d.will_answer("red", KeyboardInterrupt())  # the terminal: the first person answers, the next quits
    run_id = run_agent(d, "t-each", {"assignees": ["U0ALICE", "U0CAROL", "U0BOB"]})
    gid = waiting_on(d, run_id)
    group = d.rt.store.groups.group(gid)
    assert group is not None
    member = next(m for m in d.rt.store.groups.members(group) if m.state is InterruptState.OPEN)
    before = d.shown()
    accept(d.rt, member.id, member.assignees[0], GREEN)
    work(d.rt)  # the answer is shown while the group waits for the rest
    group = d.rt.store.groups.group(gid)
    assert group is not None and group.state == "open"
    progress = progress_of(group, d.rt.store.groups.members(group))
    assert progress.summary == ("2 of 3 answered" if d.synchronous else "1 of 3 answered")
    new = d.shown()[len(before) :]
    assert len(showing(new, progress.summary)) == 1, new
    once = d.shown()
    d.host.group_progress(d.rt.store.get(run_id), group, progress)
    assert d.shown() == once


def test_an_escalation_is_shown_once(d: Driver) -> None:
    d.will_answer(KeyboardInterrupt())
    params = {"assignees": ["U0CAROL"], "escalate_after": 60, "escalate_to": ["U0ALICE"]}
    run_id = run_agent(d, "t-ask", params)
    iid = waiting_on(d, run_id)
    before = d.shown()
    assert escalate_due(d.rt, now=time.time() + 3600) == [iid]
    new = d.shown()[len(before) :]
    assert showing(new, "U0ALICE"), new  # the people added are shown (and, where a host can, told)
    question = d.rt.store.interrupt(iid)
    assert question is not None and "U0ALICE" in question.assignees
    once = d.shown()
    assert escalate_due(d.rt, now=time.time() + 7200) == []  # a later sweep finds it done
    assert d.shown() == once


def test_a_reassignment_is_shown_through_the_runs_own_host(d: Driver) -> None:
    d.will_answer(KeyboardInterrupt())
    run_id = run_agent(d, "t-ask", {"assignees": ["U0CAROL"]})
    question = d.rt.store.interrupt(waiting_on(d, run_id))
    assert question is not None
    before = d.shown()
    moved = reassign(d.rt, question, by="U0CAROL", to="U0ALICE", is_admin=False, to_is_bot=False)
    assert moved.assignees == ["U0ALICE"]
    new = d.shown()[len(before) :]
    assert showing(new, "U0ALICE"), new  # the new person is shown (and, where a host can, told)


TYPED_ASKED = "Scale checkout"
TYPED_ITEMS = [
    Item(id="replicas", text="Replicas", type=ItemType.NUMBER, min=1, max=10, integer=True),
    Item(id="ratio", text="Ratio", type=ItemType.NUMBER, max=1),
    Item(id="go", text="Go ahead?", type=ItemType.BOOLEAN),
    Item(id="contact", text="Contact", type=ItemType.EMAIL),
    Item(id="runbook", text="Runbook", type=ItemType.URL),
    Item(id="at", text="At", type=ItemType.TIME),
    Item(id="start", text="Start", type=ItemType.DATETIME),
]
TYPED_ANSWERS = [
    Answer(id="replicas", number=4),
    Answer(id="ratio", number=0.5),
    Answer(id="go", boolean=False),
    Answer(id="contact", email="ops@example.com"),
    Answer(id="runbook", url="https://example.com/rb"),
    Answer(id="at", time="09:30"),
    Answer(id="start", datetime="2026-12-04T17:30:00Z"),
]


@agent("t-contract-typed")
def typed_agent(run: Any, text: str) -> str:
    """Asks one of each new item type and reports the values with their Python types."""
    answers = run.ask(Request(reason=TYPED_ASKED, items=TYPED_ITEMS))
    return ", ".join(f"{k}={v!r}:{type(v).__name__}" for k, v in answers.items())


def test_every_item_type_is_asked_refused_by_label_and_returned_typed(d: Driver) -> None:
    from workers.runtime.acceptance import AcceptRefused

    if isinstance(d, TerminalDriver):
        d.prompter.script.update({a.id: [a.value] for a in TYPED_ANSWERS})
        d.prompter.script["replicas"].insert(0, 11)  # refused, then asked again
    run_id = run_agent(d, "t-contract-typed")
    if not d.synchronous:
        wrong = [Answer(id="replicas", number=11), *TYPED_ANSWERS[1:]]
        with pytest.raises(AcceptRefused) as refused:
            accept(d.rt, waiting_on(d, run_id), STARTER, wrong)
        assert dict(refused.value.refusal.errors) == {"replicas": "at most 10"}
        assert refused.value.refusal.labels["replicas"] == "Replicas"
        accept(d.rt, waiting_on(d, run_id), STARTER, TYPED_ANSWERS)
        work(d.rt)
    elif isinstance(d, TerminalDriver):
        assert d.prompter.problems == [("replicas", "at most 10")]
    record = d.rt.store.get(run_id)
    assert record.status is RunStatus.SUCCEEDED, record.error
    assert record.result == (
        "replicas=4:int, ratio=0.5:float, go=False:bool, contact='ops@example.com':str, "
        "runbook='https://example.com/rb':str, at='09:30':str, start='2026-12-04T17:30:00Z':str"
    )
    assert len(d.asked(TYPED_ASKED)) == 1
