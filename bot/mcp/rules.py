"""The rules file of `parley mcp gateway` and `approve_tool_use`: which calls go, stop, or ask.

One YAML file names the upstream MCP servers, for the gateway. It says where approvals are
asked: `channel`, `assignees`, `expires_in`. And it holds an ordered list of rules. The first
rule whose `tools` glob matches a tool's name, ignoring case, decides. A tool no rule matches is
asked about, so an approval gate fails closed. `${NAME}` in any string is replaced from the
environment given to `load_config`. That is read once, at the entry point. A name unset, or set
to nothing, is an error. So a missing token is not sent upstream as "Bearer ". Anything else
written `${...}` is an error too, since it would otherwise be sent as written.
"""

from __future__ import annotations

import copy
import fnmatch
import re
import unicodedata
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from workers.exceptions import ParleyError
from workers.questions.models import CHANNEL_PATTERN

REDACTED = "••••"
MAX_EXPIRES_IN = 90 * 24 * 3600
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LOOKS_LIKE_ONE = re.compile(r"\$\{[^}]*\}?")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class RulesError(ParleyError, ValueError):
    """The rules file is unreadable or asks the impossible, so nothing is served."""


class RuleAction(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class Rule(BaseModel):
    """One line of `rules`: a glob over tool names, and what to do on a match."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: str = Field(min_length=1)
    action: RuleAction
    reason: str | None = Field(default=None, max_length=500)
    redact: tuple[str, ...] = ()
    allow_standing: bool = False

    def matches(self, tool_name: str) -> bool:
        """Whether the glob matches `tool_name`, so `delete_*` also stops an upstream's `Delete_File`."""
        return fnmatch.fnmatchcase(folded(tool_name), folded(self.tools))


ASK_BY_DEFAULT = Rule(tools="*", action=RuleAction.ASK)


class ElicitationLimits(BaseModel):
    """How many elicitations an upstream may put to people, per tool call and per minute."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    per_call: int = Field(default=3, ge=0, le=100)
    per_minute: int = Field(default=10, ge=0, le=1000)


def folded(name: str) -> str:
    """`name` as rules compare it: NFKC-unified, invisible characters dropped, case folded."""
    visible = "".join(c for c in unicodedata.normalize("NFKC", name) if unicodedata.category(c) != "Cf")
    return visible.casefold()


class Upstream(BaseModel):
    """An upstream MCP server: a stdio command, or a streamable HTTP URL with headers.

    `protocol` is how the gateway connects. "legacy" is the initialize handshake, which every SDK's
    `ctx.elicit` needs. "auto" discovers, else uses the handshake. Or it is a 2026-07-28 version.
    `timeout` is how long one call may take, not counting people answering its elicitations.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: tuple[str, ...] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    protocol: str = "legacy"
    timeout: float = Field(default=300, gt=0, le=86400)
    elicitations: ElicitationLimits = Field(default_factory=ElicitationLimits)

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, protocol: str) -> str:
        known = ("legacy", "auto", *MODERN_PROTOCOL_VERSIONS)
        if protocol not in known:
            raise ValueError(f"`protocol` {protocol!r} is not one of {', '.join(known)}")
        return protocol

    @model_validator(mode="after")
    def _one_transport(self) -> Upstream:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (stdio) or `url` (streamable HTTP)")
        if self.command is not None and not self.command:
            raise ValueError("`command` is empty")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError("`url` must start with http:// or https://")
        return self


class RulesConfig(BaseModel):
    """The whole file. `upstreams` is empty for `approve_tool_use`, which proxies nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    upstreams: dict[str, Upstream] = Field(default_factory=dict)
    channel: str | None = Field(default=None, pattern=CHANNEL_PATTERN)
    assignees: tuple[str, ...] = ()
    expires_in: int = Field(default=900, ge=60, le=MAX_EXPIRES_IN)
    rules: tuple[Rule, ...] = ()

    @field_validator("upstreams")
    @classmethod
    def _names(cls, upstreams: dict[str, Upstream]) -> dict[str, Upstream]:
        for name in upstreams:
            if not _NAME.match(name):
                raise ValueError(f"upstream name {name!r} must be 1-64 letters, digits, '_' or '-'")
        return upstreams

    def rule_for(self, tool_name: str) -> Rule:
        """The first rule matching `tool_name`, or asking when none does."""
        return next((rule for rule in self.rules if rule.matches(tool_name)), ASK_BY_DEFAULT)


def expand(value: Any, environ: Mapping[str, str], where: str = "") -> Any:
    """`value` with every `${NAME}` in its strings replaced from `environ`."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise RulesError(f"{where or 'the file'}: ${{{name}}} is not set in the environment")
            if not environ[name].strip():
                raise RulesError(f"{where or 'the file'}: ${{{name}}} is empty in the environment")
            return environ[name]

        for found in _LOOKS_LIKE_ONE.findall(_VARIABLE.sub("", value)):  # `${ TOKEN}`, `${TOKEN:-x}`, `${TOKEN`
            raise RulesError(f"{where or 'the file'}: {found!r} is not a variable; write ${{NAME}} (A-Z, 0-9, _)")
        return _VARIABLE.sub(one, value)
    if isinstance(value, dict):
        return {key: expand(item, environ, f"{where}.{key}" if where else str(key)) for key, item in value.items()}
    if isinstance(value, list):
        return [expand(item, environ, f"{where}[{index}]") for index, item in enumerate(value)]
    return value


