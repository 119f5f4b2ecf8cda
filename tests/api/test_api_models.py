"""The API's contract pieces that need no server: the OpenAPI document, body validation, webhook
destinations (SSRF), signatures verified by the independent `standardwebhooks` package, and the
default retry schedule."""

from __future__ import annotations

import base64
import copy
import json
import secrets
import time
from typing import Any

import pytest
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from pydantic import ValidationError
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from bot.api.auth_failures import client_address
from bot.api.openapi import openapi_document
from bot.body_limits import API_BODY_MAX
from workers.interaction import CONTEXT_MAX
from workers.interaction.models import MAX_ITEMS, MAX_OPTIONS, OPTION_LABEL_MAX, OPTION_VALUE_MAX
from workers.questions.config import QuestionConfig
from workers.questions.models import METADATA_MAX, QuestionCreate
from workers.questions.webhooks import DestinationRefused, check_destination, pinned, sign

pytestmark = pytest.mark.unit
REQUEST = {"reason": "Ship?", "items": [{"id": "d", "text": "Decision", "type": "select", "options": ["y", "n"]}]}


def test_openapi_document_is_valid_openapi_31() -> None:
    doc = openapi_document()
    assert doc["openapi"] == "3.1.0"
    validate(doc)  # raises on an invalid document
    schemas = doc["components"]["schemas"]
    assert {"QuestionCreate", "QuestionView", "Request", "Item", "Problem"} <= set(schemas)
    assert schemas["QuestionCreate"]["properties"]["request"] == {"$ref": "#/components/schemas/Request"}


def test_the_openapi_item_schema_has_the_new_types_and_their_rules() -> None:
    schemas = openapi_document()["components"]["schemas"]
    kinds = schemas["ItemType"]["enum"]
    assert {"number", "boolean", "email", "url", "time", "datetime"} <= set(kinds)
    assert {"min", "max", "integer", "min_length", "pattern", "pattern_hint"} <= set(schemas["Item"]["properties"])
    value = schemas["QuestionView"]["properties"]["answers"]["anyOf"][0]["additionalProperties"]["anyOf"]
    assert {"boolean", "integer", "number"} <= {v.get("type") for v in value}
    typed = {"id": "n", "text": "Replicas", "type": "number", "max": 10, "integer": True, "default": 3}
    body = QuestionCreate.model_validate({"request": {"reason": "Scale?", "items": [typed]}, "channel": "C1A"})
    assert body.request.items[0].default == 3


def test_the_validator_would_catch_a_broken_document() -> None:
    broken = copy.deepcopy(openapi_document())
    broken["paths"]["/questions"]["post"]["responses"]["201"] = {"content": 7}
    with pytest.raises(OpenAPIValidationError):
        validate(broken)


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"request": REQUEST}, []),  # neither channel nor user
        ({"request": REQUEST, "channel": "C1A", "user": "U1A"}, []),
        ({"request": REQUEST, "channel": "general"}, ["channel"]),
        ({"request": REQUEST, "channel": "C1A", "callback_url": "file:///etc/passwd"}, ["callback_url"]),
        ({"request": REQUEST, "channel": "C1A", "metadata": {"blob": "x" * 5000}}, ["metadata"]),
        ({"request": REQUEST, "channel": "C1A", "context": {"diff": "x" * 2100}}, ["context"]),
        ({"request": {**REQUEST, "items": []}, "channel": "C1A"}, ["request", "items"]),
        ({"request": REQUEST, "channel": "C1A", "surprise": 1}, ["surprise"]),
        ({"request": {**REQUEST, "expires_in": 10**12}, "channel": "C1A"}, ["request", "expires_in"]),
        ({"request": {**REQUEST, "expires_in": 10**400}, "channel": "C1A"}, ["request", "expires_in"]),
        (
            {"request": {**REQUEST, "escalate_after": 90 * 86400 + 1, "escalate_to": ["U2B"]}, "channel": "C1A"},
            ["request", "escalate_after"],
        ),
        ({"request": {**REQUEST, "expires_in": True}, "channel": "C1A"}, ["request", "expires_in"]),  # not 1 s
        ({"request": {**REQUEST, "assignees": ["U2B", "U3C"]}, "channel": "C1A", "quorum": True}, ["quorum"]),
        ({"request": REQUEST, "channel": "C1A", "metadata": _nested(3000)}, ["metadata"]),
        ({"request": REQUEST, "channel": "C1A", "context": _nested(300)}, ["context"]),
        *[
            ({"request": REQUEST, "channel": "C1A", "callback_url": url}, ["callback_url"])
            for url in ("http://h:99999/x", "http://h:abc/x", "http://[::1/x", "http://[zz]/x", "http:///x")
        ],
    ],
)
def test_invalid_bodies_name_where_they_are_wrong(body: dict[str, object], loc: list[str]) -> None:
    with pytest.raises(ValidationError) as caught:
        QuestionCreate.model_validate(body)
    assert next(list(e["loc"]) for e in caught.value.errors()) == loc


