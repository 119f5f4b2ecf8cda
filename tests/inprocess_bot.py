"""The bot's bolt app in the test process: Slack's signed requests in, Redis and the Web API stand-in out.

The app is the one `parley serve` runs (`bot.app.create_app`), with a real runtime on the
test Redis and a `WebClient` pointed at the loopback Web API stand-in. Requests are driven
the way bolt-python's own scenario tests drive an app: `app.dispatch(BoltRequest(...))` with
the raw body in Slack's wire format (form-encoded `payload=` for interactions, form fields for
slash commands, JSON for events) and Slack's v0 signature headers. Runs are executed by an
in-process RQ worker, so every question a test answers was posted by the real Slack host.

`running_bot` builds one; test modules wrap it in their own `bot` fixture.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from runtime_helpers import make_runtime, work
from slack_bolt import App, BoltResponse
from slack_bolt.request import BoltRequest
from slack_forms import button_action, find_element, form_state, is_question, past_posting
from slack_payloads import (
    ADMIN,
    BOT_TOKEN,
    FORM,
    JSON_TYPE,
    SIGNING_SECRET,
    block_actions_payload,
    event_callback_body,
    interaction_body,
    signed_headers,
    slash_command_body,
)
from slack_sdk import WebClient

from bot.app import create_app
from bot.deps import BotDeps
from bot.playground import LoopbackServer, Workspace, make_webapi_app
from bot.playground.workspace import TEAM_ID
from bot.slack.api_host import ApiQuestionHost
from bot.slack.client import make_web_client
from bot.slack.host import SlackHost
from workers.questions.webhooks import announce
from workers.registry import load_agents
from workers.runs import RunService
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.records import InterruptRecord, InterruptState, RunRecord, RunStatus
from workers.store.starts import StartLimits

CHANNEL = "C0GENERAL"


@dataclass
class PausedRun:
    """A run parked on its first question, as posted in its thread by the Slack host."""

    run: RunRecord
    root_ts: str
    question: dict[str, Any]
    interrupt: InterruptRecord
    channel: str = CHANNEL


@dataclass
class Bot:
    """The bolt app, its dependencies and the stand-in's workspace."""

    app: App
    deps: BotDeps
    ws: Workspace

    @property
    def runtime(self) -> Runtime:
        return self.deps.runs.runtime

    # ---- sending -------------------------------------------------------------------------
    def send(self, body: str, content_type: str) -> BoltResponse:
        """Dispatch `body`, signed as Slack signs it, and return the ack."""
        return self.app.dispatch(BoltRequest(body=body, headers=signed_headers(body, content_type)))

    def command(self, text: str, *, user: str = "U0BOB", channel: str = CHANNEL) -> BoltResponse:
        return self.send(slash_command_body(text, user=user, channel=channel), FORM)

    def interact(self, payload: dict[str, Any]) -> BoltResponse:
        past_posting(self.runtime.store, payload)
        return self.send(interaction_body(payload), FORM)

    def event(self, event: dict[str, Any], *, team: str = TEAM_ID, **envelope: Any) -> BoltResponse:
        return self.send(event_callback_body(event, team=team, **envelope), JSON_TYPE)

    # ---- waiting -------------------------------------------------------------------------
    def wait_for(self, what: str, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.02)
        return value

    def calls(self, method: str, pred: Callable[[dict[str, Any]], bool] = lambda c: True) -> list[dict[str, Any]]:
        return [c for c in self.ws.calls(method) if pred(c)]

    def wait_call(self, method: str, pred: Callable[[dict[str, Any]], bool] = lambda c: True) -> dict[str, Any]:
        return self.wait_for(f"a {method} call", lambda: self.calls(method, pred))[0]

    def settle(self, quiet: float = 0.5) -> None:
        """Wait until the stand-in has had no call for `quiet` seconds: what runs after the ack is done."""
        before = -1
        while before != self.ws.events:
            before = self.ws.events
            time.sleep(quiet)

    # ---- runs ----------------------------------------------------------------------------
    def runs(self) -> list[RunRecord]:
        store = self.runtime.store
        return store.runs(store.list_ids(None, limit=100))

    def roots(self, channel: str = CHANNEL) -> list[dict[str, Any]]:
        return [m for m in self.ws.messages(channel) if m.get("thread_ts", m["ts"]) == m["ts"]]

    def started(
        self, agent: str, text: str, *, user: str = "U0BOB", channel: str = CHANNEL, posted_in: str | None = None
    ) -> tuple[RunRecord, str]:
        """`/parley agent text` typed in `channel`, its run once enqueued, and the ts of its root message
        (posted in `posted_in`, by default the same channel)."""
        resp = self.command(f"{agent} {text}", user=user, channel=channel)
        assert (resp.status, resp.body) == (200, "")
        [run] = [r for r in self.runs() if r.text == text]
        self.wait_for("the run to be enqueued", lambda: job_ids.first(run.id) in self.runtime.queue.job_ids)
        root_ts = self.runtime.store.get(run.id).conversation.get("thread_ts")
        root = self.ws.message(posted_in or channel, root_ts) if root_ts else None
        assert root is not None and root["text"].startswith(f"<@{user}> started *{agent}*"), root
        return run, root_ts

    def paused(
        self,
        agent: str,
        params: dict[str, Any] | None = None,
        *,
        user: str = "U0BOB",
        channel: str = CHANNEL,
        posted_in: str | None = None,
    ) -> PausedRun:
        """Start `agent`, execute it in this process until it asks, and return its question."""
        text = (json.dumps(params) + " " if params else "") + secrets.token_hex(4)
        run, root_ts = self.started(agent, text, user=user, channel=channel, posted_in=posted_in)
        work(self.runtime)
        paused = self.runtime.store.get(run.id)
        assert paused.status is RunStatus.PAUSED, paused
        where = posted_in or channel
        [question] = [m for m in self.ws.thread(where, root_ts) if is_question(m)]
        interrupt = self.runtime.store.interrupt(paused.interrupt)
        assert interrupt is not None and interrupt.state is InterruptState.OPEN
        return PausedRun(paused, root_ts, question, interrupt, where)

    def click(
        self,
        paused: PausedRun,
        action_id: str,
        *,
        user: str,
        fills: dict[str, Any] | None = None,
        team: str = TEAM_ID,
        channel: str | None = None,
        message_ts: str | None = None,
    ) -> BoltResponse:
        """Click the button `action_id` on the question (as `user` of `team`, in `channel`, by default
        the question's own), with the form filled in as `fills`; with `message_ts`, the same blocks
        clicked on another message (a copy of the question)."""
        blocks = paused.question["blocks"]
        block, button = find_element(blocks, action_id)
        payload = block_actions_payload(
            user=user,
            message={**paused.question, "ts": message_ts} if message_ts else paused.question,
            channel=channel or paused.channel,
            action=button_action(block, button),
            state_values=form_state(blocks, fills or {}),
            trigger=self.ws.issue_trigger(user),
            team=team,
        )
        return self.interact(payload)


