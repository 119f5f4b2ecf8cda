"""What a step's function makes is counted, so a replay that skips it numbers the rest alike.

Each agent here does something inside `run.step`'s function, or in the branch `run.recorded`
guards, then parks on a later question. The replay after the answer skips that function or
branch, and must still add each history entry once, give each ask its own answer, and open a
secret asked there for `run.secret`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from llm_standin import ChatStandin, call, calls, final
from redis import Redis
from runtime_helpers import history_events, make_runtime, parked, paused, runtime_and_host, said, start, work

from workers import ABSENT, agent
from workers.interaction import Answer, Item, ItemType, Request
from workers.llm import Tool, llm_config_from_env, run_loop
from workers.runtime.acceptance import accept
from workers.runtime.tally import _OPEN as open_branches
from workers.store.records import RunStatus

pytestmark = pytest.mark.integration

TRIES: dict[str, int] = {}
LOGINS: list[str] = []
TOKEN = Request(reason="Token?", items=[Item(id="token", text="Token", type=ItemType.SECRET)])


def _free(reason: str) -> Request:
    return Request(reason=reason, items=[Item(id="v", text="Value", type=ItemType.FREE_TEXT)])


def _answer(rt: Any, run_id: str, value: str) -> None:
    accept(rt, paused(rt, run_id), "U1", [Answer(id="v", free_text=value)])
    work(rt)


@agent("t-history-in-a-step")
def _history_in_a_step(run: Any, text: str) -> str:
    def fetch() -> str:
        run.history("fetching")
        TRIES[run.run_id] = TRIES.get(run.run_id, 0) + 1
        if TRIES[run.run_id] == 1:
            raise RuntimeError("the first try fails")  # retried: the function runs again
        return str(run.ask(_free("Which?"))["v"])  # parks: the function runs again on resume

    got = run.step("fetch", fetch)
    run.history("fetched")
    return f"{got} {run.ask(_free('Then?'))['v']}"


def test_a_history_entry_inside_a_step_is_added_once(r: Redis, tmp_path: Path) -> None:
    """A step's function run again (after a failure, or a park inside it) adds its entry once."""
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-history-in-a-step")
    work(rt)
    _answer(rt, run_id, "a")
    _answer(rt, run_id, "b")
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "a b")
    assert len(history_events(rt, run_id, "fetching")) == 1
    assert len(history_events(rt, run_id, "fetched")) == 1


@agent("t-ask-in-a-branch")
def _ask_in_a_branch(run: Any, text: str) -> str:
    first = run.recorded("first", branch=True)
    if first is ABSENT:  # the documented pattern: the step's work done outside its function
        run.say("asking first")
        first = run.ask(_free("First?"))["v"]
        run.step("first", lambda: first)
    run.say("asking second")
    return f"{first} {run.ask(_free('Second?'))['v']}"


