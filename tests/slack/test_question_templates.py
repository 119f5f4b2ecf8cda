"""A question built once and reused gives, for every interrupt, exactly the blocks a fresh build gives."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from bot.slack import blocks_question
from bot.slack.question_templates import QuestionTemplates
from workers.interaction import Context
from workers.interaction.models import OnExpiry, Request

pytestmark = pytest.mark.unit

ASKED = ["UOK1", "UOK2"]


def _opts(n: int, label: str = "Option") -> list[dict[str, str]]:
    return [{"value": f"v{k}", "label": f"{label} {k}"[:75]} for k in range(n)]


def _items(**kinds: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": key, "text": f"{key}?", **spec} for key, spec in kinds.items()]


REQUESTS: dict[str, Request] = {
    "every type": Request(
        reason="Deploy api v1.4.2 to which environment, and why now?",
        items=_items(
            env={"type": "select", "options": _opts(8), "default": "v2"},
            regions={"type": "multi_select", "options": _opts(6), "default": ["v1"]},
            why={"type": "free_text", "multiline": True, "max_length": 500},
            when={"type": "date", "required": False},
        ),
    ),
    "fast path": Request(reason="Ship it?", items=_items(go={"type": "select", "options": ["yes", "no"]})),
    "external selects": Request(  # too much option text: the biggest selects load their options on demand
        reason="Many hosts",
        items=_items(
            big={"type": "select", "options": _opts(100, "x" * 70)},
            bigm={"type": "multi_select", "options": _opts(100, "y" * 70)},
        ),
    ),
    "text budget": Request(
        reason="R" * 3000,
        items=[
            {"id": f"i{n}", "text": "T" * 2000, "type": "multi_select", "options": _opts(100, "L" * 75)}
            for n in range(10)
        ],
    ),
    "a secret": Request(
        reason="The deploy needs a token",
        items=_items(token={"type": "secret"}, note={"type": "free_text", "required": False}),
    ),
    "markup": Request(reason="<!channel> & <@U1> > done", items=_items(t={"type": "free_text"})),
}


def _iid(n: int = 16) -> str:
    return secrets.token_urlsafe(n)


@pytest.mark.parametrize("name", REQUESTS)
@pytest.mark.parametrize("version", [1, 3])
def test_every_ask_gets_what_a_fresh_build_gives(name: str, version: int) -> None:
    templates, request = QuestionTemplates(), REQUESTS[name]
    for iid in (_iid(), _iid(), _iid(32), _iid()):  # a miss, hits, another length, a hit again
        fresh = blocks_question.question_blocks(request, iid, version=version, assignees=ASKED)
        assert templates.blocks(request, iid, version=version, assignees=ASKED) == fresh
        assert templates.holds(request, iid, version=version, assignees=ASKED)  # reused, not built each time
    assert len(templates) == 2  # one template per id length


@pytest.mark.parametrize(
    "asked",
    [
        [["U0B001"], ["U0B002"], ["U0B003"]],  # each run's starter: one template for all
        [["U0B001", "S0TEAMS"], ["U0B777", "S0OTHER"]],  # a user group among them
        [[f"U{n:05d}" for n in range(12)], [f"U{n:05d}" for n in range(1, 13)]],  # "and 2 more"
        [[], []],  # anyone in the channel
        [['cli:zoë "ops"'], ['cli:zoé "dev"']],  # not a Slack id: shown escaped, written as JSON escapes it
    ],
)
def test_who_is_asked_is_put_in_each_ask(asked: list[list[str]]) -> None:
    templates, request = QuestionTemplates(), REQUESTS["every type"]
    for assignees in asked:
        iid = _iid()
        got = templates.blocks(request, iid, assignees=assignees)
        assert got == blocks_question.question_blocks(request, iid, assignees=assignees)
        assert templates.holds(request, iid, assignees=assignees)
    assert len(templates) == 1


@pytest.mark.parametrize("pattern", ["id", "line"])
def test_a_question_whose_text_holds_a_placeholder_is_built_each_time(pattern: str) -> None:
    iid = _iid()
    line = blocks_question.assignee_line(ASKED)
    placeholder = ("Q9z_" * 20)[: len(iid)] if pattern == "id" else ("Xw7k" * 20)[: len(line)]
    request = Request(reason=f"Is {placeholder} the one?", items=_items(t={"type": "free_text"}))
    templates = QuestionTemplates()
    for each in (iid, _iid()):
        got = templates.blocks(request, each, assignees=ASKED)
        assert got == blocks_question.question_blocks(request, each, assignees=ASKED)
        assert placeholder in str(got) and each in str(got)  # the text kept, the id put in the ids
    assert not templates.holds(request, iid, assignees=ASKED)


def test_a_requests_other_fields_share_its_template() -> None:
    """Who is asked, expiry and escalation are the run's own: the message shows none of them."""
    templates, base = QuestionTemplates(), REQUESTS["every type"]
    variants = [
        base,
        base.model_copy(update={"assignees": ["U0B001"], "expires_in": 600, "on_expiry": OnExpiry.USE_DEFAULTS}),
        base.model_copy(update={"assignees": ["S0TEAMS"], "show_answers": True}),
        base.model_copy(update={"escalate_after": 60, "escalate_to": ["U0BOSS"], "expires_in": 3600}),
    ]
    for request in variants:
        iid = _iid()
        got = templates.blocks(request, iid, assignees=ASKED)
        assert got == blocks_question.question_blocks(request, iid, assignees=ASKED)
    assert len(templates) == 1


