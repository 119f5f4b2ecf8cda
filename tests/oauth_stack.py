"""Parley in OAuth mode on loopback: `parley serve`'s WSGI app over real HTTP, the Web API stand-in, a worker.

`oauth_stack` builds the bot the way `parley serve` does (`parley.serve.build_bot` with the
three OAuth settings), serves its WSGI app on a threaded loopback HTTP server, and wires a
worker runtime the way `parley worker` does (`parley.worker.add_worker_hosts`). `install`
goes through bolt's flow as a browser would: `/slack/install` (the state cookie and the
authorize link), the stand-in's approval page, and the redirect back to
`/slack/oauth_redirect`, where bolt exchanges the code at the stand-in's `oauth.v2.access`.
"""

from __future__ import annotations

import json
import re
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.client import HTTPConnection
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import redis
from runtime_helpers import work
from slack_payloads import FORM, JSON_TYPE, SIGNING_SECRET, signed_headers

from bot.playground import Channel, LoopbackServer, User, Workspace, make_webapi_app
from bot.playground.installs import CLIENT_ID, CLIENT_SECRET
from bot.wsgi import make_wsgi
from parley.bootstrap import build_runtime
from parley.serve import build_bot
from parley.settings import Settings
from parley.worker import add_worker_hosts
from workers.registry import load_agents
from workers.runtime.host import InteractorRouter
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.installations import RedisInstallationStore
from workers.store.records import RunRecord

STATE_SECRET = "parley-tests-state-secret"
STATE_COOKIE = "slack-app-oauth-state"


@dataclass
class Reply:
    """One HTTP response, read whole (no redirect followed)."""

    status: int
    headers: dict[str, str]
    text: str
    cookies: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)


def http(method: str, url: str, *, body: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
    """A plain HTTP request over loopback, as a browser or Slack would make it."""
    parts = urlparse(url)
    conn = HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers=headers or {})
        resp = conn.getresponse()
        jar = SimpleCookie()
        for value in resp.headers.get_all("set-cookie") or []:
            jar.load(value)
        return Reply(
            resp.status,
            {k.lower(): v for k, v in resp.getheaders()},
            resp.read().decode(),
            {k: m.value for k, m in jar.items()},
        )
    finally:
        conn.close()


def get(url: str, params: dict[str, str] | None = None, cookies: dict[str, str] | None = None) -> Reply:
    query = f"?{urlencode(params)}" if params else ""
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
    return http("GET", url + query, headers=headers)


def install(url: str, api_url: str, team: str | None, *, enterprise: str | None = None) -> Reply:
    """Install the Parley at `url` as a browser does: its install page, the approval at the
    stand-in (`api_url`) for `team` (or org-wide for `enterprise`), the redirect back to Parley."""
    page = get(f"{url}/slack/install")
    assert page.status == 200, page.text
    cookie = page.cookies.get(STATE_COOKIE)
    link = re.search(r'href="(https://slack\.com/oauth/v2/authorize\?[^"]+)"', page.text)
    assert cookie and link, page.text
    query = {k: v[0] for k, v in parse_qs(urlparse(link[1].replace("&amp;", "&")).query).items()}
    assert query["state"] == cookie and query["client_id"] == CLIENT_ID
    approval = {**query, "redirect_uri": f"{url}/slack/oauth_redirect", "team": team or ""}
    if enterprise:
        approval["enterprise"] = enterprise
    approved = get(f"{api_url}oauth/v2/authorize", approval)
    assert approved.status == 302, approved.text
    return get(approved.headers["location"], cookies={STATE_COOKIE: cookie})


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class OAuthStack:
    url: str
    api_url: str
    ws: Workspace
    worker: Runtime
    installations: RedisInstallationStore

    # ---- installing ----------------------------------------------------------------------
    def install(self, team: str | None, *, enterprise: str | None = None) -> Reply:
        return install(self.url, self.api_url, team, enterprise=enterprise)

    # ---- Slack's requests ----------------------------------------------------------------
    def post(self, body: str, content_type: str) -> Reply:
        return http("POST", f"{self.url}/slack/events", body=body.encode(), headers=signed_headers(body, content_type))

    def form(self, body: str) -> Reply:
        return self.post(body, FORM)

    def json(self, body: str) -> Reply:
        return self.post(body, JSON_TYPE)

    # ---- runs ----------------------------------------------------------------------------
    def run_with_text(self, text: str) -> RunRecord:
        store = self.worker.store
        return self.wait_for(
            f"the run {text!r}", lambda: next((r for r in store.runs(store.list_ids(None)) if r.text == text), None)
        )

    def enqueued(self, run: RunRecord) -> None:
        self.wait_for("the run to be enqueued", lambda: job_ids.first(run.id) in self.worker.queue.job_ids)

    def work(self) -> None:
        work(self.worker)

    def calls(self, method: str, pred: Callable[[dict[str, Any]], bool] = lambda c: True) -> list[dict[str, Any]]:
        return [c for c in self.ws.calls(method) if pred(c)]

    @staticmethod
    def wait_for(what: str, predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.02)
        return value


OAUTH_ENV = {
    "SLACK_BOT_TOKEN": "",
    "SLACK_CLIENT_ID": CLIENT_ID,
    "SLACK_CLIENT_SECRET": CLIENT_SECRET,
    "SLACK_STATE_SECRET": STATE_SECRET,
}
"""What turns a `parley` process's OAuth mode on (and its single bot token off)."""


def oauth_settings(redis_url: str, api_url: str, data_dir: Path, **extra: Any) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        redis_url=redis_url,
        slack_bot_token=None,
        slack_signing_secret=SIGNING_SECRET,
        slack_client_id=CLIENT_ID,
        slack_client_secret=CLIENT_SECRET,
        slack_state_secret=STATE_SECRET,
        slack_api_url=api_url,
        parley_agents=["slack_agents"],
        parley_data_dir=data_dir,
        parley_retry_delays=[0.0],
        **extra,
    )


@contextmanager
def oauth_stack(r: redis.Redis, redis_url: str, tmp_path: Path, **extra: Any) -> Iterator[OAuthStack]:
    """Parley in OAuth mode, with workspaces T0ALPHA (#general), T0BETA (#beta) and org E0ORG's T0ORG1 (#org)."""
    load_agents(["slack_agents"])
    ws = Workspace()
    ws.add_channel(Channel("C0BETA", "beta"))
    ws.add_channel(Channel("C0ORG", "org"))
    ws.add_user(User("U0BETA", "beta", "Beta Person"))
    ws.add_user(User("U0ORG", "org", "Org Person"))
    api = LoopbackServer(make_webapi_app(ws)).start()
    api_url = api.url + "/api/"
    settings = oauth_settings(redis_url, api_url, tmp_path, **extra)
    app, client = build_bot(settings)
    server = make_server("127.0.0.1", 0, make_wsgi(app, client), _ThreadingWSGIServer, _QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    worker = build_runtime(settings, r, InteractorRouter())
    add_worker_hosts(settings, worker)
    try:
        yield OAuthStack(f"http://127.0.0.1:{server.server_port}", api_url, ws, worker, RedisInstallationStore(r))
    finally:
        server.shutdown()
        server.server_close()
        api.stop()
        client.close()