def test_at_most_fifty_people_are_asked_or_escalated_to() -> None:
    people = [f"U{n:04d}X" for n in range(300)]
    fifty = QuestionCreate.model_validate({"request": {**REQUEST, "assignees": people[:50]}, "channel": "C1A"})
    assert len(fifty.request.assignees) == 50
    escalated = {"escalate_after": 60, "escalate_to": people[:51]}
    for request in ({**REQUEST, "assignees": people}, {**REQUEST, **escalated}):
        with pytest.raises(ValidationError) as caught:
            QuestionCreate.model_validate({"request": request, "channel": "C1A"})
        [error] = caught.value.errors()
        assert error["loc"] == ("request",) and "at most 50 ids" in error["msg"]


def test_a_valid_body_keeps_the_request_as_the_port_reads_it() -> None:
    body = QuestionCreate.model_validate({"request": REQUEST, "user": "U0BOB", "context": {"v": "1.4.2"}})
    assert body.request.items[0].options is not None and body.request.items[0].options[0].value == "y"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://10.0.0.7/hook",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://0.0.0.0/",
        "ftp://8.8.8.8/hook",
        "http:///nohost",
    ],
)
def test_private_and_odd_destinations_are_refused(url: str) -> None:
    with pytest.raises(DestinationRefused):
        check_destination(url, ())


def test_allow_patterns_admit_private_hosts_and_restrict_the_rest() -> None:
    check_destination("http://8.8.8.8/hook", ())  # a public address needs no pattern
    check_destination("http://127.0.0.1:9/hook", ("127.0.0.1:9",))
    check_destination("https://10.0.0.7/hook", ("10.0.0.*",))
    with pytest.raises(DestinationRefused, match="PARLEY_WEBHOOK_ALLOW"):
        check_destination("http://8.8.8.8/hook", ("hooks.example.com",))


def test_the_checked_address_is_the_one_connected_to() -> None:
    assert check_destination("http://8.8.8.8/hook", ()) == "8.8.8.8"
    assert check_destination("http://127.0.0.1:9/hook", ("127.0.0.1:9",)) is None  # allowed by name: reached by name
    assert pinned("https://hooks.example.com/in?x=1", "93.184.216.34") == (
        "https://93.184.216.34/in?x=1",
        {"host": "hooks.example.com"},
        {"sni_hostname": "hooks.example.com"},  # the certificate is still checked against the host's name
    )
    assert pinned("http://user:pw@hooks.example.com:8080/in", "2606:2800:220:1::1") == (
        "http://user:pw@[2606:2800:220:1::1]:8080/in",
        {"host": "hooks.example.com:8080"},
        {},
    )
    assert pinned("https://hooks.internal/in", None) == ("https://hooks.internal/in", {}, {})


