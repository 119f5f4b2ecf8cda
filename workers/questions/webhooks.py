"""Signed webhooks: where a callback may go, how it is signed, and its delivery as an RQ job.

When a question with a `callback_url` closes (answered, expired, cancelled), `announce`
records the event's body once and enqueues `deliver` under one job id with RQ's `Retry`.
Every attempt sends the same body with the same `webhook-id`, signed as the Standard
Webhooks spec says; a non-2xx answer, an error or a timeout raises, and RQ tries again
after the next interval. The last failure is recorded as `failed` on the question. Each
attempt checks the destination again and connects to the address it checked (`pinned`).

Signing is the spec's three lines of HMAC-SHA256 (stdlib `hmac`), kept here rather than
taken from the `standardwebhooks` package so that the tests, which verify with that
package, check Parley against an independent implementation of the spec.
"""

from __future__ import annotations

import base64
import fnmatch
import functools
import hashlib
import hmac
import ipaddress
import socket
import time
from urllib.parse import urlsplit, urlunsplit

import httpx
from rq import Retry, get_current_job

from workers.logs import Log
from workers.questions import config as config_mod
from workers.questions.exceptions import QuestionError
from workers.questions.models import Event
from workers.questions.views import build_view
from workers.runtime import queues, wiring
from workers.runtime.wiring import Runtime
from workers.store import job_ids
from workers.store.questions import QuestionStore
from workers.store.records import InterruptRecord, InterruptState, RunRecord, WebhookState

log = Log("parley.webhooks")
DELIVER = queues.DELIVER
EVENTS = {
    InterruptState.ANSWERED: "answered",
    InterruptState.EXPIRED: "expired",
    InterruptState.CANCELLED: "cancelled",
}


WEB_PORTS = frozenset({80, 443})
"""The ports an allow entry without a port admits."""
LAST_32_BITS = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::/96",  # IPv4-compatible (RFC 4291, deprecated)
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT, RFC 2765)
        "64:ff9b::/96",  # NAT64's well-known prefix (RFC 6052)
    )
)
"""IPv6 prefixes whose last 32 bits are an IPv4 address (IPv4-mapped, 6to4 and Teredo have properties)."""
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


class DestinationRefused(QuestionError):
    """A callback URL Parley will not call: not http(s), no host, or a private address not allowed."""


def check_destination(url: str, allow: tuple[str, ...]) -> str | None:
    """Refuse a callback that is not http(s), or whose host resolves to a loopback, link-local,
    private or otherwise internal address (an IPv6 address embedding one included), unless the
    host and port match a `PARLEY_WEBHOOK_ALLOW` entry. With entries set, only matching hosts
    are reached at all.

    Returns the address that was checked, which a delivery then connects to (`pinned`); None
    for a host an operator allowed by name, which is connected to by name."""
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise DestinationRefused("callback_url must be an http or https URL")
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # a port out of range or not a number, a bracket left open
        raise DestinationRefused(f"callback_url is not a valid URL: {exc}") from None
    if not host:
        raise DestinationRefused("callback_url has no host")
    if any(allows(entry, host, port) for entry in allow):
        return None
    if allow:
        raise DestinationRefused(f"callback_url host {host!r} port {port} is not in PARLEY_WEBHOOK_ALLOW")
    try:
        infos = socket.getaddrinfo(host, port)
    except (socket.gaierror, UnicodeError):
        raise DestinationRefused(f"callback_url host {host!r} does not resolve") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        if refused_address(address):
            raise DestinationRefused(
                f"callback_url host {host!r} is a private, loopback or link-local address ({address}); "
                "allow it with PARLEY_WEBHOOK_ALLOW"
            )
    return str(addresses[0])


def allows(entry: str, host: str, port: int) -> bool:
    """Whether one `PARLEY_WEBHOOK_ALLOW` entry admits `host` on `port`: `pattern` (fnmatch) on the
    web's ports 80 and 443 only, `pattern:port` on that one port, `pattern:*` on any port. An IPv6
    address is written in brackets (`[fd00::7]:8443`)."""
    entry = entry.strip().lower()
    pattern, ports = entry, WEB_PORTS
    if entry.startswith("["):
        pattern, _, rest = entry[1:].partition("]")
        ports = _ports(rest.removeprefix(":")) if rest else WEB_PORTS
    elif entry.count(":") == 1:
        pattern, _, given = entry.partition(":")
        ports = _ports(given)
    return bool(pattern) and fnmatch.fnmatch(host.strip("[]"), pattern) and (ports is None or port in ports)


def _ports(given: str) -> frozenset[int] | None:
    """The ports an entry's `:port` admits: None for `*` (any); nothing for what is not a port."""
    if given == "*":
        return None
    return frozenset({int(given)}) if given.isdigit() and 0 < int(given) < 65536 else frozenset()


def refused_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether a webhook may not go to `address`: not global, multicast, or an IPv6 address that
    carries a refused IPv4 address (IPv4-mapped and -compatible, NAT64, 6to4, Teredo), which a
    translating network would deliver to that IPv4 address."""
    if not address.is_global or address.is_multicast:
        return True
    if isinstance(address, ipaddress.IPv4Address):
        return False
    if address in NAT64_LOCAL:  # RFC 8215: the IPv4 address sits where the operator chose
        return True
    return any(refused_address(inner) for inner in embedded_ipv4(address))


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries by a standard translation or tunnel."""
    found = [a for a in (address.ipv4_mapped, address.sixtofour) if a is not None]
    if address.teredo is not None:
        found.extend(address.teredo)  # the Teredo server and the client behind it
    if any(address in net for net in LAST_32_BITS):
        found.append(ipaddress.IPv4Address(address.packed[-4:]))
    return found