def parse_config(text: str, environ: Mapping[str, str], source: str = "the rules file") -> RulesConfig:
    """The rules in `text` (YAML), `${NAME}`s expanded from `environ`.

    `RulesError` names what is wrong.
    """
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RulesError(f"{source} is not valid YAML: {exc}") from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RulesError(f"{source} must be a mapping with `rules` (and `upstreams` for the gateway)")
    try:
        return RulesConfig.model_validate(expand(raw, environ))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'top level'}: {error['msg']}" for error in exc.errors()
        )
        raise RulesError(f"{source}: {problems}") from exc


def load_config(path: str | Path, environ: Mapping[str, str]) -> RulesConfig:
    """The rules file at `path`; see `parse_config`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RulesError(f"cannot read the rules file {str(path)!r}: {exc.strerror or exc}") from exc
    return parse_config(text, environ, source=str(path))


def path_matches(path: tuple[str, ...], patterns: tuple[str, ...]) -> bool:
    """Whether an argument path matches one of `patterns`, segment by segment.

    A path looks like `("creds", "0", "token")`. A list's items are segments named by their index.
    So `creds.*.token` reaches the token of every item of the list `creds`. It also reaches every
    value of an object `creds`. `creds.0.token` reaches the first item's only. A bare name
    (`"token"`) matches only a top-level argument. So redacting one field never hides a same-named
    deeper field by surprise.
    """
    for pattern in patterns:
        parts = pattern.split(".")
        if len(parts) == len(path) and all(fnmatch.fnmatchcase(p, q) for p, q in zip(path, parts, strict=True)):
            return True
    return False


def _children(value: Any) -> list[tuple[str, Any]]:
    """The segments under `value` and their contents: an object's keys, a list's indices."""
    if isinstance(value, Mapping):
        return [(str(key), item) for key, item in value.items()]
    if isinstance(value, list | tuple):
        return [(str(index), item) for index, item in enumerate(value)]
    return []


def redacted(arguments: Mapping[str, Any], patterns: tuple[str, ...]) -> dict[str, Any]:
    """A copy of `arguments` showing `REDACTED` at every path matching `patterns`."""

    def walk(value: Any, path: tuple[str, ...]) -> Any:
        if path and path_matches(path, patterns):
            return REDACTED
        if isinstance(value, Mapping):
            return {key: walk(item, (*path, key)) for key, item in _children(value)}
        if isinstance(value, list | tuple):
            return [walk(item, (*path, key)) for key, item in _children(value)]
        return copy.deepcopy(value)

    return dict(walk(dict(arguments), ()))


def redacted_values(arguments: Mapping[str, Any], patterns: tuple[str, ...]) -> list[Any]:
    """Every value at a path matching `patterns`, as the arguments hold it."""
    found: list[Any] = []

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if path and path_matches(path, patterns):
            found.append(value)
            return
        for key, item in _children(value):
            walk(item, (*path, key))

    walk(dict(arguments), ())
    return found


def _holds_redacted(value: Any, path: tuple[str, ...], patterns: tuple[str, ...]) -> bool:
    return path_matches(path, patterns) or any(
        _holds_redacted(item, (*path, key), patterns) for key, item in _children(value)
    )


def with_redacted_restored(
    original: Mapping[str, Any], edited: Mapping[str, Any], patterns: tuple[str, ...]
) -> dict[str, Any]:
    """`edited` with every redacted path restored from `original`.

    Redacted values are never editable.
    """

    def walk(before: Any, after: Any, path: tuple[str, ...]) -> Any:
        if path and path_matches(path, patterns):
            return copy.deepcopy(before)
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            merged = {str(key): walk(before.get(key), item, (*path, str(key))) for key, item in after.items()}
            for key, item in before.items():  # a redacted value the edit dropped comes back too
                if path_matches((*path, str(key)), patterns) and str(key) not in merged:
                    merged[str(key)] = copy.deepcopy(item)
            return merged
        if isinstance(before, list | tuple) and isinstance(after, list | tuple):
            if len(before) != len(after) and _holds_redacted(before, path, patterns):
                return copy.deepcopy(before)  # items holding redacted values are never added or dropped
            return [walk(before[i] if i < len(before) else None, item, (*path, str(i))) for i, item in enumerate(after)]
        if _holds_redacted(before, path, patterns):  # an edit that replaced a container holding one
            return copy.deepcopy(before)
        return copy.deepcopy(after)

    return dict(walk(dict(original), dict(edited), ()))
