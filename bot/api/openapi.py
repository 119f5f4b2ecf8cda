"""`GET /api/v1/openapi.json`: the API's OpenAPI 3.1 document, from its pydantic models.

OpenAPI 3.1 schemas are JSON Schema 2020-12, which pydantic emits. So the models' schemas go
into `components.schemas` as they are. Only the paths are written here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic.json_schema import models_json_schema

from workers.questions.models import (
    ApprovalCreate,
    ConfirmBody,
    ConfirmResult,
    Event,
    QuestionCreate,
    QuestionPage,
    QuestionView,
)
from workers.questions.problem import Problem

REF = "#/components/schemas/{model}"
MODELS = (QuestionCreate, ApprovalCreate, QuestionView, QuestionPage, ConfirmBody, ConfirmResult, Problem, Event)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def _json(name: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(name)}}}


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/problem+json": {"schema": _ref("Problem")}}}


_RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds to wait"}}
_COMMON = {
    "401": _problem("no token, or an unknown or revoked one"),
    "429": {
        **_problem("over the token's rate limit, or too many failed tokens from the client's address"),
        "headers": _RETRY_AFTER,
    },
    "500": _problem("an unexpected error (logged)"),
    "503": {**_problem("Parley's Redis is down, full or failing over; try again"), "headers": _RETRY_AFTER},
}
_ASKING = {
    "429": {
        **_problem(
            "over the token's rate limit, or too many failed tokens from the client's address (with Retry-After); "
            "or the token has as many questions open as it may (`open_questions`, `limit`; no Retry-After)"
        ),
        "headers": _RETRY_AFTER,
    }
}
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}


_RECEIPT = {"description": "a DSSE envelope of an in-toto Statement (docs/receipts.md)"}
RECEIPT_PATHS: dict[str, Any] = {
    "/questions/{id}/receipt": {
        "get": {
            "summary": "The closed question's signed receipt: its envelope, digest and place in the chain",
            "parameters": [_ID],
            "responses": {
                "200": {**_RECEIPT, "content": {"application/json": {"schema": {"type": "object"}}}},
                "404": _problem("no such question, or no receipt (PARLEY_RECEIPT_KEY is not set)"),
                "409": _problem("the question is still waiting, or its receipt is being written"),
                **_COMMON,
            },
        }
    },
    "/receipts/keys": {
        "get": {
            "summary": "The public keys receipts verify with, by key id",
            "responses": {"200": {"description": "keys", "content": {"application/json": {}}}, **_COMMON},
        }
    },
}


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    _, defs = models_json_schema([(m, "validation") for m in MODELS], ref_template=REF)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Parley API",
            "version": "1",
            "description": "Ask people typed questions in Slack from any agent; get each answer exactly once.",
        },
        "servers": [{"url": "/api/v1"}],
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/questions": {
                "post": {
                    "summary": "Ask a question in Slack",
                    "parameters": [
                        {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}}
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("QuestionCreate")}},
                    },
                    "responses": {
                        "201": _json("QuestionView", "asked: the question is posted"),
                        "200": _json("QuestionView", "the question an earlier request with this Idempotency-Key made"),
                        "403": _problem("the token lacks the ask scope, or the grant of its `temporal` workflow id"),
                        "409": _problem("the Idempotency-Key was used with another body"),
                        "422": _problem("the question is invalid; `errors` lists each problem"),
                        **_COMMON,
                        **_ASKING,
                    },
                },
                "get": {
                    "summary": "List the token's questions, newest first",
                    "parameters": [
                        {"name": "status", "in": "query", "schema": {"type": "string"}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
                        {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": _json("QuestionPage", "one page"), **_COMMON},
                },
            },
            "/approvals": {
                "post": {
                    "summary": "Ask to approve an action: approved, edited or rejected in Slack",
                    "parameters": [
                        {"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}}
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _ref("ApprovalCreate")}},
                    },
                    "responses": {
                        "201": _json("QuestionView", 'asked: `kind` "approval", `decision` once answered'),
                        "200": _json("QuestionView", "the approval an earlier request with this Idempotency-Key made"),
                        "403": _problem("the token lacks the ask scope, or the grant of its `temporal` workflow id"),
                        "422": _problem("the approval is invalid; `errors` lists each problem"),
                        **_COMMON,
                        **_ASKING,
                    },
                },
            },
            "/questions/{id}": {
                "get": {
                    "summary": "Read a question; with ?wait=N, wait up to N seconds for it to close",
                    "parameters": [
                        _ID,
                        {"name": "wait", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 60}},
                        {
                            "name": "reveal",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["secrets"]},
                            "description": "the secret answers in the clear: for the token that asked, once",
                        },
                    ],
                    "responses": {
                        "200": _json("QuestionView", "the question"),
                        "404": _problem("no such question, or another token's (with reveal: any token but the asker)"),
                        "410": _problem("reveal: the secret answers were read once already, or are kept no longer"),
                        "503": _problem("reveal: this server cannot open them (PARLEY_SECRET_KEY)"),
                        **_COMMON,
                    },
                }
            },
            "/questions/{id}/cancel": {
                "post": {
                    "summary": "Cancel a waiting question; its message is locked",
                    "parameters": [_ID],
                    "responses": {
                        "200": _json("QuestionView", "cancelled"),
                        "404": _problem("no such question"),
                        "409": _problem("the question is not waiting"),
                        **_COMMON,
                    },
                }
            },
            "/questions/{id}/confirm": {
                "post": {
                    "summary": "Check that the facts are those the question was asked on",
                    "parameters": [_ID],
                    "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("ConfirmBody")}}},
                    "responses": {
                        "200": _json("ConfirmResult", "unchanged"),
                        "404": _problem("no such question"),
                        "409": _problem("the facts changed; `changes` lists each field, old and new"),
                        **_COMMON,
                    },
                }
            },
            **RECEIPT_PATHS,
        },
        "webhooks": {
            "question": {
                "post": {
                    "summary": "A question with a callback_url closed (signed per Standard Webhooks)",
                    "requestBody": {"content": {"application/json": {"schema": _ref("Event")}}},
                    "responses": {"200": {"description": "any 2xx acknowledges the delivery"}},
                }
            }
        },
    }
