"""The terminal host: its controls driven in-process, and `parley run` end to end in a real pty.

The in-process tests feed keystrokes to each control through a pipe input. The
pty tests run the real `parley run ticket ...` command against the test Redis
and answer its questions the way a person would: arrow keys, Space, typed replies,
Esc then Enter to finish a multiline answer.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pexpect
import pytest
import redis
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rq.job import Job
from rq.registry import ScheduledJobRegistry
from terminal_support import (
    CLEAR,
    DOWN,
    FINISH,
    TIMEOUT,
    UP,
    finish,
    parley_command,
    parley_env,
    spawn_run,
    started_run,
    stored_run,
)

from bot.terminal import TerminalHost, TerminalPrompter, parse_choices
from parley.identity import os_user
from parley.terminal import conclude, execute_inline
from workers.agents.ticket import details_request
from workers.agents.tracker import read_tickets
from workers.exceptions import AgentError
from workers.interaction import AnswerValue, ChoiceError, Item, ItemType, Request
from workers.registry import AgentFn, AgentRegistry, AgentSpec
from workers.runtime.host import HostRouter
from workers.runtime.wiring import Runtime, RuntimeSettings
from workers.store.records import RunStatus

TICKET = {i.id: i for i in details_request("Create ticket for login issue").items}


def answer(item: Item, keys: str) -> AnswerValue:
    """What `item`'s control returns after `keys`; the input then ends, so a stuck control raises EOFError."""
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        pipe.close()
        with create_app_session(input=pipe, output=DummyOutput()):
            return TerminalPrompter().ask(item)


# ---- the controls, in-process ------------------------------------------------------
def test_select_starts_on_the_default_and_moves_with_the_arrow_keys() -> None:
    assert answer(TICKET["affected"], "\r") == "All users"
    assert answer(TICKET["affected"], DOWN + DOWN + "\r") == "One customer"
    assert answer(TICKET["affected"], UP + "\r") == "Internal only"  # wraps around


@pytest.mark.parametrize(
    ("typed", "value"), [("2", "sev2"), ("high", "sev2"), ("med", "sev3"), ("the last one", "sev4")]
)
def test_select_takes_a_typed_reply(typed: str, value: str) -> None:
    assert answer(TICKET["severity"], typed + "\r") == value


def test_select_refuses_a_reply_that_names_no_option_until_it_is_fixed() -> None:
    assert answer(TICKET["severity"], "9\r" + CLEAR + "low\r") == "sev4"
    with pytest.raises(EOFError):  # nothing accepted "9"
        answer(TICKET["severity"], "9\r")


def test_arrow_keys_replace_a_half_typed_reply() -> None:
    assert answer(TICKET["severity"], "zz" + DOWN + "\r") == "sev2"


def test_an_optional_select_can_be_skipped() -> None:
    item = Item(id="env", text="Environment", type=ItemType.SELECT, options=["prod", "staging"], required=False)
    assert answer(item, "\r") is None
    assert answer(item, UP + UP + "\r") == "prod"
    assert answer(item, "staging\r") == "staging"


def test_multi_select_ticks_with_space_and_confirms_with_enter() -> None:
    assert answer(TICKET["components"], " " + DOWN + DOWN + " \r") == ["Login", "Web app"]
    assert answer(TICKET["components"], " " + " " + DOWN + " \r") == ["API"]  # ticking twice unticks


def test_multi_select_takes_typed_numbers_and_names() -> None:
    assert answer(TICKET["components"], "web app, 2\r") == ["API", "Web app"]
    assert answer(TICKET["components"], "1 6\r") == ["Login", "Notifications"]


def test_multi_select_refuses_none_when_required() -> None:
    assert answer(TICKET["components"], "\r" + " \r") == ["Login"]
    with pytest.raises(EOFError):
        answer(TICKET["components"], "\r")
    optional = TICKET["components"].model_copy(update={"required": False})
    assert answer(optional, "\r") == []


def test_multi_select_starts_with_its_defaults_ticked() -> None:
    item = Item(id="c", text="C", type=ItemType.MULTI_SELECT, options=["a", "b", "c"], default=["b"])
    assert answer(item, "\r") == ["b"]
    assert answer(item, " \r") == ["a", "b"]


def test_parse_choices() -> None:
    item = TICKET["components"]
    assert parse_choices(item, "api; login") == ["Login", "API"]
    assert parse_choices(item, "3,3") == ["Web app"]
    with pytest.raises(ChoiceError, match="not one of the options"):
        parse_choices(item, "api, nothing like it")


def test_free_text_multiline_needs_esc_enter_and_an_answer() -> None:
    assert answer(TICKET["description"], "first\rsecond" + FINISH) == "first\nsecond"
    assert answer(TICKET["description"], FINISH + "now" + FINISH) == "now"
    with pytest.raises(EOFError):
        answer(TICKET["description"], "   " + FINISH)


