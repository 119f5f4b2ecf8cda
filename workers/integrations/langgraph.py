"""`run_graph`: a compiled LangGraph graph run as a Parley agent, its interrupts asked in Slack.

It runs on the framework driver (`workers.integrations.driver`). Each call into the graph is one
driver step (`langgraph:<thread>:<n>`). The first call is `invoke`, then one
`invoke(Command(resume=...))` per round of answers. A replay after an answer returns what the
call returned. That is the graph's output, or its interrupts as planned questions. It runs no
node or tool again. One call's interrupts are one round, asked at once under `<step>:<i>`. A
HITL request's actions use `<step>:<i>.<j>`. The run parks once and resumes once, with
`Command(resume={id: value})`.

The graph's own checkpointer keeps its progress inside a call. Every checkpoint a call writes is
marked with the run and the call's step. A call whose step was never recorded is not started
again. That happens when its worker died mid-call. It goes on from its last checkpoint
(`invoke(None)`). If it had already stopped, its interrupts or output are read back. So a resume
is sent once. That takes a checkpointer that outlives the worker, like SQLite or Postgres. An
in-memory one is refused.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from langgraph.types import Command, GraphOutput

from workers.agent_run import AgentRun
from workers.exceptions import AgentError
from workers.integrations.driver import Keys, Pending, Replies, drive
from workers.integrations.langgraph_pauses import GraphError, Pause, Question, plan, questions, resume_value
from workers.integrations.langgraph_records import RecordRefused, decoded, recorded
from workers.logs import Log

__all__ = ["GraphError", "GraphNotDurable", "RecordRefused", "run_graph"]

RUN_MARK, CALL_MARK = "parley_run_id", "parley_call"
"""The checkpoint metadata naming the run and the call (its step) that wrote a checkpoint."""
log = Log("parley.langgraph")


class GraphNotDurable(AgentError):
    """A graph whose checkpointer would not outlive the worker, losing its progress."""


def run_graph(
    run: AgentRun, graph: Pregel, input: Any, *, thread_id: str | None = None, allow_memory: bool = False
) -> Any:
    """Run `graph` on `input` to its end, asking people at each interrupt.

    Returns its output. `thread_id` keys its checkpoints: the graph's thread, by default the run's
    id. The graph needs a durable checkpointer, say `SqliteSaver` in `run.data_dir`. An in-memory
    one is refused (`GraphNotDurable`), unless `allow_memory`. That is for tests only, as a crash
    then loses the graph's progress. Raises `TooManyRounds` when the graph still interrupts after
    `MAX_ROUNDS` rounds of answers.
    """
    saver = durable_checkpointer(graph, allow_memory=allow_memory)
    thread = thread_id or run.run_id
    driven = _Graph(run, graph, saver, input, thread)
    name = f"langgraph:{_short(thread)}"
    return drive(run, name, driven, what="the graph", earlier=Keys(name, first=0))  # calls counted from 0


class _Graph:
    """A compiled graph as the driver calls it: one `invoke` per call, interrupts as pauses."""

    def __init__(self, run: AgentRun, graph: Pregel, saver: BaseCheckpointSaver[Any], input: Any, thread: str) -> None:
        self._run_id, self._graph, self._saver, self._input = run.run_id, graph, saver, input
        self._config = {"configurable": {"thread_id": thread}}
        self._said = log.bind(run_id=run.run_id, thread_id=thread)

    def call(self, step: str, resume: Command[Any] | None) -> dict[str, Any]:
        marked = {**self._config, "metadata": {RUN_MARK: self._run_id, CALL_MARK: step}}
        given = self._input if resume is None else resume
        return _call(self._graph, self._saver, marked, given, self._said.bind(step=step))

    def pauses(self, step: str, outcome: dict[str, Any]) -> list[Pending] | None:
        if "interrupts" not in outcome:
            return None
        return [Pending(q.key, q.request, q.context) for qs in _asked(outcome).values() for q in qs]

    def resume(self, outcome: dict[str, Any], pending: list[Pending], replies: Replies) -> Command[Any]:
        asked = _asked(outcome)
        return Command(resume={p.id: resume_value(p, asked[p.id], replies) for p in _pauses(outcome)})

    def output(self, step: str, outcome: dict[str, Any]) -> Any:
        try:
            return decoded(self._saver, outcome)
        except RecordRefused as exc:
            self._said.error("graph output record refused", step=step, error=str(exc))
            raise


def _pauses(outcome: dict[str, Any]) -> list[Pause]:
    return [Pause.model_validate(p) for p in outcome["interrupts"]]


def _asked(outcome: dict[str, Any]) -> dict[str, list[Question]]:
    """Each interrupt's questions by its id, keyed `<n>`.

    A HITL request's actions are keyed `<n>.<m>`.
    """
    return {p.id: questions(p, str(i)) for i, p in enumerate(_pauses(outcome))}


def durable_checkpointer(graph: Pregel, *, allow_memory: bool = False) -> BaseCheckpointSaver[Any]:
    """The graph's checkpointer, if it keeps checkpoints beyond this process (or `allow_memory`)."""
    saver = graph.checkpointer
    if not isinstance(saver, BaseCheckpointSaver):
        raise GraphNotDurable(
            "the graph has no checkpointer; compile it with one that outlives the worker, e.g. "
            "SqliteSaver(sqlite3.connect(run.data_dir / 'graphs.sqlite', check_same_thread=False))"
        )
    if not allow_memory and _in_memory(saver):
        raise GraphNotDurable(
            f"the graph's checkpointer ({type(saver).__name__}) keeps checkpoints in memory, so a worker "
            "that stops loses the graph's progress; use a durable one (SqliteSaver on a file, "
            "PostgresSaver), or allow_memory=True in tests"
        )
    return saver


