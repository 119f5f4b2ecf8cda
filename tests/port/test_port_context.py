"""The facts an answer is bound to: canonical JSON, its digest, the 2,000-character limit, changes,
and the `ask_user` tool's `context`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsonschema
import pytest

from workers.interaction import CONTEXT_MAX, ChangeKind, ContextError
from workers.interaction.context import canonical, changes, describe_change, digest
from workers.interaction.tools import ASK_USER_SCHEMA, ToolArgumentError, context_from_tool_call, request_from_tool_call

pytestmark = pytest.mark.unit


def test_equal_facts_in_any_order_give_one_canonical_text_and_digest() -> None:
    a = canonical({"service": "api", "version": "v1.4.2", "limits": {"cpu": 2, "mem": "1Gi"}})
    b = canonical({"limits": {"mem": "1Gi", "cpu": 2}, "version": "v1.4.2", "service": "api"})
    assert a == b == '{"limits":{"cpu":2,"mem":"1Gi"},"service":"api","version":"v1.4.2"}'
    assert digest(a) == hashlib.sha256(a.encode()).hexdigest()
    assert digest(canonical({"service": "api", "version": "v1.4.3"})) != digest(canonical({"service": "api"}))
    assert digest("") == ""


def test_the_limit_is_2000_characters_of_canonical_json() -> None:
    fits = {"x": "a" * (CONTEXT_MAX - len('{"x":""}'))}
    assert len(canonical(fits)) == CONTEXT_MAX == 2000
    with pytest.raises(ContextError, match=r"2,001 characters of canonical JSON, over the limit of 2,000"):
        canonical({"x": fits["x"] + "a"})


@pytest.mark.parametrize(
    ("context", "says"),
    [
        ({"when": {1, 2}}, "context.when is a set, which is not JSON"),
        ({"ratio": float("nan")}, "context.ratio is nan, which JSON cannot hold"),
        ({"deep": {"n": [1, object()]}}, r"context.deep.n\[1\] is a object, which is not JSON"),
        ({1: "one"}, "context has the key 1, which is not text"),
        (["a", "b"], "context must be a dict of facts, not a list"),
        ("service=api", "context must be a dict of facts, not a str"),
    ],
)
def test_what_is_not_a_json_object_is_refused_saying_why(context: Any, says: str) -> None:
    with pytest.raises(ContextError, match=says):
        canonical(context)


def test_changes_are_listed_field_by_field() -> None:
    old = {"service": "api", "version": "v1.4.2", "cluster": "prod-eu", "flags": [1]}
    new = {"service": "api", "version": "v1.4.3", "region": "eu-west-1", "flags": [1]}
    found = changes(old, new)
    assert [(c.field, c.kind, c.old, c.new) for c in found] == [  # the new facts' order, then what was removed
        ("version", ChangeKind.CHANGED, "v1.4.2", "v1.4.3"),
        ("region", ChangeKind.ADDED, None, "eu-west-1"),
        ("cluster", ChangeKind.REMOVED, "prod-eu", None),
    ]
    assert [describe_change(c) for c in found] == [
        "version: v1.4.2 → v1.4.3",
        "region: (added) eu-west-1",
        "cluster: prod-eu (removed)",
    ]
    assert changes(old, json.loads(canonical(old))) == []
    assert [c.field for c in changes(None, {"a": 1})] == ["a"]
    assert describe_change(changes({"n": 1}, {"n": {"k": [1, 2]}})[0]) == 'n: 1 → {"k": [1, 2]}'


def test_ask_user_may_pass_the_facts_the_person_decides_on() -> None:
    question = {"id": "ok", "header": "Refund", "question": "Refund it?", "type": "free"}
    args = {"questions": [question], "context": {"order": "A-17"}}
    jsonschema.Draft202012Validator(ASK_USER_SCHEMA).validate(args)
    assert [i.id for i in request_from_tool_call(json.dumps(args)).items] == ["ok"]
    assert context_from_tool_call(json.dumps(args)) == {"order": "A-17"}
    assert context_from_tool_call({"questions": [question]}) is None
    for bad, says in (({"n": float("nan")}, "context.n is nan"), ("A-17", "context must be a dict of facts")):
        with pytest.raises(ToolArgumentError, match=says):
            request_from_tool_call({"questions": [question], "context": bad})
        with pytest.raises(ToolArgumentError, match=says):
            context_from_tool_call({"questions": [question], "context": bad})