def test_free_text_is_prefilled_with_its_default_and_checked_against_its_limit() -> None:
    item = Item(id="t", text="Title", type=ItemType.FREE_TEXT, default="Login fails", max_length=15)
    assert answer(item, "\r") == "Login fails"
    assert answer(item, " on Safari\r" + "\x08" * 7 + "\r") == "Login fails on"


def test_date_is_checked_and_may_be_skipped_when_optional() -> None:
    assert answer(TICKET["due"], "2026-13-45\r" + CLEAR + "2026-12-01\r") == "2026-12-01"
    assert answer(TICKET["due"], "\r") is None
    required = Item(id="d", text="When", type=ItemType.DATE, default="2026-01-31")
    assert answer(required, "\r") == "2026-01-31"


# ---- the host's loop --------------------------------------------------------------
class ScriptedPrompter:
    """Answers from a script per item id, recording what was asked and what was refused."""

    def __init__(self, script: dict[str, list[AnswerValue | BaseException]]) -> None:
        self.script = script
        self.asked: list[str] = []
        self.problems: list[tuple[str, str]] = []

    def ask(self, item: Item) -> AnswerValue:
        self.asked.append(item.id)
        value = self.script[item.id].pop(0)
        if isinstance(value, BaseException):
            raise value
        return value

    def problem(self, item: Item, message: str) -> None:
        self.problems.append((item.id, message))


class FakeRun:
    run_id = "r-test"
    started_by = "tester"
    conversation = {"host": "terminal"}
    interrupt_id = "q-test"


def test_the_host_asks_again_only_the_items_validation_refused() -> None:
    request = Request(
        reason="Details?",
        items=[
            Item(id="title", text="Title", type=ItemType.FREE_TEXT, max_length=5),
            Item(id="size", text="Size", type=ItemType.SELECT, options=["S", "M"]),
        ],
    )
    prompter = ScriptedPrompter({"title": ["far too long", "short"], "size": ["M"]})
    outcome = TerminalHost(prompter).solicit(request, FakeRun())
    assert not outcome.paused
    assert {a.id: a.value for a in outcome.answers} == {"title": "short", "size": "M"}
    assert prompter.asked == ["title", "size", "title"]
    assert prompter.problems == [("title", "text is 12 characters, over the limit of 5")]


def test_quitting_pauses_the_run_on_its_question() -> None:
    request = Request(reason="Details?", items=[TICKET["due"]])
    for quit_with in (KeyboardInterrupt(), EOFError()):
        host = TerminalHost(ScriptedPrompter({"due": [quit_with]}))
        assert host.solicit(request, FakeRun()).paused  # the runtime parks it, open, as any host's
        assert host.stopped == {"r-test"}


# ---- executing inline -------------------------------------------------------------
def inline_runtime(r: redis.Redis, tmp_path: Path, agent: AgentFn) -> tuple[Runtime, TerminalHost]:
    registry = AgentRegistry()
    registry.add(AgentSpec(name="probe", description="", fn=agent))
    host = TerminalHost(ScriptedPrompter({}))
    # A retry delay, so the retry job is scheduled rather than queued: a worker of another test
    # sharing this Redis must not take it before this process withdraws it.
    settings = RuntimeSettings(retry_delays=(0.5,), data_dir=tmp_path)
    return Runtime.build(r, hosts=HostRouter({"terminal": host}), settings=settings, registry=registry), host


def test_a_retryable_failure_is_retried_inline(r: redis.Redis, tmp_path: Path) -> None:
    calls: list[str] = []

    def flaky(run: object, text: str) -> str:
        calls.append(text)
        if len(calls) == 1:
            raise ConnectionError("tracker unreachable")
        return f"done: {text}"

    runtime, host = inline_runtime(r, tmp_path, flaky)
    run_id = runtime.store.create("probe", "x", "tester", {"host": "terminal"}).id
    final = execute_inline(runtime, host, run_id)
    assert (final.status, final.result, final.failures) == (RunStatus.SUCCEEDED, "done: x", 1)
    assert calls == ["x", "x"]
    assert not Job.exists(f"retry-{run_id}-1", connection=r)  # no worker races this process for the retry
    assert f"retry-{run_id}-1" not in ScheduledJobRegistry(queue=runtime.queue).get_job_ids()
    assert conclude(runtime, host, final) == 0


def test_a_failed_run_ends_the_command_with_status_1(r: redis.Redis, tmp_path: Path) -> None:
    def refuses(run: object, text: str) -> str:
        raise AgentError("nothing to do")

    runtime, host = inline_runtime(r, tmp_path, refuses)
    run_id = runtime.store.create("probe", "x", "tester", {"host": "terminal"}).id
    final = execute_inline(runtime, host, run_id)
    assert (final.status, final.error) == (RunStatus.FAILED, "nothing to do")
    assert run_id in host.reported  # the host printed the failure as it happened
    assert conclude(runtime, host, final) == 1