def pinned(url: str, address: str | None) -> tuple[str, dict[str, str], dict[str, str]]:
    """The URL, extra headers and httpx request extensions that reach `url`'s host at `address`.

    Resolving the host again when connecting could give an address that was never checked
    (DNS rebinding): the delivery connects to the address `check_destination` checked, and
    still names the host, in the `Host` header and, over TLS, as the SNI name the server's
    certificate is verified against. With no address (an allowed host) the URL is used as is.
    """
    if address is None:
        return url, {}, {}
    parts = urlsplit(url)
    ip = ipaddress.ip_address(address)
    netloc = f"[{ip}]" if ip.version == 6 else str(ip)
    if parts.port is not None:
        netloc += f":{parts.port}"
    userinfo, _, host_and_port = parts.netloc.rpartition("@")
    if userinfo:
        netloc = f"{userinfo}@{netloc}"
    extensions = {"sni_hostname": parts.hostname or ""} if parts.scheme == "https" else {}
    return urlunsplit(parts._replace(netloc=netloc)), {"host": host_and_port}, extensions


def post(url: str, address: str | None, *, content: str, headers: dict[str, str], timeout: float) -> httpx.Response:
    """POST `content` to `url` over a connection to `address` (see `pinned`), redirects not followed."""
    target, host_header, extensions = pinned(url, address)
    client = _http(urlsplit(url).hostname or "")
    return client.post(
        target, content=content, headers={**headers, **host_header}, timeout=timeout, extensions=extensions
    )


def sign(secret: str, msg_id: str, timestamp: int, body: str) -> str:
    """The `webhook-signature` header value: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{msg_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def announce(runtime: Runtime, run: RunRecord, interrupt: InterruptRecord) -> bool:
    """Enqueue the webhook for a question that closed, once per event; False when there is none to send."""
    event = EVENTS.get(interrupt.state)
    store = QuestionStore(runtime.redis)
    question = store.get(run.id)
    if event is None or question is None or not question.callback_url:
        return False
    if question.webhook is not None and question.webhook.event == event:
        return False  # announced before (this is a replay)
    view = build_view(question, run, interrupt)
    payload = Event(type=f"question.{event}", data=view).model_dump_json()
    store.set_webhook(run.id, WebhookState(id=f"msg_{run.id}_{event}", event=event, payload=payload))
    cfg = config_mod.current()
    intervals = list(cfg.webhook_retry_intervals)
    runtime.queue.enqueue(
        DELIVER,
        run.id,
        job_id=job_ids.webhook(run.id, event),
        retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
        job_timeout=int(cfg.webhook_timeout * 3),
        result_ttl=3600,
        failure_ttl=7 * 86400,
    )
    log.info("webhook queued", run_id=run.id, interrupt_id=interrupt.id, event=event)
    return True


def deliver(question_id: str) -> str:
    """One attempt at delivering a question's webhook (RQ's `Retry` makes the next)."""
    runtime = wiring.current()
    cfg = config_mod.current()
    store = QuestionStore(runtime.redis)
    question = store.get(question_id)
    state = question.webhook if question is not None else None
    if question is None or state is None or state.status == "delivered":
        return "nothing to deliver"
    job = get_current_job()
    final = job is None or not job.retries_left
    state = state.model_copy(update={"attempts": state.attempts + 1})
    ctx = {"run_id": question_id, "webhook_id": state.id, "attempt": state.attempts}
    try:
        address = check_destination(question.callback_url, cfg.webhook_allow)
    except DestinationRefused as exc:  # no retry would change this
        runtime.store.add_history(question_id, "webhook failed", "parley", **_detail(state), error=str(exc))
        store.set_webhook(question_id, state.model_copy(update={"status": "failed", "last_error": str(exc)}))
        log.warning("webhook refused", **ctx, error=str(exc))
        return "refused"
    token = store.token_by_name(question.token)
    try:
        if token is None:
            raise RuntimeError(f"the token {question.token!r} was revoked; there is no secret to sign with")
        now = int(time.time())
        headers = {
            "content-type": "application/json",
            "webhook-id": state.id,
            "webhook-timestamp": str(now),
            "webhook-signature": sign(token.webhook_secret, state.id, now, state.payload),
            "user-agent": "Parley-Webhooks/1",
        }
        resp = post(question.callback_url, address, content=state.payload, headers=headers, timeout=cfg.webhook_timeout)
        state = state.model_copy(update={"last_status": resp.status_code})
        if not 200 <= resp.status_code < 300:
            raise RuntimeError(f"the receiver answered HTTP {resp.status_code}")
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
        if final:  # in the run's history, so admins see it (`parley runs show`, Slack's Inspect)
            runtime.store.add_history(question_id, "webhook failed", "parley", **_detail(state), error=error)
        status = "failed" if final else "pending"
        store.set_webhook(question_id, state.model_copy(update={"status": status, "last_error": error}))
        log.warning("webhook attempt failed", **ctx, error=error, final=final)
        raise
    runtime.store.add_history(question_id, "webhook delivered", "parley", **_detail(state))
    store.set_webhook(question_id, state.model_copy(update={"status": "delivered", "delivered_at": time.time()}))
    log.info("webhook delivered", **ctx, status=resp.status_code)
    return "delivered"


@functools.lru_cache(maxsize=256)
def _http(host: str) -> httpx.Client:
    """One client per destination host in a worker process: its pool and TLS context are made once,
    not per attempt. Per host, because connections are pooled by the address they go to, and a
    TLS connection verified for one host must not carry another host's webhook that shares its
    address. Redirects are not followed (a redirect could lead past the destination check)."""
    return httpx.Client(follow_redirects=False)


def _detail(state: WebhookState) -> dict[str, object]:
    return {"webhook_id": state.id, "webhook_event": state.event, "attempts": state.attempts}
