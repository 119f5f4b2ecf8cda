"""A chat-completions client over httpx, speaking the OpenAI wire format.

Any server with an OpenAI-compatible `POST {base_url}/chat/completions` works. Examples are
OpenAI, vLLM, Ollama, llama.cpp and LiteLLM. The client sends messages and tool definitions. It
returns the assistant message, normalised to the shape it is sent back in. It adds token usage.
So the loop can record both as JSON and replay them.

Errors are split by whether a retry can help. `LLMError` is an ordinary exception, so the
runtime retries the run. It covers network failures, 429, 5xx and malformed responses.
`LLMRejected` is an `AgentError`, so the run fails at once, saying what to check. It covers a
bad key, an unknown model, or a request the server refuses.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from workers.exceptions import AgentError, ConfigError, ParleyError
from workers.llm.deadline import CallDeadline
from workers.logs import redacted

ENV_BASE_URL = "PARLEY_LLM_BASE_URL"
ENV_MODEL = "PARLEY_LLM_MODEL"
ENV_API_KEY = "PARLEY_LLM_API_KEY"
_RETRYABLE = {408, 409, 425, 429}
_EXCERPT = 300


class LLMError(ParleyError):
    """A failed model call that a later attempt may fix, so the run is retried."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class LLMRejected(LLMError, AgentError):
    """The API refused the request itself, so retrying cannot help and the run fails."""


class LLMNotConfigured(ConfigError, AgentError):
    """The model settings are missing or malformed, and the message names the variables."""


