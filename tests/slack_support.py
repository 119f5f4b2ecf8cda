"""Slack, as the bot sees it, for end-to-end tests: payloads, signatures and a live Parley stack.

The payload builders follow Slack's documented wire formats, not Parley's code:

- slash commands are `application/x-www-form-urlencoded` bodies with Slack's fields;
- interactions (`block_actions`, `view_submission`, `block_suggestion`) are form bodies with a
  single `payload=<JSON>` field;
- Events API deliveries are `event_callback` JSON envelopes;
- every HTTP request is signed like Slack signs it: `v0=HMAC-SHA256(secret, "v0:<ts>:<body>")`
  in `X-Slack-Signature`, the timestamp in `X-Slack-Request-Timestamp`.

Answers are built from the blocks the bot actually posted, the way a person fills a form: by
the labels they see (`form_state`), with untouched inputs reported as Slack reports them.

`SlackStack` runs the real product around the Web API stand-in: the stand-in in this process
(so tests read its call log), a `parley serve` subprocess (HTTP or Socket Mode) and one or more
`parley worker` subprocesses, all on the test Redis database.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import redis

from bot.playground import LoopbackServer, Workspace, make_webapi_app
from bot.playground.workspace import APP_ID, BOT_USER_ID, TEAM_ID

TESTS = Path(__file__).resolve().parent
PARLEY = Path(sys.executable).with_name("parley")

SIGNING_SECRET = "parley-tests-signing-secret"
BOT_TOKEN = "xoxb-test"
APP_TOKEN = "xapp-test"
VERIFICATION_TOKEN = "deprecatedVerificationToken"  # Slack still sends the legacy `token` field
TEAM_DOMAIN = "parley-playground"
EVENTS_PATH = "/slack/events"
ADMIN = "U0ALICE"
PERMALINK_BASE = f"https://{TEAM_DOMAIN}.slack.com"
FORM = "application/x-www-form-urlencoded"
JSON_TYPE = "application/json"

USER_NAMES = {"U0ALICE": "alice", "U0BOB": "bob", "U0CAROL": "carol"}
CHANNEL_NAMES = {"C0GENERAL": "general", "C0OPS": "ops"}


# ---- signing ---------------------------------------------------------------------------
def slack_signature(body: str, timestamp: str, secret: str = SIGNING_SECRET) -> str:
    """`v0=<hex>`: HMAC-SHA256 over `v0:<timestamp>:<raw body>`, as Slack computes it."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    body: str, content_type: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": slack_signature(body, ts, secret),
    }


# ---- small Slack-shaped values -----------------------------------------------------------
def trigger_id() -> str:
    """A trigger id in Slack's shape (`<digits>.<digits>.<hex>`)."""
    return f"{secrets.randbelow(10**11)}.{secrets.randbelow(10**12)}.{secrets.token_hex(16)}"


def action_ts() -> str:
    return f"{time.time():.6f}"


def response_url(team: str = TEAM_ID) -> str:
    return f"https://hooks.slack.com/actions/{team}/{secrets.randbelow(10**12)}/{secrets.token_urlsafe(18)}"


def event_id() -> str:
    return "Ev" + secrets.token_hex(5).upper()


