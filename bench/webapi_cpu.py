"""`python bench/webapi_cpu.py [--calls N] [--rounds R]`: a Web API call's CPU, new connection each time or kept.

A full cycle makes four Web API calls from its worker. slack_sdk's own transport
(`WebClient`, through urllib) opens a connection for every call; Parley's
(`KeepAliveWebClient`, `bot/slack/transport.py`) keeps one open per thread. This measures
both, side by side in alternating rounds, as the CPU the calling process spends per
`chat.postMessage` (the same JSON body for both), over plain HTTP and over TLS (the
way Slack is reached: a handshake per call without keep-alive).

The server is a process of its own on 127.0.0.1, so its CPU is not counted; it answers
`{"ok": true, ...}` on HTTP/1.1, over TLS with a certificate for `localhost`
(`bench.tls`), which the clients trust.
"""

from __future__ import annotations

import argparse
import json
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
NEW, KEPT = "new connection per call (slack_sdk)", "kept alive (Parley)"
BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "A question, " + "x" * 400}}] * 5


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are written apart: as real servers, send each at once

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        body = b'{"ok": true, "channel": "C0BENCH00", "ts": "1700000000.000100"}'
        self.send_response(200)
        self.send_header("content-type", "application/json; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(port: int, cert: str | None, key: str | None) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), _Ok)
    if cert and key:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()


def _per_call(client: object, calls: int) -> tuple[float, float]:
    """CPU and wall milliseconds per call over `calls` calls (after one untimed call)."""
    post = client.chat_postMessage  # type: ignore[attr-defined]
    post(channel="C0BENCH00", text="warm", blocks=BLOCKS)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(calls):
        post(channel="C0BENCH00", text="a question", blocks=BLOCKS)
    return 1000 * (time.process_time() - cpu0) / calls, 1000 * (time.perf_counter() - wall0) / calls


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        port, *files = args.serve
        _serve(int(port), *(files or [None, None]))
        return 0
    sys.path.insert(0, str(HERE))
    from slack_sdk import WebClient

    from bench.processes import free_port
    from bench.tls import localhost_certificate
    from bot.slack.transport import KeepAliveWebClient

    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = (str(p) for p in localhost_certificate(Path(tmp)))
        trust = ssl.create_default_context(cafile=cert)
        servers = []
        try:
            for scheme in ("http", "https"):
                port = free_port()
                extra = [cert, key] if scheme == "https" else []
                servers.append(subprocess.Popen([sys.executable, __file__, "--serve", str(port), *extra]))
                host = "localhost" if scheme == "https" else "127.0.0.1"
                base = f"{scheme}://{host}:{port}/api/"
                time.sleep(1.0)
                for _ in range(args.rounds):
                    for name, cls in ((NEW, WebClient), (KEPT, KeepAliveWebClient)):
                        client = cls(token="xoxb-bench-0000", base_url=base, ssl=trust if scheme == "https" else None)
                        results.setdefault(f"{scheme}: {name}", []).append(_per_call(client, args.calls))
        finally:
            for server in servers:
                server.terminate()
                server.wait(10)
    print(f"chat.postMessage from one thread, {args.calls} calls x {args.rounds} rounds; medians per call")
    summary = {}
    for label, rounds in results.items():
        cpu = statistics.median(r[0] for r in rounds)
        wall = statistics.median(r[1] for r in rounds)
        summary[label] = cpu
        print(f"  {label:45s} CPU {cpu:.3f} ms   wall {wall:.3f} ms")
    for scheme in ("http", "https"):
        kept, new = summary[f"{scheme}: {KEPT}"], summary[f"{scheme}: {NEW}"]
        print(f"  {scheme}: kept / new = {kept / new:.2f}")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