def test_signature_verifies_with_the_standardwebhooks_package() -> None:
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    body = json.dumps({"type": "question.answered", "data": {"id": "r1"}})
    now = int(time.time())
    headers = {
        "webhook-id": "msg_r1_answered",
        "webhook-timestamp": str(now),
        "webhook-signature": sign(secret, "msg_r1_answered", now, body),
    }
    assert Webhook(secret).verify(body, headers) == json.loads(body)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace("r1", "r2"), headers)


def test_default_retries_are_at_least_five_attempts_over_an_hour() -> None:
    intervals = QuestionConfig().webhook_retry_intervals
    assert len(intervals) + 1 >= 5 and sum(intervals) >= 3600
    assert list(intervals) == sorted(intervals)  # backing off
    assert QuestionConfig().webhook_timeout == 10.0


def test_people_cannot_start_the_question_agent() -> None:
    from workers.exceptions import UnknownAgent
    from workers.registry import load_agents

    registry = load_agents()
    assert registry.get("question").listed is False
    with pytest.raises(UnknownAgent) as refused:
        registry.startable("question")
    assert "question" not in refused.value.known and "ticket" in refused.value.known
    assert registry.startable("ticket").name == "ticket"


def test_failed_authentication_counts_per_ipv4_address_and_per_ipv6_64() -> None:
    def counted_as(host: str) -> str:
        return client_address({"type": "http", "client": (host, 50000)})

    assert counted_as("203.0.113.7") == "203.0.113.7" != counted_as("203.0.113.8")
    assert counted_as("2001:db8:1:2::1") == counted_as("2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64"
    assert counted_as("2001:db8:1:3::1") != counted_as("2001:db8:1:2::1")
    assert counted_as("::ffff:203.0.113.7") == "203.0.113.7"  # an IPv4 client on a dual-stack socket
    assert client_address({"type": "http", "client": None}) == "unknown"


def largest_question() -> dict[str, Any]:
    """The largest `POST /api/v1/questions` body the models accept, every field at its limit (ASCII).

    Lists of people have no limit in `Request` itself; 50 is the API's cap on assignees."""
    people = [f"U{n:02d}" + "X" * 61 for n in range(50)]
    option = {"value": "v" * OPTION_VALUE_MAX, "label": "l" * OPTION_LABEL_MAX, "description": "d" * OPTION_LABEL_MAX}
    options = [{**option, "value": f"{n:03d}" + option["value"][3:]} for n in range(MAX_OPTIONS)]
    item = {"text": "t" * 2000, "type": "multi_select", "options": options, "placeholder": "p" * 150}
    items = [{**item, "id": f"{n:02d}" + "i" * 62, "default": [o["value"] for o in options]} for n in range(MAX_ITEMS)]
    request = {
        "reason": "r" * 3000,
        "items": items,
        "assignees": people,
        "expires_in": 90 * 86400,
        "on_expiry": "use_defaults",
        "show_answers": True,
        "escalate_after": 90 * 86400 - 1,
        "escalate_to": people,
    }
    metadata = {"m": "x" * (METADATA_MAX - len('{"m":""}'))}
    context = {"c": "y" * (CONTEXT_MAX - len('{"c":""}'))}
    return {
        "request": request,
        "channel": "C" + "0" * 20,
        "thread_ts": "1" * 12 + "." + "2" * 8,
        "callback_url": "https://" + "h" * 1992,
        "metadata": metadata,
        "context": context,
    }


def test_the_api_body_cap_is_above_the_largest_question_and_at_most_a_mebibyte() -> None:
    body = largest_question()
    QuestionCreate.model_validate(body)  # valid: the cap must let it through
    size = len(json.dumps(body, indent=2).encode())  # a client's pretty-printed JSON, too
    assert size < API_BODY_MAX <= 1 << 20, (size, API_BODY_MAX)
    bigger = copy.deepcopy(body)
    bigger["request"]["reason"] += "r"
    with pytest.raises(ValidationError):  # every field is at its limit
        QuestionCreate.model_validate(bigger)
