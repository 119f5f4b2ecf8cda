"""`resolve_choice` maps a short typed reply onto exactly one option, or explains why not."""

from __future__ import annotations

import pytest

from workers.agents.ticket import details_request
from workers.interaction import ChoiceError, Item, Option, Request, reply_answers, reply_item, resolve_choice
from workers.interaction.approval import DECISION_ID, approval_request

pytestmark = pytest.mark.unit

SEVERITY = Item(
    id="sev",
    text="How bad is it?",
    type="select",
    options=[
        Option(value="low", label="Low"),
        Option(value="medium", label="Medium"),
        Option(value="high", label="High"),
    ],
)
NUMBERED = "1. Low, 2. Medium, 3. High"
TEN = Item(id="n", text="Pick", type="select", options=[f"Option {c}" for c in "ABCDEFGHIJ"])


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("1", "low"),
        ("2", "medium"),
        ("#2", "medium"),
        ("2.", "medium"),
        (" 3 ", "high"),
        ("# 3", "high"),
        ("2)", "medium"),
        ("2nd", "medium"),
        ("3rd", "high"),
        ("option 2", "medium"),
        ("Option #1", "low"),
        ("number 3", "high"),
    ],
)
def test_digits(reply, value):
    assert resolve_choice(SEVERITY, reply) == value


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("first", "low"),
        ("second", "medium"),
        ("Third", "high"),
        ("second one", "medium"),
        ("the second one", "medium"),
        ("The first option", "low"),
        ("the second.", "medium"),
        ("last", "high"),
        ("the last one", "high"),
        ("LAST", "high"),
        ("one", "low"),
    ],
)
def test_english_ordinal_words(reply, value):
    assert resolve_choice(SEVERITY, reply) == value


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("primeiro", "low"),
        ("primeira", "low"),
        ("segundo", "medium"),
        ("segunda", "medium"),
        ("o segundo", "medium"),
        ("a segunda", "medium"),
        ("A segunda opção", "medium"),
        ("terceiro", "high"),
        ("terceira", "high"),
        ("último", "high"),
        ("ultima", "high"),
        ("o último", "high"),
        ("2º", "medium"),
        ("3ª", "high"),
        ("opção 1", "low"),
    ],
)
def test_portuguese_ordinal_words(reply, value):
    assert resolve_choice(SEVERITY, reply) == value


@pytest.mark.parametrize(
    ("reply", "position"),
    [
        ("fourth", 4),
        ("fifth", 5),
        ("sixth", 6),
        ("seventh", 7),
        ("eighth", 8),
        ("ninth", 9),
        ("tenth", 10),
        ("quarto", 4),
        ("quinta", 5),
        ("sexto", 6),
        ("sétimo", 7),
        ("setima", 7),
        ("oitavo", 8),
        ("nono", 9),
        ("décimo", 10),
        ("decima", 10),
        ("10", 10),
        ("the tenth one", 10),
    ],
)
def test_ordinals_up_to_ten(reply, position):
    assert resolve_choice(TEN, reply) == TEN.options[position - 1].value


@pytest.mark.parametrize("reply", ["High", "high", "HIGH", "  High  ", "high."])
def test_label_case_and_whitespace_insensitive(reply):
    assert resolve_choice(SEVERITY, reply) == "high"


def test_value_matches_too():
    item = Item(id="env", text="Where?", type="select", options=[{"value": "prd", "label": "Production"}, "Staging"])
    assert resolve_choice(item, "PRD") == "prd"
    assert resolve_choice(item, "production") == "prd"


def test_accents_and_inner_whitespace_are_ignored():
    item = Item(id="q", text="Onde?", type="select", options=["São Paulo", "Belém", "Não sei"])
    assert resolve_choice(item, "sao paulo") == "São Paulo"
    assert resolve_choice(item, "BELEM") == "Belém"
    assert resolve_choice(item, "nao   sei") == "Não sei"


def test_unique_prefix():
    assert resolve_choice(SEVERITY, "med") == "medium"
    assert resolve_choice(SEVERITY, "h") == "high"
    item = Item(id="q", text="Onde?", type="select", options=["São Paulo", "Salvador"])
    assert resolve_choice(item, "sao") == "São Paulo"


def test_exact_match_beats_prefix_of_another_option():
    item = Item(id="q", text="Size", type="select", options=["Large", "Larger"])
    assert resolve_choice(item, "large") == "Large"
    assert resolve_choice(item, "larger") == "Larger"


def test_exact_label_beats_ordinal_reading():
    item = Item(id="q", text="Days", type="select", options=["3", "1", "2"])
    assert resolve_choice(item, "1") == "1"
    item = Item(id="q", text="Which", type="select", options=["First come", "Last", "Random"])
    assert resolve_choice(item, "last") == "Last"


def test_works_on_multi_select_items():
    item = Item(id="m", text="Areas", type="multi_select", options=["API", "Web", "Jobs"])
    assert resolve_choice(item, "second") == "Web"
    assert resolve_choice(item, "jo") == "Jobs"