@contextmanager
def running_bot(
    r: redis.Redis,
    tmp_path: Path,
    *,
    client_timeout: int | None = None,
    start_limits: StartLimits | None = None,
    api_host: bool = False,
    **settings: Any,
) -> Iterator[Bot]:
    """A bot on the test Redis and a fresh stand-in, with the `slack_agents` agents loaded.

    `start_limits` replaces the default limits on starting runs (`PARLEY_STARTS_PER_USER`, ...).
    `api_host` registers the API's question host, as `parley serve` does, webhooks announced.

    With `client_timeout`, the Web API client is the production one (`make_web_client`,
    retries included) giving up on a call after that many seconds. `settings` are
    `RuntimeSettings` fields (such as `secret_key`).
    """
    load_agents(["slack_agents"])
    ws = Workspace()
    api = LoopbackServer(make_webapi_app(ws)).start()
    base_url = api.url + "/api/"
    if client_timeout is None:
        web = WebClient(token=BOT_TOKEN, base_url=base_url)
    else:
        web = make_web_client(BOT_TOKEN, base_url, timeout=client_timeout)
    runtime = make_runtime(r, tmp_path, **settings)
    slack = SlackHost(web, runtime.store)
    runtime.hosts.register("slack", slack)
    if api_host:  # questions asked through the API or MCP: their own host, announcing each close
        runtime.hosts.register("api", ApiQuestionHost(web, runtime.store, lambda run, q: announce(runtime, run, q)))
    deps = BotDeps(
        runs=RunService(runtime),
        client=web,
        slack=slack,
        admins=frozenset({ADMIN}),
        start_limits=start_limits or StartLimits(),
    )
    try:
        yield Bot(create_app(deps, signing_secret=SIGNING_SECRET), deps, ws)
    finally:
        deps.pool.shutdown(wait=True)
        api.stop()


def answers_of(interrupt: InterruptRecord | None) -> dict[str, Any]:
    assert interrupt is not None
    return {a.id: a.value for a in interrupt.answers}
