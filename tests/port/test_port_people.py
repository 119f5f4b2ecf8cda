"""`Request`'s people: assignees that may be user groups, and escalation (`escalate_after`, `escalate_to`)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.slack.mrkdwn import assignee_ref, clip, with_mentions
from workers.interaction import Item, Request

pytestmark = pytest.mark.unit

ITEMS = [Item(id="ok", text="OK?", type="select", options=["Yes", "No"])]


def test_escalation_is_stored_with_the_request_and_round_trips() -> None:
    req = Request(reason="Approve", items=ITEMS, assignees=["U1AAA"], escalate_after=600, escalate_to=["U2BBB"])
    assert Request.model_validate_json(req.model_dump_json()) == req
    assert (req.escalate_after, req.escalate_to) == (600, ["U2BBB"])
    assert Request(reason="Approve", items=ITEMS).escalate_to == []


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"escalate_after": 60}, "escalate_after and escalate_to go together"),
        ({"escalate_to": ["U2BBB"]}, "escalate_after and escalate_to go together"),
        ({"escalate_after": 0, "escalate_to": ["U2BBB"]}, "greater than 0"),
        ({"escalate_after": 600, "escalate_to": ["U2BBB"], "expires_in": 600}, "must be shorter than expires_in"),
        ({"escalate_after": 60, "escalate_to": ["U2 <!channel>"]}, "is not a user id or user group id"),
        ({"assignees": ["S1 GROUP"]}, "is not a user id or user group id"),
    ],
)
def test_bad_escalation_or_assignees_are_refused_with_the_reason(fields: dict, problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Request(reason="Approve", items=ITEMS, **fields)
    assert problem in str(caught.value)


def test_user_groups_are_assignees_and_duplicates_collapse() -> None:
    req = Request(reason="Review", items=ITEMS, assignees=["S0REVIEWERS", "U1AAA", "S0REVIEWERS"])
    assert req.assignees == ["S0REVIEWERS", "U1AAA"]


@pytest.mark.parametrize(
    ("assignee", "shown"),
    [("S0REVIEWERS", "<!subteam^S0REVIEWERS>"), ("U1AAA", "<@U1AAA>"), ("S1>|<!channel", "`S1&gt;|&lt;!channel`")],
)
def test_a_group_is_shown_by_its_handle_and_nothing_else_becomes_markup(assignee: str, shown: str) -> None:
    assert assignee_ref(assignee) == shown


def test_agent_text_mentions_only_people_the_run_involves() -> None:
    text = clip("Released api, signed off by <@U0ALICE>, <@U0CAROL>; cc <@U0MALLORY> <!channel> <@U0ALICE|x>", 500)
    assert with_mentions(text, {"U0ALICE", "U0CAROL"}) == (
        "Released api, signed off by <@U0ALICE>, <@U0CAROL>; cc &lt;@U0MALLORY&gt; &lt;!channel&gt; &lt;@U0ALICE|x&gt;"
    )
