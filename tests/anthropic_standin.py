"""A scripted Anthropic Messages API for tests: a loopback HTTP server in place of the model.

A real client (Claude Code, through `ANTHROPIC_BASE_URL`) posts to `/v1/messages`; each request
of the conversation being tested (one that offers `tools`) gets the next turn of the script,
streamed as server-sent events exactly in the Messages streaming format (`message_start`,
`content_block_start`/`_delta`/`_stop`, `message_delta`, `message_stop`), or as one JSON message
when `stream` is false. Other requests (a client's side questions, with no tools) are answered
with a short text. Every request body is kept in `requests`, so a test reads what the model was
sent; problems on the server's side are kept in `problems` and answered with HTTP 500.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Block = dict[str, Any]
Turn = Callable[[dict[str, Any]], list[Block]]
"""One reply of the model: the content blocks answering a request body."""


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def tool_use(name: str, arguments: dict[str, Any], use_id: str | None = None) -> Block:
    return {"type": "tool_use", "id": use_id or f"toolu_{secrets.token_hex(8)}", "name": name, "input": arguments}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The `tool_result` blocks of a request's last message: what the client reports back to the model."""
    last = (body.get("messages") or [{}])[-1]
    content = last.get("content")
    return [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []


def result_text(block: dict[str, Any]) -> str:
    """A `tool_result`'s text, whether its content is a string or a list of text blocks."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _events(blocks: list[Block], model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Messages streaming events of one reply, in order."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    message = {
        "id": f"msg_{secrets.token_hex(8)}", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }  # fmt: skip
    yield "message_start", {"type": "message_start", "message": message}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5},
    }  # fmt: skip
    yield "message_stop", {"type": "message_stop"}


@dataclass
class MessagesAPI:
    """The scripted model: `turns` answer the tested conversation's requests in order."""

    turns: list[Turn] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def conversation(self) -> list[dict[str, Any]]:
        """The requests that offered tools: the tested conversation, not the client's side questions."""
        with self._lock:
            return [r for r in self.requests if r.get("tools")]

    def reply(self, body: dict[str, Any]) -> list[Block]:
        with self._lock:
            self.requests.append(body)
            if not body.get("tools"):
                return [text("ok")]
            if not self.turns:
                self.problems.append("the script ran out of turns")
                return [text("The script has no more turns.")]
            turn = self.turns.pop(0)
        return turn(body)

    @contextmanager
    def serving(self) -> Iterator[MessagesAPI]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    return self._json({"input_tokens": 10})
                if not path.endswith("/v1/messages"):
                    return self._json({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)
                try:
                    blocks = api.reply(body)
                except Exception as exc:  # the script's own failure: the test reads `problems`
                    api.problems.append(repr(exc))
                    return self._json({"type": "error", "error": {"type": "api_error", "message": repr(exc)}}, 500)
                model = str(body.get("model") or "claude-test")
                if body.get("stream"):
                    return self._stream(blocks, model)
                events = dict(_events(blocks, model))
                message = {**events["message_start"]["message"], "content": blocks}
                return self._json({**message, "stop_reason": events["message_delta"]["delta"]["stop_reason"]})

            def _json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, blocks: list[Block], model: str) -> None:
                data = b"".join(
                    f"event: {name}\ndata: {json.dumps(event)}\n\n".encode() for name, event in _events(blocks, model)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