def test_the_terminal_user_is_a_valid_user_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("getpass.getuser", lambda: "DOMAIN\\jane doe")
    assert os_user() == "DOMAIN_jane_doe"


# ---- `parley run` in a real terminal ------------------------------------------------
def test_parley_run_ticket_in_a_terminal(redis_url: str, tmp_path: Path) -> None:
    term = spawn_run(redis_url, tmp_path, "ticket", "Create ticket for login issue")
    run_id = started_run(term)
    term.expect_exact("I'm filing a ticket for: Create ticket for login issue")

    term.expect_exact("? Describe the bug")
    term.expect_exact("Esc then Enter")
    term.send("Login fails on Safari.\rThe button does nothing.")
    term.send(FINISH)

    term.expect_exact("? Who is affected?")
    term.send(DOWN)
    term.send("\r")
    term.expect_exact("Who is affected? Some users")

    term.expect_exact("? Severity")
    term.send("2\r")
    term.expect_exact("Severity: High")

    term.expect_exact("? Components")
    term.send(" ")
    term.send(DOWN + DOWN)
    term.send(" ")
    term.send("\r")
    term.expect_exact("Components: Login, Web app")

    term.expect_exact("? Due date")
    term.send("2026-12-01\r")

    term.expect_exact("Done: Created PAR-1: Create ticket for login issue. Severity High, affects Some users")
    assert finish(term) == 0

    tickets = read_tickets(tmp_path / "tickets.jsonl")
    assert len(tickets) == 1
    ticket = tickets[0]
    assert ticket["id"] == "PAR-1"
    assert ticket["run_id"] == run_id
    assert ticket["description"] == "Login fails on Safari.\nThe button does nothing."
    assert (ticket["affected"], ticket["severity"], ticket["due"]) == ("Some users", "sev2", "2026-12-01")
    assert ticket["components"] == ["Login", "Web app"]
    status, events = stored_run(redis_url, run_id)
    assert status is RunStatus.SUCCEEDED
    assert "answered" in events


def test_parley_run_refuses_bad_answers_with_the_reason_and_asks_again(redis_url: str, tmp_path: Path) -> None:
    term = spawn_run(redis_url, tmp_path, "ticket", "Create ticket for login issue")
    run_id = started_run(term)

    term.expect_exact("? Describe the bug")
    term.send(FINISH)  # nothing typed
    term.expect_exact("an answer is required")
    term.send("Nothing happens on submit." + FINISH)

    term.expect_exact("? Who is affected?")
    term.send("\r")  # the default
    term.expect_exact("Who is affected? All users")

    term.expect_exact("? Severity")
    term.send("9\r")
    term.expect_exact("There is no option 9: choose a number from 1 to 4")
    term.send(CLEAR + "high\r")
    term.expect_exact("Severity: High")

    term.expect_exact("? Components")
    term.send("\r")  # nothing ticked
    term.expect_exact("an answer is required: tick at least one")
    term.send("api, mobile\r")
    term.expect_exact("Components: API, Mobile app")

    term.expect_exact("? Due date")
    term.send("2026-13-45\r")
    term.expect_exact("'2026-13-45' is not a date in YYYY-MM-DD form")
    term.send(CLEAR + "\r")  # optional: skip it

    term.expect_exact("Done: Created PAR-1")
    assert finish(term) == 0
    [ticket] = read_tickets(tmp_path / "tickets.jsonl")
    assert ticket["description"] == "Nothing happens on submit."
    assert (ticket["affected"], ticket["severity"], ticket["due"]) == ("All users", "sev2", None)
    assert ticket["components"] == ["API", "Mobile app"]
    assert stored_run(redis_url, run_id)[0] is RunStatus.SUCCEEDED


def test_parley_run_without_redis_url_uses_the_embedded_redis(tmp_path: Path) -> None:
    env = parley_env("", tmp_path)
    del env["REDIS_URL"]
    command = parley_command()
    term = pexpect.spawn(
        command[0], [*command[1:], "run", "deploy", "api v1.4.2"], env=env, encoding="utf-8", timeout=TIMEOUT
    )
    term.expect_exact("? Decision")
    term.send("approve\r")
    term.expect_exact("? Reason")
    term.send("\r")
    term.expect_exact("Done: Deployment of api v1.4.2 approved and recorded.")
    assert finish(term) == 0
    assert (tmp_path / "redis.log").exists()  # the embedded server ran in the data dir
    [entry] = [json.loads(line) for line in (tmp_path / "deployments.jsonl").read_text().splitlines()]
    assert (entry["target"], entry["decision"]) == ("api v1.4.2", "approve")


def test_parley_run_of_an_unknown_agent_lists_the_agents(redis_url: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*parley_command(), "run", "nosuchagent", "x"],
        env=parley_env(redis_url, tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    message = done.stdout + done.stderr
    assert re.search(r"unknown agent 'nosuchagent'; known agents: .*deploy.*ticket", message), message