def test_what_differs_makes_a_different_template() -> None:
    templates, request, iid = QuestionTemplates(), REQUESTS["every type"], _iid()
    base = templates.blocks(request, iid, assignees=ASKED)
    assert templates.blocks(request, iid, assignees=["UOTHER"]) != base
    assert templates.blocks(request, iid, version=2, assignees=ASKED) != base
    edited = request.model_copy(update={"reason": "Deploy somewhere else?"})
    assert templates.blocks(edited, iid, assignees=ASKED) == blocks_question.question_blocks(
        edited, iid, assignees=ASKED
    )
    assert len(templates) == 4


@pytest.mark.parametrize(("name", "row"), [("every type", "qa"), ("fast path", "qc")])
def test_a_declinable_question_has_its_own_template_with_decline_last(name: str, row: str) -> None:
    """An elicitation's Decline ends the Submit row (or the one-click choices); it carries the interrupt id."""
    templates, request, iid = QuestionTemplates(), REQUESTS[name], _iid()
    plain = templates.blocks(request, iid, assignees=ASKED)
    declinable = templates.blocks(request, iid, assignees=ASKED, declinable=True)
    assert declinable == blocks_question.question_blocks(request, iid, assignees=ASKED, declinable=True)
    assert templates.holds(request, iid, assignees=ASKED, declinable=True) and len(templates) == 2
    [actions] = [b for b in declinable if b.get("block_id", "").startswith(f"{row}|")]
    last = actions["elements"][-1]
    assert (last["action_id"], last["value"], last["text"]["text"]) == ("parley_decline", iid, "Decline")
    assert "parley_decline" not in str(plain)


def test_each_call_returns_its_own_blocks() -> None:
    templates, request = QuestionTemplates(), REQUESTS["every type"]
    first = templates.blocks(request, _iid(), assignees=ASKED)
    first.append({"type": "divider"})
    first[0]["block_id"] = "changed"
    iid = _iid()
    assert templates.blocks(request, iid, assignees=ASKED) == blocks_question.question_blocks(
        request, iid, assignees=ASKED
    )


def test_facts_and_changes_are_built_each_time() -> None:
    templates, request, iid = QuestionTemplates(), REQUESTS["every type"], _iid()
    context: Context = {"commit": "abc123", "service": "api"}
    got = templates.blocks(request, iid, assignees=ASKED, context=context)
    assert got == blocks_question.question_blocks(request, iid, assignees=ASKED, context=context)
    assert len(templates) == 0


def test_the_least_recently_used_is_dropped() -> None:
    templates = QuestionTemplates(kept=2)
    a, b, c = (REQUESTS[k] for k in ("every type", "fast path", "markup"))
    iid = _iid()
    templates.blocks(a, iid, assignees=ASKED)
    templates.blocks(b, iid, assignees=ASKED)
    templates.blocks(a, iid, assignees=ASKED)  # a is now the most recent
    templates.blocks(c, iid, assignees=ASKED)
    assert len(templates) == 2
    assert templates.holds(a, iid, assignees=ASKED) and not templates.holds(b, iid, assignees=ASKED)


def test_bad_ids_are_refused_even_when_the_question_has_a_template() -> None:
    templates, request = QuestionTemplates(), REQUESTS["every type"]
    templates.blocks(request, _iid(), assignees=ASKED)
    for bad in ("has space", "x" * 65, "a|b", ""):
        with pytest.raises(ValueError, match="url-safe"):
            templates.blocks(request, bad, assignees=ASKED)
    with pytest.raises(ValueError, match="non-negative"):
        templates.blocks(request, _iid(), version=-1, assignees=ASKED)