def mrkdwn_escape(text: str) -> str:
    """Slack's escaping for text in mrkdwn: `&`, `<` and `>` as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _user(user: str, team: str) -> dict[str, Any]:
    name = USER_NAMES.get(user, user.lower())
    return {"id": user, "username": name, "name": name, "team_id": team}


def _team(team: str) -> dict[str, Any]:
    return {"id": team, "domain": TEAM_DOMAIN}


def _channel(channel: str) -> dict[str, Any]:
    return {"id": channel, "name": CHANNEL_NAMES.get(channel, channel.lower())}


# ---- slash commands ----------------------------------------------------------------------
def slash_command_body(
    text: str,
    *,
    user: str,
    channel: str = "C0GENERAL",
    team: str = TEAM_ID,
    command: str = "/parley",
    trigger: str | None = None,
) -> str:
    """The form body Slack POSTs for `/command text` typed by `user` in `channel`."""
    return urlencode(
        slash_command_fields(text, user=user, channel=channel, team=team, command=command, trigger=trigger)
    )


def slash_command_fields(
    text: str,
    *,
    user: str,
    channel: str = "C0GENERAL",
    team: str = TEAM_ID,
    command: str = "/parley",
    trigger: str | None = None,
) -> dict[str, str]:
    """A slash command's fields: form-encoded over HTTP, the envelope's `payload` over Socket Mode."""
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": team,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel,
        "channel_name": CHANNEL_NAMES.get(channel, channel.lower()),
        "user_id": user,
        "user_name": USER_NAMES.get(user, user.lower()),
        "command": command,
        "text": text,
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": f"https://hooks.slack.com/commands/{team}/{secrets.randbelow(10**12)}/{secrets.token_hex(12)}",
        "trigger_id": trigger or trigger_id(),
    }


# ---- interactions --------------------------------------------------------------------------
def interaction_body(payload: dict[str, Any]) -> str:
    """An interaction as Slack sends it over HTTP: one form field, `payload`, holding JSON."""
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))})


def find_element(blocks: list[dict[str, Any]], action_id: str | Callable[[str], bool]) -> tuple[dict, dict]:
    """The (block, element) of the first interactive element whose action_id matches."""
    match = action_id if callable(action_id) else (lambda a: a == action_id)
    for block in blocks:
        elements = list(block.get("elements") or [])
        for key in ("element", "accessory"):
            if isinstance(block.get(key), dict):
                elements.append(block[key])
        for element in elements:
            if isinstance(element, dict) and match(str(element.get("action_id", ""))):
                return block, element
    raise LookupError(f"no element with action_id {action_id!r} in {len(blocks)} blocks")


def button_action(block: dict[str, Any], element: dict[str, Any]) -> dict[str, Any]:
    """The `actions[0]` entry Slack sends for a click on a button."""
    action = {
        "type": "button",
        "action_id": element["action_id"],
        "block_id": block["block_id"],
        "text": element["text"],
        "action_ts": action_ts(),
    }
    if "value" in element:
        action["value"] = element["value"]
    if "style" in element:
        action["style"] = element["style"]
    return action


def block_actions_payload(
    *,
    user: str,
    message: dict[str, Any],
    channel: str,
    action: dict[str, Any],
    state_values: dict[str, Any] | None = None,
    team: str = TEAM_ID,
    trigger: str | None = None,
) -> dict[str, Any]:
    """A `block_actions` payload for a click in `message` (as stored by Slack) in `channel`."""
    container = {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False}
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    return {
        "type": "block_actions",
        "user": _user(user, team),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": trigger or trigger_id(),
        "team": _team(team),
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": _channel(channel),
        "message": message,
        "state": {"values": state_values or {}},
        "response_url": response_url(team),
        "actions": [action],
    }


def home_actions_payload(
    *, user: str, view: dict[str, Any], action: dict[str, Any], team: str = TEAM_ID, trigger: str | None = None
) -> dict[str, Any]:
    """A `block_actions` payload for a click on the App Home tab (`container.type == "view"`)."""
    return {
        "type": "block_actions",
        "user": _user(user, team),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": {"type": "view", "view_id": view["id"]},
        "trigger_id": trigger or trigger_id(),
        "team": _team(team),
        "enterprise": None,
        "is_enterprise_install": False,
        "view": view,
        "actions": [action],
    }


def view_submission_payload(
    *, user: str, view: dict[str, Any], state_values: dict[str, Any], team: str = TEAM_ID
) -> dict[str, Any]:
    """A `view_submission` for the open modal `view` (as Slack stored it) with `state_values`."""
    submitted = {**view, "state": {"values": state_values}}
    return {
        "type": "view_submission",
        "team": _team(team),
        "user": _user(user, team),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id(),
        "view": submitted,
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }


def block_suggestion_payload(
    *,
    user: str,
    message: dict[str, Any],
    channel: str,
    block_id: str,
    action_id: str,
    value: str,
    team: str = TEAM_ID,
) -> dict[str, Any]:
    """The options request Slack sends while a person types into an `external_select` in a message."""
    container = {"type": "message", "message_ts": message["ts"], "channel_id": channel, "is_ephemeral": False}
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    return {
        "type": "block_suggestion",
        "user": _user(user, team),
        "container": container,
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "action_id": action_id,
        "block_id": block_id,
        "value": value,
        "team": _team(team),
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": _channel(channel),
        "message": message,
        "state": {"values": {}},
    }


# ---- filling a form as a person would ----------------------------------------------------
@dataclass(frozen=True)
class Tampered:
    """An option value the form never offered, as a doctored request would carry it."""

    value: str


def option_object(label: str, value: str) -> dict[str, Any]:
    """An option as Slack echoes a selection back: plain_text with `emoji: true`, and its value."""
    return {"text": {"type": "plain_text", "text": label, "emoji": True}, "value": value}


def _echo(option: dict[str, Any]) -> dict[str, Any]:
    out = option_object(option["text"]["text"], option["value"])
    if option.get("description"):
        out["description"] = {**option["description"], "emoji": True}
    return out


def _pick(element: dict[str, Any], choice: Any) -> dict[str, Any]:
    if isinstance(choice, Tampered):
        return option_object(choice.value, choice.value)
    if isinstance(choice, dict):
        return choice
    for option in element.get("options") or []:
        if option["text"]["text"] == choice:
            return _echo(option)
    raise LookupError(f"no option labelled {choice!r} in {element.get('type')} {element.get('action_id')}")


def element_state(element: dict[str, Any], value: Any = None, *, filled: bool) -> dict[str, Any]:
    """`state.values[block_id][action_id]` for one element: what was filled, or what Slack shows untouched."""
    kind = element["type"]
    state: dict[str, Any] = {"type": kind}
    if kind in ("static_select", "external_select", "radio_buttons"):
        if filled:
            state["selected_option"] = None if value is None else _pick(element, value)
        else:
            initial = element.get("initial_option")
            state["selected_option"] = _echo(initial) if initial else None
    elif kind in ("multi_static_select", "multi_external_select", "checkboxes"):
        if filled:
            state["selected_options"] = [_pick(element, v) for v in value or []]
        else:
            state["selected_options"] = [_echo(o) for o in element.get("initial_options") or []]
    elif kind == "plain_text_input":
        state["value"] = value if filled else element.get("initial_value")
    elif kind == "datepicker":
        state["selected_date"] = value if filled else element.get("initial_date")
    else:
        raise ValueError(f"no state format for {kind}")
    return state


def form_state(blocks: list[dict[str, Any]], fills: dict[str, Any], *, omit_untouched: bool = False) -> dict[str, Any]:
    """`state.values` for the input blocks in `blocks`, filled by label: {label text: answer}.

    Answers: an option label (or `Tampered(value)`, or a raw option dict) for selects, a list of
    labels for multi-selects, text for text inputs and `YYYY-MM-DD` for date pickers. Inputs not
    in `fills` hold their initial value or null, or are left out with `omit_untouched`.
    """
    labels = {b["label"]["text"] for b in blocks if b.get("type") == "input"}
    unknown = set(fills) - labels
    if unknown:
        raise LookupError(f"no input labelled {sorted(unknown)}; the form has {sorted(labels)}")
    values: dict[str, Any] = {}
    for block in blocks:
        if block.get("type") != "input":
            continue
        label, element = block["label"]["text"], block["element"]
        if label not in fills and omit_untouched:
            continue
        values[block["block_id"]] = {
            element["action_id"]: element_state(element, fills.get(label), filled=label in fills)
        }
    return values


# ---- events ------------------------------------------------------------------------------
def event_callback_body(event: dict[str, Any], *, team: str = TEAM_ID, eid: str | None = None) -> str:
    """The Events API envelope Slack POSTs as JSON."""
    envelope = {
        "token": VERIFICATION_TOKEN,
        "team_id": team,
        "context_team_id": team,
        "context_enterprise_id": None,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": eid or event_id(),
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-" + secrets.token_urlsafe(24),
    }
    return json.dumps(envelope, separators=(",", ":"))


def thread_reply_event(
    *, user: str, channel: str, text: str, ts: str, thread_ts: str, team: str = TEAM_ID
) -> dict[str, Any]:
    """A `message` event for a person's reply in a thread whose parent the bot posted."""
    return {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
        "parent_user_id": BOT_USER_ID,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "channel": channel,
        "channel_type": "channel",
        "event_ts": ts,
        "blocks": [
            {
                "type": "rich_text",
                "block_id": secrets.token_hex(3),
                "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
            }
        ],
    }