def _in_memory(saver: BaseCheckpointSaver[Any]) -> bool:
    if isinstance(saver, InMemorySaver):
        return True
    conn = getattr(saver, "conn", None)
    if isinstance(conn, sqlite3.Connection):  # SqliteSaver on ":memory:" (or a temporary database)
        files = [row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"]
        return not files or not files[0]
    return False


def _call(graph: Pregel, saver: BaseCheckpointSaver[Any], config: Any, given: Any, said: Log) -> Any:
    """One call into the graph, returning its outcome as JSON.

    `config` marks its checkpoints. If a stopped execution had started the call, what is left of it
    runs.
    """
    latest = graph.get_state(config)
    mark, ours = latest.metadata or {}, config["metadata"]
    if mark.get(RUN_MARK) == ours[RUN_MARK] and mark.get(CALL_MARK) == ours[CALL_MARK]:  # this call's checkpoint
        if latest.interrupts:
            said.info("graph call found stopped at its interrupts", graph_step=mark.get("step"))
            return _outcome(saver, GraphOutput(value=latest.values, interrupts=latest.interrupts))
        said.info("graph call goes on from its last checkpoint", graph_step=mark.get("step"))
        given = None  # an ended graph returns its output, running nothing
    out = graph.invoke(given, config, durability="sync", version="v2")
    if out.interrupts:
        said.info("graph interrupted", interrupts=[i.id for i in out.interrupts])
    else:
        said.info("graph ended")
    return _outcome(saver, out)


def _outcome(saver: BaseCheckpointSaver[Any], out: GraphOutput[Any]) -> dict[str, Any]:
    if out.interrupts:
        planned = [plan(i.id, i.value, getattr(i, "response_schema", None)) for i in out.interrupts]
        return {"interrupts": [p.model_dump(mode="json") for p in planned]}
    return recorded(saver, out.value)  # messages, models: as the checkpointer stores them


def _short(thread: str) -> str:
    """The thread id as part of a step key, digested unless short and plain."""
    if len(thread) <= 64 and thread.replace("-", "").replace("_", "").isalnum():
        return thread
    return hashlib.sha256(thread.encode()).hexdigest()[:16]
