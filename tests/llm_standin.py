"""A chat-completions stand-in for tests: a loopback HTTP server that plays a script.

Each POST to `.../chat/completions` takes the next reply of the script: a canned
assistant message (a dict), a function of the request body returning one, or an
`HTTPReply` for an error status. Every request body is kept in `requests`, so a
test can count model calls and read exactly what the model was sent. Problems on
the server side (a script that ran out, a reply function that raised) are kept in
`problems` and answered with HTTP 500; tests assert `problems == []`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class HTTPReply:
    """An HTTP-level reply, e.g. `HTTPReply(401, {"error": {"message": "bad key"}})`."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)


Reply = Message | Callable[[dict[str, Any]], Message] | HTTPReply


def final(text: str) -> Message:
    """An assistant message that ends the loop."""
    return {"role": "assistant", "content": text}


def call(name: str, arguments: dict[str, Any] | str, call_id: str) -> dict[str, Any]:
    """One tool call in the wire shape; `arguments` as JSON text unless given as text already."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def calls(*tool_calls: dict[str, Any], content: str | None = None) -> Message:
    """An assistant message calling tools."""
    return {"role": "assistant", "content": content, "tool_calls": list(tool_calls)}


def last_tool_result(body: dict[str, Any]) -> str:
    """The content of the last tool message in a request body."""
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")


def _usage(body: dict[str, Any], message: Message) -> dict[str, int]:
    """Deterministic token counts: about four characters a token."""
    prompt = len(json.dumps(body.get("messages", []))) // 4 + 1
    completion = len(json.dumps(message)) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class ChatStandin:
    """The server; `base_url` goes into PARLEY_LLM_BASE_URL. Use as a context manager."""

    def __init__(self, *script: Reply) -> None:
        self.script: list[Reply] = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="llm-standin", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def __enter__(self) -> ChatStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def respond(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body answering one request."""
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            reply = self.script[n] if n < len(self.script) else None
        if reply is None:
            self.problems.append(f"request {n + 1} arrived but the script has {len(self.script)} replies")
            return 500, {"error": {"message": "the stand-in's script ran out"}}
        if isinstance(reply, HTTPReply):
            return reply.status, reply.body
        try:
            message = reply(body) if callable(reply) else reply
        except Exception as exc:  # a failed check inside a reply function
            self.problems.append(f"request {n + 1}: {type(exc).__name__}: {exc}")
            return 500, {"error": {"message": f"stand-in reply failed: {exc}"}}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return 200, {
            "id": f"chatcmpl-{n + 1}",
            "object": "chat.completion",
            "created": 1_700_000_000 + n,
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(body, message),
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    status, doc = 400, {"error": {"message": "body is not JSON"}}
                else:
                    status, doc = standin.respond(self.path, body, dict(self.headers.items()))
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