def app_home_opened_event(user: str, view: dict[str, Any] | None = None) -> dict[str, Any]:
    """`app_home_opened` for the Home tab; `view` is present once a Home view was published."""
    event: dict[str, Any] = {
        "type": "app_home_opened",
        "user": user,
        "channel": "D" + user[1:],
        "tab": "home",
        "event_ts": f"{time.time():.6f}",
    }
    if view is not None:
        event["view"] = view
    return event


# ---- Redis -------------------------------------------------------------------------------
def snapshot(client: redis.Redis) -> dict[bytes, bytes | None]:
    """DUMP of every `parley:*` key: equal snapshots mean nothing Parley stores changed."""
    return {key: client.dump(key) for key in sorted(client.scan_iter(match="parley:*", count=1000))}


# ---- Web API call log ------------------------------------------------------------------------
def blocks_of(call: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = call["args"].get("blocks")
    return blocks if isinstance(blocks, list) else []


def has_action(blocks: list[dict[str, Any]], prefix: str) -> bool:
    try:
        find_element(blocks, lambda a: a.startswith(prefix))
    except LookupError:
        return False
    return True


def is_question(message: dict[str, Any]) -> bool:
    """A question message still open: it carries Submit or one-click choice buttons."""
    blocks = message.get("blocks") or []
    return has_action(blocks, "parley_submit") or has_action(blocks, "parley_choose_")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kill(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Stop one process group this module started: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait(timeout=timeout)


@dataclass
class RunRef:
    """A run started from Slack: its id and the thread it talks in."""

    run_id: str
    channel: str
    root_ts: str
    started_by: str


@dataclass
class SlackStack:
    """The stand-in, a real `parley serve` and real `parley worker`s on the test Redis."""

    redis_url: str
    data_dir: Path
    workers: int = 2
    socket_mode: bool = False
    extra_env: dict[str, str] = field(default_factory=dict)
    ws: Workspace = field(default_factory=Workspace)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    port: int = 0
    api: LoopbackServer | None = None
    http: httpx.Client | None = None
    redis: redis.Redis | None = None

    # ---- lifecycle ---------------------------------------------------------------------
    @property
    def api_url(self) -> str:
        assert self.api is not None
        return self.api.url + "/api/"

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_")) and k != "REDIS_URL"}
        pythonpath = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH", "")) if p)
        env = {
            **base,
            "REDIS_URL": self.redis_url,
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "SLACK_API_URL": self.api_url,
            "PARLEY_ADMINS": ADMIN,
            "PARLEY_DATA_DIR": str(self.data_dir),
            "PARLEY_SWEEP_INTERVAL": "0.5",
            "PARLEY_AGENTS": "slack_agents",
            "PARLEY_LOG_LEVEL": "INFO",
            "PYTHONPATH": pythonpath,
        }
        if self.socket_mode:
            env["SLACK_APP_TOKEN"] = APP_TOKEN
        env.update(self.extra_env)
        return env

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        with (self.data_dir / f"{name}.log").open("wb") as log:
            proc = subprocess.Popen(
                [str(PARLEY), *args], env=self.env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.procs.append(proc)
        return proc

    def start(self) -> SlackStack:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.redis = redis.Redis.from_url(self.redis_url)
        self.redis.flushdb()
        self.ws.permalink_base = PERMALINK_BASE
        self.api = LoopbackServer(make_webapi_app(self.ws)).start()
        try:
            if self.socket_mode:
                self._spawn("serve", "serve", "--socket-mode")
            else:
                self.port = _free_port()
                self._spawn("serve", "serve", "--host", "127.0.0.1", "--port", str(self.port))
                self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=15)
                self.wait_for("parley serve to answer /healthz", self._healthy, timeout=30)
            for n in range(self.workers):
                self._spawn(f"worker-{n}", "worker", "--name", f"slack-test-{os.getpid()}-{n}-{secrets.token_hex(2)}")
        except BaseException:
            self.stop()
            raise
        return self

    def _healthy(self) -> bool:
        for proc in self.procs:
            if proc.poll() is not None:
                raise AssertionError(f"parley exited with {proc.returncode}\n{self.logs()}")
        assert self.http is not None
        try:
            return self.http.get("/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        for proc in reversed(self.procs):
            _kill(proc)
        self.procs.clear()
        if self.http is not None:
            self.http.close()
        if self.api is not None:
            self.api.stop()
        if self.redis is not None:
            self.redis.flushdb()
            self.redis.close()

    def logs(self, tail: int = 6000) -> str:
        parts = []
        for path in sorted(self.data_dir.glob("*.log")):
            parts.append(f"--- {path.name} ---\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    @classmethod
    def running(cls, redis_url: str, data_dir: Path, **kwargs: Any) -> Iterator[SlackStack]:
        """A generator for module-scoped fixtures: yields a started stack, always stops it."""
        stack = cls(redis_url, data_dir, **kwargs).start()
        try:
            yield stack
        finally:
            stack.stop()

    # ---- waiting -----------------------------------------------------------------------
    def wait_for(self, what: str, predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Poll `predicate` until it returns something truthy; fail with the processes' logs."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{self.logs()}")
            time.sleep(0.05)

    def mark(self) -> int:
        """A position in the stand-in's call log; pass it as `since` to see only later calls."""
        return len(self.ws.calls())

    def calls(
        self, method: str | None = None, pred: Callable[[dict[str, Any]], bool] | None = None, since: int = 0
    ) -> list[dict[str, Any]]:
        return [
            c
            for c in self.ws.calls()[since:]
            if (method is None or c["method"] == method) and (pred is None or pred(c))
        ]

    def wait_call(
        self,
        method: str,
        pred: Callable[[dict[str, Any]], bool] = lambda c: True,
        *,
        since: int = 0,
        timeout: float = 20.0,
        what: str = "",
    ) -> dict[str, Any]:
        """The first `method` call (after `since`) matching `pred`, waiting for it to happen."""
        found = self.wait_for(what or f"a {method} call", lambda: self.calls(method, pred, since), timeout)
        return found[0]

    def wait_ephemeral(self, user: str, pred: Callable[[str], bool], *, since: int = 0) -> dict[str, Any]:
        return self.wait_call(
            "chat.postEphemeral",
            lambda c: c["args"].get("user") == user and c["status"] == 200 and pred(str(c["args"].get("text", ""))),
            since=since,
            what=f"an ephemeral message to {user}",
        )

    def settle(self, quiet: float = 0.6, timeout: float = 15.0) -> None:
        """Wait until the stand-in has seen no call for `quiet` seconds (the lazy listeners are done)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = self.ws.events
            time.sleep(quiet)
            if self.ws.events == before:
                return
        raise AssertionError(f"the stand-in never went quiet\n{self.logs()}")

    # ---- sending -----------------------------------------------------------------------
    def send(
        self,
        body: str,
        content_type: str,
        *,
        secret: str = SIGNING_SECRET,
        timestamp: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """POST `body` to the bot's events URL, signed with `secret` (or with `headers` given)."""
        assert self.http is not None, "this stack serves over Socket Mode"
        sent = (
            headers if headers is not None else signed_headers(body, content_type, secret=secret, timestamp=timestamp)
        )
        return self.http.post(EVENTS_PATH, content=body.encode(), headers=sent)

    def command(
        self, text: str, *, user: str = "U0BOB", channel: str = "C0GENERAL", team: str = TEAM_ID
    ) -> httpx.Response:
        return self.send(slash_command_body(text, user=user, channel=channel, team=team), FORM)

    def interact(self, payload: dict[str, Any]) -> httpx.Response:
        return self.send(interaction_body(payload), FORM)

    def event(self, event: dict[str, Any], *, team: str = TEAM_ID, eid: str | None = None) -> httpx.Response:
        return self.send(event_callback_body(event, team=team, eid=eid), JSON_TYPE)

    # ---- runs, threads and questions ---------------------------------------------------
    def start_run(self, agent: str, text: str, *, user: str = "U0BOB", channel: str = "C0GENERAL") -> RunRef:
        """`/parley <agent> <text>` and the run it started; `text` must be unique to the test."""
        resp = self.command(f"{agent} {text}", user=user, channel=channel)
        assert resp.status_code == 200, (resp.status_code, resp.text)
        assert resp.text == "", resp.text
        return self.run_for(agent, text, user=user, channel=channel)

    def run_for(self, agent: str, text: str, *, user: str, channel: str) -> RunRef:
        def root() -> dict[str, Any] | None:
            return next(
                (
                    m
                    for m in self.ws.messages(channel)
                    if m.get("thread_ts", m["ts"]) == m["ts"]
                    and f"started *{agent}*" in m["text"]
                    and m["text"].startswith(f"<@{user}>")
                    and m["text"].endswith(mrkdwn_escape(text))
                ),
                None,
            )

        message = self.wait_for(f"the root message of {agent} {text!r}", root)
        assert self.redis is not None
        run_id = self.wait_for(
            "the thread to be recorded", lambda: self.redis.get(f"parley:thread:{TEAM_ID}:{channel}:{message['ts']}")
        )
        return RunRef(run_id.decode(), channel, message["ts"], user)

    def thread(self, run: RunRef) -> list[dict[str, Any]]:
        return self.ws.thread(run.channel, run.root_ts)[1:]

    def question(self, run: RunRef, n: int = 1, timeout: float = 20.0, *, wait_open: bool = True) -> dict[str, Any]:
        """The n-th question message posted in the run's thread (as stored now).

        With `wait_open`, also wait until the run is parked on it: a question is posted just
        before its run parks, and an answer in between is refused as "not waiting yet".
        """

        def find() -> dict[str, Any] | None:
            asked = [m for m in self.thread(run) if is_question(m) or (m.get("edited") and m.get("blocks"))]
            return asked[n - 1] if len(asked) >= n else None

        message = self.wait_for(f"question {n} of run {run.run_id}", find, timeout)
        if wait_open and is_question(message):
            self.wait_for(
                f"run {run.run_id} to park on question {n}", lambda: self.open_on(run, message["ts"]), timeout
            )
        return message

    def open_on(self, run: RunRef, ts: str) -> bool:
        """True when the run is paused on the question posted at `ts`."""
        assert self.redis is not None
        iid = self.redis.hget(f"parley:run:{run.run_id}", "interrupt")
        if self.status(run.run_id) != "paused" or not iid:
            return False
        state, message = self.redis.hmget(f"parley:interrupt:{iid.decode()}", ["state", "message"])
        return state == b"open" and json.loads(message or b"{}").get("ts") == ts

    def message(self, run: RunRef, ts: str) -> dict[str, Any]:
        found = self.ws.message(run.channel, ts)
        assert found is not None
        return found

    def status(self, run_id: str) -> str:
        assert self.redis is not None
        raw = self.redis.hget(f"parley:run:{run_id}", "status")
        return raw.decode() if raw else ""

    def wait_status(self, run: RunRef, *statuses: str, timeout: float = 20.0) -> str:
        return self.wait_for(
            f"run {run.run_id} to be {'/'.join(statuses)}",
            lambda: s if (s := self.status(run.run_id)) in statuses else "",
            timeout,
        )

    def replies(self, run: RunRef, pred: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        return [m for m in self.thread(run) if pred(m)]

    def wait_reply(
        self, run: RunRef, pred: Callable[[dict[str, Any]], bool], what: str, timeout: float = 20.0
    ) -> dict[str, Any]:
        return self.wait_for(what, lambda: next(iter(self.replies(run, pred)), None), timeout)

    # ---- answering ---------------------------------------------------------------------
    def submit(
        self,
        run: RunRef,
        question: dict[str, Any],
        fills: dict[str, Any],
        *,
        user: str | None = None,
        team: str = TEAM_ID,
        omit_untouched: bool = False,
    ) -> tuple[httpx.Response, dict[str, Any]]:
        """Click Submit on `question` as `user` after filling it; returns the response and the payload sent."""
        payload = self.submit_payload(run, question, fills, user=user, team=team, omit_untouched=omit_untouched)
        return self.interact(payload), payload

    def submit_payload(
        self,
        run: RunRef,
        question: dict[str, Any],
        fills: dict[str, Any],
        *,
        user: str | None = None,
        team: str = TEAM_ID,
        omit_untouched: bool = False,
    ) -> dict[str, Any]:
        blocks = question["blocks"]
        block, button = find_element(blocks, "parley_submit")
        return block_actions_payload(
            user=user or run.started_by,
            message=question,
            channel=run.channel,
            action=button_action(block, button),
            state_values=form_state(blocks, fills, omit_untouched=omit_untouched),
            team=team,
        )
