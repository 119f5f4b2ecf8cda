"""The shape check that answers 400 before any listener reads a signed body Slack would never send."""

from __future__ import annotations

from typing import Any

import pytest

from bot.slack.payload_fields import enterprise_of, team_of
from bot.slack.payload_shape import problem

pytestmark = pytest.mark.unit


def _click(**fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": "U0BOB", "team_id": "T0PARLEY"},
        "team": {"id": "T0PARLEY", "domain": "parley"},
        "actions": [{"action_id": "parley_submit", "block_id": "qs|q1|1|", "type": "button"}],
    }
    body.update(fields)
    return body


def test_a_documented_click_passes_and_its_workspace_is_read() -> None:
    body = _click(enterprise={"id": "E0ORG", "name": "Org"})
    assert problem(body) is None
    assert (team_of(body), enterprise_of(body)) == ("T0PARLEY", "E0ORG")


def test_an_org_wide_install_click_has_no_team() -> None:
    body = _click(team=None, enterprise=None, is_enterprise_install=True)
    assert problem(body) is None
    assert (team_of(body), enterprise_of(body)) == ("", None)


@pytest.mark.parametrize("name", ["team", "enterprise", "channel", "container", "state", "message", "view"])
def test_an_object_field_of_another_type_is_refused_by_name(name: str) -> None:
    assert problem(_click(**{name: "stringified"})) == f"{name} must be an object"


@pytest.mark.parametrize("name", ["team_id", "enterprise_id"])
def test_an_event_envelope_with_a_workspace_id_of_another_type_is_refused(name: str) -> None:
    body = {
        "type": "event_callback",
        "team_id": "T0PARLEY",
        "event": {"type": "message", "user": "U0BOB", "channel": "C0GENERAL", "text": "2", "ts": "1.2"},
        name: ["T0PARLEY"],
    }
    assert problem(body) == f"{name} must be a string"