class LLMConfig(BaseModel):
    """Where the model lives: an OpenAI-compatible base URL, model name, optional key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str
    model: str = Field(min_length=1)
    api_key: SecretStr | None = None
    timeout: float = Field(default=120.0, gt=0)

    @field_validator("base_url")
    @classmethod
    def _base_url(cls, v: str) -> str:
        v = v.strip()
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL, e.g. https://api.openai.com/v1")
        return v.rstrip("/")

    @field_validator("api_key", mode="before")
    @classmethod
    def _empty_key(cls, v: Any) -> Any:
        return v or None

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"


def llm_config_from_env(environ: Mapping[str, str] | None = None) -> LLMConfig:
    """Read PARLEY_LLM_BASE_URL, PARLEY_LLM_MODEL and PARLEY_LLM_API_KEY (optional).

    This is the one place that reads them. Call it when an agent runs, not at import. Agents execute
    inside workers whose entry point is RQ's job function. Agent modules are imported before a
    worker or test has settled its environment. So a module-level read would freeze whatever was set
    at import time. Parley's own settings are read by `parley.settings.load()` at a process's entry
    point. An agent receives only `(run, text)`, so its call is its entry point. Raises
    `LLMNotConfigured` naming every missing variable.
    """
    env = os.environ if environ is None else environ
    base_url, model = env.get(ENV_BASE_URL, "").strip(), env.get(ENV_MODEL, "").strip()
    missing = [name for name, value in ((ENV_BASE_URL, base_url), (ENV_MODEL, model)) if not value]
    if missing:
        raise LLMNotConfigured(
            f"the language model is not configured: set {' and '.join(missing)} "
            f"(and {ENV_API_KEY} if the server needs a key)"
        )
    try:
        return LLMConfig.model_validate(
            {"base_url": base_url, "model": model, "api_key": env.get(ENV_API_KEY, "").strip() or None}
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        name = {"base_url": ENV_BASE_URL, "model": ENV_MODEL}.get(str(err["loc"][0]), ENV_API_KEY)
        raise LLMNotConfigured(f"{name}: {err['msg']}") from None


@dataclass(frozen=True)
class Completion:
    """One model reply: the assistant message as sent back next turn, and its token usage."""

    message: dict[str, Any]
    usage: dict[str, int]

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return self.message.get("tool_calls") or []


class ChatClient:
    """Calls `{base_url}/chat/completions`, one instance per loop, closed when done."""

    def __init__(self, config: LLMConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key is not None:
            headers["Authorization"] = f"Bearer {config.api_key.get_secret_value()}"
        self._http = httpx.Client(headers=headers, timeout=config.timeout, transport=transport)
        self._deadline = CallDeadline()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Completion:
        """Send `messages` (and `tools`, offered with tool_choice "auto") and return the reply."""
        body: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        url = redacted(self.config.url)  # as errors show it
        try:
            response = self._post(body)
        except httpx.HTTPError as exc:
            raise LLMError(f"cannot reach the model at {url}: {type(exc).__name__}: {redacted(str(exc))}") from exc
        if response.status_code >= 400:
            raise _http_error(url, response)
        try:
            data = response.json()
        except ValueError:
            raise LLMError(
                f"the model at {url} answered with something that is not JSON: {response.text[:_EXCERPT]!r}"
            ) from None
        return parse_completion(data, url)

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        """The whole response to `body`, read within the configured timeout.

        httpx's timeout bounds each network read, not the call, so a server sending a byte at a time
        could hold a call for ever. One deadline covers the call, from connecting to the last byte
        (`CallDeadline`). Past it, this raises `httpx.ReadTimeout`, as a server too slow to answer does.
        """
        request = self._http.build_request("POST", self.config.url, json=body, extensions=self._deadline.extensions)
        late = httpx.ReadTimeout(f"no whole answer within {self.config.timeout:g} s", request=request)
        with self._deadline.running(self.config.timeout) as passed:
            try:
                response = self._http.send(request, stream=True)
                try:
                    chunks: list[bytes] = []
                    for chunk in response.iter_bytes():
                        if passed():  # a transport without sockets to shut is still cut off here
                            raise late
                        chunks.append(chunk)
                finally:
                    response.close()
            except httpx.HTTPError as exc:
                if exc is not late and passed():  # the deadline shut the connection under it
                    raise late from exc
                raise
        headers = response.headers.copy()
        headers.pop("content-encoding", None)  # the chunks are decoded already
        return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=request)


def _http_error(url: str, response: httpx.Response) -> LLMError:
    status = response.status_code
    detail = response.text[:_EXCERPT]
    try:
        err = response.json().get("error")
        detail = str(err.get("message") if isinstance(err, dict) else err or detail)[:_EXCERPT]
    except (ValueError, AttributeError):
        pass
    message = f"the model at {url} answered HTTP {status}: {detail}"
    if status >= 500 or status in _RETRYABLE:
        return LLMError(message, status)
    if status in (401, 403):
        message += f" (check {ENV_API_KEY})"
    elif status == 404:
        message += f" (check {ENV_BASE_URL} and {ENV_MODEL})"
    return LLMRejected(message, status)


def _text(content: Any) -> str | None:
    """Message content as text, since some servers send a list of parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def _tool_calls(raw: Any, url: str) -> list[dict[str, Any]]:
    """Tool calls in the wire shape, with distinct ids and arguments as JSON text."""
    if not raw:
        return []
    if not isinstance(raw, list):
        raise LLMError(f"the model at {url} sent tool_calls that are not a list")
    calls: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise LLMError(f"the model at {url} sent a tool call without a function name: {call!r:.{_EXCERPT}}")
        args = fn.get("arguments")
        if not isinstance(args, str):
            args = json.dumps(args if args is not None else {}, ensure_ascii=False)
        call_id = str(call.get("id") or f"call_{i}")
        if call_id in seen:
            call_id = f"{call_id}_{i}"
        seen.add(call_id)
        calls.append({"id": call_id, "type": "function", "function": {"name": fn["name"], "arguments": args}})
    return calls


def _count(value: Any) -> int:
    """A token count as an int, 0 for anything else a server sent."""
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        return 0


def parse_completion(data: Any, url: str = "the model") -> Completion:
    """Read choices[0].message and usage out of a chat-completions response body."""
    try:
        message = data["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError("message is not an object")
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMError(f"the response from {url} has no choices[0].message ({exc}): {str(data)[:_EXCERPT]}") from None
    normalised: dict[str, Any] = {"role": "assistant", "content": _text(message.get("content"))}
    calls = _tool_calls(message.get("tool_calls"), url)
    if calls:
        normalised["tool_calls"] = calls
    raw_usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    usage = {k: _count(raw_usage.get(k)) for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    usage["total_tokens"] = usage["total_tokens"] or usage["prompt_tokens"] + usage["completion_tokens"]
    return Completion(message=normalised, usage=usage)