def test_an_ask_in_a_recorded_branch_leaves_a_later_ask_its_own_answer(r: Redis, tmp_path: Path) -> None:
    """The replay takes the other branch; the ask after it is not handed the branch's answer."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id, q1 = parked(rt, "t-ask-in-a-branch")
    _answer(rt, run_id, "one")
    q2 = paused(rt, run_id)
    _answer(rt, run_id, "two")
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "one two")
    assert [iid for rid, iid in host.questions if rid == run_id] == [q1, q2]
    assert said(host, run_id) == ["asking first", "asking second"]


@agent("t-secret-in-a-step")
def _secret_in_a_step(run: Any, text: str) -> str:
    run.step("log in", lambda: bool(run.ask(TOKEN)["token"]))
    run.ask(_free("Which account?"))
    return f"{len(run.secret('token'))} characters"


def test_a_secret_asked_inside_a_step_is_read_after_a_later_question(r: Redis, tmp_path: Path) -> None:
    """A replay that skips the step opens its secret again from the sealed copy."""
    rt = make_runtime(r, tmp_path, secret_key=Fernet.generate_key().decode())
    run_id, q1 = parked(rt, "t-secret-in-a-step")
    accept(rt, q1, "U1", [Answer(id="token", secret="hunter2")])
    work(rt)
    _answer(rt, run_id, "main")
    record = rt.store.get(run_id)
    assert (record.status, record.result, record.error) == (RunStatus.SUCCEEDED, "7 characters", "")


@agent("t-llm-secret-later")
def _llm_secret_later(run: Any, text: str) -> str:
    def log_in(code_id: str) -> str:
        LOGINS.append(run.secret(code_id))
        return "logged in"

    parameters = {"type": "object", "properties": {"code_id": {"type": "string"}}, "required": ["code_id"]}
    tool = Tool(name="log_in", description="Log in with the code", parameters=parameters, fn=log_in)
    return run_loop(run, llm_config_from_env(), system="Log in.", user_text=text, tools=[tool])


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatStandin]:
    with ChatStandin() as standin:
        monkeypatch.setenv("PARLEY_LLM_BASE_URL", standin.base_url)
        monkeypatch.setenv("PARLEY_LLM_MODEL", "standin-1")
        yield standin
    assert standin.problems == []


def test_a_model_loop_tool_reads_a_secret_given_before_another_question(
    llm: ChatStandin, r: Redis, tmp_path: Path
) -> None:
    """docs/llm.md: `run.secret` in a tool, after the model asked something else since."""
    code = {"questions": [{"id": "code", "header": "Code", "question": "Code?", "type": "secret"}]}
    account = {"questions": [{"id": "v", "header": "Account", "question": "Which account?", "type": "free"}]}
    llm.add(
        calls(call("ask_user", code, "c1")),
        calls(call("ask_user", account, "c2")),
        calls(call("log_in", {"code_id": "code"}, "c3")),
        final("Logged in."),
    )
    rt = make_runtime(r, tmp_path, secret_key=Fernet.generate_key().decode())
    run_id, q1 = parked(rt, "t-llm-secret-later", "log me in")
    accept(rt, q1, "U1", [Answer(id="code", secret="otp-123")])
    work(rt)
    LOGINS.clear()
    _answer(rt, run_id, "main")
    record = rt.store.get(run_id)
    assert (record.status, record.result, record.error) == (RunStatus.SUCCEEDED, "Logged in.", "")
    assert LOGINS == ["otp-123"]


@agent("t-overlapping-branches")
def _overlapping_branches(run: Any, text: str) -> str:
    async def tool(key: str) -> str:  # two tools a framework runs at once, each in its own task
        if run.recorded(key, branch=True) is ABSENT:
            run.say(f"{key} working")
            await asyncio.sleep(0.01)  # the other tool says meanwhile
            run.step(key, lambda: key.upper())
        return key

    async def both() -> None:
        await asyncio.gather(tool("a"), tool("b"))

    asyncio.run(both())
    run.say("both done")
    return run.ask(_free("Go on?"))["v"]


def test_overlapping_branches_count_what_they_made_once(r: Redis, tmp_path: Path) -> None:
    """Says made while two branches were open at once are counted once: a later say posts once."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-overlapping-branches")
    work(rt)
    _answer(rt, run_id, "yes")
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert sorted(said(host, run_id)) == ["a working", "b working", "both done"]


@agent("t-nested-branches")
def _nested_branches(run: Any, text: str) -> str:
    if run.recorded("outer", branch=True) is ABSENT:
        if run.recorded("inner", branch=True) is ABSENT:
            run.say("inner working")
            run.step("inner", lambda: 1)
        run.step("outer", lambda: 2)
    run.say("between")
    value = run.ask(_free("Go on?"))["v"]
    run.say("after")
    return value