def test_ambiguous_prefix_lists_the_options_numbered():
    item = Item(id="q", text="Mood", type="select", options=["Medium", "Low", "Meh"])
    with pytest.raises(ChoiceError) as caught:
        resolve_choice(item, "me")
    message = str(caught.value)
    assert "'me' could be any of Medium, Meh" in message
    assert "1. Medium, 2. Low, 3. Meh" in message
    assert caught.value.candidates == ["Medium", "Meh"]


def test_ambiguous_exact_match_asks_for_the_number():
    item = Item(
        id="q", text="Pick", type="select", options=[{"value": "a", "label": "B"}, {"value": "b", "label": "C"}]
    )
    with pytest.raises(ChoiceError, match="matches more than one option") as caught:
        resolve_choice(item, "b")
    assert "1. B, 2. C" in str(caught.value)
    assert caught.value.candidates == ["a", "b"]


@pytest.mark.parametrize("reply", ["critical", "xyz", "the fourth bullet", "2 or 3"])
def test_no_match_lists_all_options(reply):
    with pytest.raises(ChoiceError) as caught:
        resolve_choice(SEVERITY, reply)
    assert str(caught.value) == f"{reply!r} is not one of the options: {NUMBERED}"
    assert caught.value.candidates == ["low", "medium", "high"]


@pytest.mark.parametrize("reply", ["", "   "])
def test_empty_reply(reply):
    with pytest.raises(ChoiceError, match=NUMBERED) as caught:
        resolve_choice(SEVERITY, reply)
    assert caught.value.candidates == ["low", "medium", "high"]


@pytest.mark.parametrize(("reply", "position"), [("4", 4), ("0", 0), ("#12", 12), ("fourth", 4), ("décimo", 10)])
def test_ordinal_out_of_range_names_the_valid_range(reply, position):
    with pytest.raises(ChoiceError) as caught:
        resolve_choice(SEVERITY, reply)
    assert str(caught.value) == f"There is no option {position}: choose a number from 1 to 3 ({NUMBERED})"
    assert caught.value.candidates == ["low", "medium", "high"]


@pytest.mark.parametrize("kind", ["free_text", "date"])
def test_non_choice_items_are_refused(kind):
    item = Item(id="q", text="Say", type=kind)
    with pytest.raises(ChoiceError, match=f"item 'q' is a {kind} item, not a choice") as caught:
        resolve_choice(item, "1")
    assert caught.value.candidates == []


def _select(item_id: str, *, required: bool = True, default: str | None = None) -> Item:
    return Item(id=item_id, text=item_id, type="select", options=["a", "b"], required=required, default=default)


def test_the_one_required_choice_is_what_a_reply_answers() -> None:
    facts = {"service": "api", "version": "v1", "target": "staging", "replicas": 3}
    deploy = approval_request("Deploy api", facts, editable=["replicas"])  # replicas pre-filled: answered as is
    decision = deploy.item(DECISION_ID)
    assert decision is not None and reply_item(deploy) is decision
    assert [(a.id, a.value) for a in reply_answers(deploy, decision, "the second one")] == [
        (DECISION_ID, "reject"),
        ("replicas", 3),
    ]
    alone = Request(reason="r", items=[_select("only", required=False)])
    assert reply_item(alone) is alone.items[0]
    defaults = Request(reason="r", items=[_select("pick"), _select("other", required=False, default="b")])
    assert [(a.id, a.value) for a in reply_answers(defaults, defaults.items[0], "a")] == [("pick", "a"), ("other", "b")]


def test_no_reply_answers_several_required_items_a_text_item_or_a_secret() -> None:
    assert reply_item(details_request("x")) is None
    assert reply_item(Request(reason="r", items=[_select("a"), _select("b")])) is None
    assert reply_item(Request(reason="r", items=[Item(id="t", text="t", type="free_text")])) is None
    secret = Request(reason="r", items=[_select("a"), Item(id="s", text="s", type="secret", required=False)])
    assert reply_item(secret) is None


@pytest.mark.parametrize("reply", ["approve?", "Approve??", "1?", "a", "ap", "No. 1", "no 1"])
def test_an_approval_is_never_read_from_a_question_a_start_or_no(reply: str) -> None:
    deploy = approval_request("Deploy api", {"service": "api", "replicas": 3}, editable=["replicas"])
    decision = deploy.item(DECISION_ID)
    assert decision is not None
    with pytest.raises(ChoiceError):
        reply_answers(deploy, decision, reply)
    assert next(a.value for a in reply_answers(deploy, decision, "approve")) == "approve"


@pytest.mark.parametrize("reply", ["medium?", "2?", "the second one?"])
def test_a_reply_that_asks_answers_nothing(reply: str) -> None:
    with pytest.raises(ChoiceError, match="asks rather than answers"):
        resolve_choice(SEVERITY, reply)


@pytest.mark.parametrize(
    "reply", ["." * 39_999 + "x", "x" + " ." * 20_000, "2" + ")" * 40_000], ids=["dots", "spaced", "parens"]
)
def test_a_long_reply_is_refused_at_once_and_quoted_short(reply: str) -> None:
    with pytest.raises(ChoiceError) as caught:  # the trailing-filler pattern took seconds on these
        resolve_choice(SEVERITY, reply)
    assert len(str(caught.value)) < 200