def test_a_branch_inside_another_is_counted_with_the_outer_one(r: Redis, tmp_path: Path) -> None:
    """A replay skipping the outer branch never reads the inner key: the outer one counts it."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-nested-branches")
    work(rt)
    _answer(rt, run_id, "yes")
    assert said(host, run_id) == ["inner working", "between", "after"]


@agent("t-step-retried")
def _step_retried(run: Any, text: str) -> str:
    def fetch() -> str:
        run.say("fetching")
        TRIES[run.run_id] = TRIES.get(run.run_id, 0) + 1
        if TRIES[run.run_id] == 1:
            raise TimeoutError("try again")
        return "data"

    for _ in range(3):  # the agent retries the step itself
        try:
            got = run.step("fetch", fetch)
            break
        except TimeoutError:
            run.say("retrying")
    value = run.ask(_free("Go on?"))["v"]
    run.say("after 1")
    run.say("after 2")
    return f"{got} {value}"


def test_a_step_retried_in_one_execution_counts_its_failed_tries(r: Redis, tmp_path: Path) -> None:
    """What the failed tries said is skipped on replay too, so no later say is lost."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-step-retried")
    work(rt)
    _answer(rt, run_id, "yes")
    assert said(host, run_id) == ["fetching", "retrying", "fetching", "after 1", "after 2"]


@agent("t-named-key-in-a-step")
def _named_key_in_a_step(run: Any, text: str) -> str:
    first = run.step("s", lambda: run.ask(_free("First?"), key="k")["v"])
    second = run.ask(_free("Again?"), key="k")["v"]
    return f"{first} {second}"


def test_a_named_key_asked_inside_a_step_is_counted_on_replay(r: Redis, tmp_path: Path) -> None:
    """The key's next call outside the step is its next attempt, with its own answer."""
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-named-key-in-a-step")
    work(rt)
    _answer(rt, run_id, "one")
    _answer(rt, run_id, "two")
    record = rt.store.get(run_id)
    assert (record.status, record.result) == (RunStatus.SUCCEEDED, "one two")


@agent("t-early-read")
def _early_read(run: Any, text: str) -> str:
    done = run.recorded("fetch") is not ABSENT  # a plain read: no branch follows it
    run.say("resuming" if done else "starting")
    run.step("fetch", lambda: 1)
    value = run.ask(_free("Go on?"))["v"]
    run.say("after")
    return value


def test_a_plain_read_counts_nothing(r: Redis, tmp_path: Path) -> None:
    """Code that runs whatever the read finds is numbered alike in every execution."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-early-read")
    work(rt)
    _answer(rt, run_id, "yes")
    assert said(host, run_id) == ["starting", "after"]


@agent("t-step-in-a-reopened-branch")
def _step_in_a_reopened_branch(run: Any, text: str) -> str:
    if run.recorded("outer", branch=True) is ABSENT:
        run.step("inner", lambda: run.say("inner said"))
        first = run.ask(_free("First?"))["v"]  # parks inside the branch: it opens again next time
        run.step("outer", lambda: first)
    run.say("done")
    value = run.ask(_free("Second?"))["v"]
    run.say("end")
    return value


def test_a_step_skipped_inside_a_reopened_branch_counts_in_it(r: Redis, tmp_path: Path) -> None:
    """What a replay skipped inside the branch is the branch's too, so no later say is lost."""
    rt, host = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-step-in-a-reopened-branch")
    work(rt)
    _answer(rt, run_id, "one")
    _answer(rt, run_id, "two")
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert said(host, run_id) == ["inner said", "done", "end"]


def test_an_executions_branches_end_with_it(r: Redis, tmp_path: Path) -> None:
    """The worker's thread keeps no branch, nor the tally and secrets it holds."""
    rt, _ = runtime_and_host(r, tmp_path)
    run_id = start(rt, "t-nested-branches")
    work(rt)  # in this thread, as a simple worker runs its jobs
    _answer(rt, run_id, "yes")
    assert rt.store.get(run_id).status is RunStatus.SUCCEEDED
    assert open_branches.get() == ()
