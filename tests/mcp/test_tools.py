"""The `ask_user` tool: its schema, turning a call into a request, and answers back into text."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from workers.interaction import Answer, AnswerError, InteractionError, Item, ItemType, Option, Request
from workers.interaction.tools import (
    ASK_USER_DESCRIPTION,
    ASK_USER_SCHEMA,
    ToolArgumentError,
    answers_for_model,
    anthropic_tool,
    openai_tool,
    request_from_tool_call,
)

pytestmark = pytest.mark.unit

SEVERITY = {
    "id": "sev",
    "header": "Severity",
    "question": "How bad is the outage?",
    "type": "single",
    "options": [{"label": "Low"}, {"label": "Medium"}, {"label": "High", "description": "Page the on-call"}],
}
COMPONENTS = {
    "id": "components",
    "header": "Components",
    "question": "Which parts are affected?",
    "type": "multiple",
    "options": [{"label": "API"}, {"label": "Web"}, {"label": "Jobs"}],
    "required": False,
}
DETAILS = {"id": "details", "header": "Details", "question": "What did you see?", "type": "free"}
DUE = {"id": "due", "header": "Due", "question": "Fix it by when?", "type": "date", "required": False}
SAMPLE = {"questions": [SEVERITY, COMPONENTS, DETAILS, DUE]}


def sample(**question_changes) -> dict:
    """Arguments with one severity question, changed as given (a value of None removes the key)."""
    args = copy.deepcopy({"questions": [SEVERITY]})
    for key, value in question_changes.items():
        if value is None:
            args["questions"][0].pop(key, None)
        else:
            args["questions"][0][key] = value
    return args


def problems_of(arguments) -> list[str]:
    with pytest.raises(ToolArgumentError) as caught:
        request_from_tool_call(arguments)
    assert isinstance(caught.value, InteractionError)
    assert caught.value.problems
    assert str(caught.value) == "invalid ask_user arguments: " + "; ".join(caught.value.problems)
    return caught.value.problems


# --- definitions ------------------------------------------------------------------------


def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(ASK_USER_SCHEMA)


def test_sample_arguments_validate_against_the_schema():
    validator = jsonschema.Draft202012Validator(ASK_USER_SCHEMA)
    validator.validate(SAMPLE)
    validator.validate({"questions": [{"id": "x", "header": "X", "question": "Why?", "type": "free"}]})


@pytest.mark.parametrize(
    "bad",
    [
        {"questions": []},
        {"questions": [DETAILS] * 6},
        {"questions": [DETAILS], "extra": 1},
        sample(type="radio"),
        sample(options=[{"label": "only"}]),
        sample(options=[{"label": str(n)} for n in range(21)]),
        sample(header="x" * 13),
        sample(id="has space"),
        sample(required="yes"),
        sample(colour="red"),
        sample(options=[{"label": "a", "extra": 1}, {"label": "b"}]),
        sample(question=None),
    ],
)
def test_schema_refuses_bad_arguments(bad):
    assert not jsonschema.Draft202012Validator(ASK_USER_SCHEMA).is_valid(bad)


def test_openai_tool_shape():
    tool = openai_tool()
    assert tool == {
        "type": "function",
        "function": {"name": "ask_user", "description": ASK_USER_DESCRIPTION, "parameters": ASK_USER_SCHEMA},
    }
    jsonschema.Draft202012Validator.check_schema(tool["function"]["parameters"])
    json.dumps(tool)


def test_anthropic_tool_shape():
    tool = anthropic_tool()
    assert tool == {"name": "ask_user", "description": ASK_USER_DESCRIPTION, "input_schema": ASK_USER_SCHEMA}
    jsonschema.Draft202012Validator.check_schema(tool["input_schema"])
    json.dumps(tool)


def test_description_says_when_to_ask():
    text = ASK_USER_DESCRIPTION.lower()
    assert "only a person can give" in text
    assert "ambiguous" in text
    assert "batch" in text
    assert "never ask again" in text


def test_schema_limits():
    question = ASK_USER_SCHEMA["properties"]["questions"]
    assert (question["minItems"], question["maxItems"]) == (1, 5)
    props = question["items"]["properties"]
    assert props["id"]["pattern"] == "^[A-Za-z0-9_-]{1,64}$"
    assert props["header"]["maxLength"] == 12
    assert props["type"]["enum"] == [
        "single", "multiple", "free", "date", "secret", "number", "boolean", "email", "url", "time", "datetime"
    ]  # fmt: skip
    assert (props["options"]["minItems"], props["options"]["maxItems"]) == (2, 20)
    assert props["options"]["items"]["properties"]["label"]["maxLength"] == 75
    assert props["options"]["items"]["properties"]["description"]["maxLength"] == 75
    assert props["required"] == {"type": "boolean", "default": True, "description": props["required"]["description"]}
    assert ASK_USER_SCHEMA["additionalProperties"] is False
    assert question["items"]["additionalProperties"] is False


# --- request_from_tool_call --------------------------------------------------------------


def test_single_becomes_select_with_an_other_item():
    request = request_from_tool_call({"questions": [SEVERITY]}, reason="Incident triage")
    assert request.reason == "Incident triage"
    choice, other = request.items
    assert choice == Item(
        id="sev",
        text="Severity: How bad is the outage?",
        type=ItemType.SELECT,
        options=[
            Option(value="Low", label="Low"),
            Option(value="Medium", label="Medium"),
            Option(value="High", label="High", description="Page the on-call"),
        ],
        required=True,
    )
    assert other == Item(id="sev__other", text="Other (type your own answer)", type="free_text", required=False)
    assert request.typed_other("sev") is other


def test_a_required_single_needs_a_choice_or_its_other_text():
    request = request_from_tool_call({"questions": [SEVERITY]})
    with pytest.raises(AnswerError) as refused:
        request.validate_answers([Answer(id="sev__other", free_text="  ")])
    assert refused.value.errors == {
        "sev": "an answer is required: choose one, or fill in “Other (type your own answer)”"
    }
    with pytest.raises(AnswerError):
        request.validate_answers([])
    assert [a.value for a in request.validate_answers([Answer(id="sev", choice="High")])] == ["High"]
    typed = request.validate_answers([Answer(id="sev__other", free_text="Only on Tuesdays")])
    assert [(a.id, a.value) for a in typed] == [("sev__other", "Only on Tuesdays")]
    optional = request_from_tool_call({"questions": [{**SEVERITY, "required": False}]})
    assert optional.validate_answers([]) == []


def test_multiple_free_and_date():
    request = request_from_tool_call({"questions": [COMPONENTS, DETAILS, DUE]})
    components, details, due = request.items
    assert components.type is ItemType.MULTI_SELECT
    assert components.option_values() == ["API", "Web", "Jobs"]
    assert components.required is False
    assert components.text == "Components: Which parts are affected?"
    assert details == Item(id="details", text="Details: What did you see?", type="free_text", required=True)
    assert due == Item(id="due", text="Due: Fix it by when?", type="date", required=False)


def test_default_reason_and_json_string_arguments():
    from_text = request_from_tool_call(json.dumps(SAMPLE))
    assert from_text == request_from_tool_call(SAMPLE)
    assert from_text.reason == "The assistant needs your input"
    assert [i.id for i in from_text.items] == ["sev", "sev__other", "components", "details", "due"]


def test_five_single_questions_fit_in_ten_items():
    questions = [{**SEVERITY, "id": f"q{n}"} for n in range(5)]
    assert len(request_from_tool_call({"questions": questions}).items) == 10


def test_request_round_trips_through_json():
    request = request_from_tool_call(SAMPLE)
    assert Request.model_validate_json(request.model_dump_json()) == request


def test_answers_validate_against_the_built_request():
    request = request_from_tool_call(SAMPLE)
    answers = [
        Answer(id="sev__other", free_text="Somewhere between"),
        Answer(id="components", choices=["Web", "API"]),
        Answer(id="details", free_text="500s"),
    ]
    assert [a.id for a in request.validate_answers(answers)] == ["sev__other", "components", "details"]


def test_arguments_are_not_mutated():
    args = copy.deepcopy(SAMPLE)
    request_from_tool_call(args)
    assert args == SAMPLE


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        (sample(options=None), "questions[0] (id 'sev'): a single question needs 2-20 options"),
        (sample(options=[{"label": "Only"}]), "questions[0] (id 'sev'): a single question needs 2-20 options, got 1"),
        (
            sample(options=[{"label": f"o{n}"} for n in range(21)]),
            "questions[0] (id 'sev'): a single question needs 2-20 options, got 21",
        ),
        (
            {"questions": [{**COMPONENTS, "options": []}]},
            "questions[0] (id 'components'): a multiple question needs 2-20 options, got 0",
        ),
        ({"questions": [SEVERITY, DETAILS, {**DUE, "id": "sev"}]}, "duplicate question id 'sev'"),
        (sample(header="Severity level"), "questions[0] (id 'sev'): header 'Severity level' is over 12 characters"),
        (sample(header=""), "questions[0] (id 'sev'): header must be non-empty text"),
        (sample(question="   "), "questions[0] (id 'sev'): question must be non-empty text"),
        ({"questions": []}, "ask 1-5 questions, got 0"),
        ({"questions": [DETAILS] * 6}, "ask 1-5 questions, got 6"),
        ({}, "'questions' must be a list of 1-5 questions"),
        ({"questions": "sev"}, "'questions' must be a list of 1-5 questions"),
        (sample(type="radio"), "questions[0] (id 'sev'): type 'radio' is not one of single, multiple, free, date"),
        (sample(type=None), "questions[0] (id 'sev'): type None is not one of single, multiple, free, date"),
        ("{not json", "arguments are not valid JSON: "),
        ("", "arguments are not valid JSON: "),
        ("[1, 2]", "arguments must be a JSON object with a 'questions' list"),
        (None, "arguments must be a JSON object with a 'questions' list"),
        ({"questions": [SEVERITY], "mode": "fast"}, "unknown property 'mode'"),
        (sample(colour="red"), "questions[0] (id 'sev'): unknown property 'colour'"),
        (
            sample(options=[{"label": "a", "value": "x"}, {"label": "b"}]),
            "questions[0] (id 'sev'): options[0]: unknown property 'value'",
        ),
        (sample(id="no spaces"), "questions[0] (id 'no spaces'): id must be 1-64 letters, digits, '_' or '-'"),
        (sample(id=None), "questions[0]: id must be 1-64 letters, digits, '_' or '-'"),
        (sample(id="sev__other"), "questions[0] (id 'sev__other'): ids ending in '__other' are reserved"),
        (sample(id="x" * 58), "the id of a single question is at most 57 characters"),
        (sample(required="yes"), "questions[0] (id 'sev'): required must be true or false"),
        (
            sample(options=[{"label": "High"}, {"label": "high "}]),
            "questions[0] (id 'sev'): options[1]: duplicate option label 'high'",
        ),
        (
            sample(options=[{"label": "a" * 76}, {"label": "b"}]),
            f"options[0]: label '{'a' * 76}' is over 75 characters",
        ),
        (sample(options=[{"label": "a\nb"}, {"label": "b"}]), "options[0]: label 'a\\nb' must be a single line"),
        (sample(options=["Low", "High"]), "questions[0] (id 'sev'): options[0] must be an object with a label"),
        (
            sample(options=[{"label": "a", "description": "d" * 76}, {"label": "b"}]),
            "options[0]: description '" + "d" * 76 + "' is over 75 characters",
        ),
        ({"questions": [{**DETAILS, "options": [{"label": "a"}, {"label": "b"}]}]}, "a free question takes no options"),
        ({"questions": ["sev"]}, "questions[0] must be an object"),
    ],
)
def test_invalid_arguments_name_the_problem(arguments, problem):
    problems = problems_of(arguments)
    assert any(p.startswith(problem) or problem in p for p in problems), problems


def test_every_problem_is_listed():
    problems = problems_of({"questions": [sample(header="x" * 14, options=[{"label": "a"}])["questions"][0], DETAILS]})
    assert problems == [
        "questions[0] (id 'sev'): header 'xxxxxxxxxxxxxx' is over 12 characters",
        "questions[0] (id 'sev'): a single question needs 2-20 options, got 1",
    ]


def test_non_string_keys_and_odd_values_still_raise_tool_argument_errors():
    problems_of({1: 2, "questions": [{"id": 3, "type": ["single"], "options": {"a": 1}, None: 0}]})
    problems_of({"questions": [SEVERITY, {**SEVERITY, "options": [{"label": 5}, {"label": ["x"]}]}]})
    problems_of("[" * 100_000)


def test_bad_reason_is_a_tool_argument_error():
    with pytest.raises(ToolArgumentError, match="reason"):
        request_from_tool_call(SAMPLE, reason="")


# --- answers_for_model -------------------------------------------------------------------


@pytest.fixture
def request_() -> Request:
    return request_from_tool_call(SAMPLE)


def test_answers_for_each_type(request_):
    answers = [
        Answer(id="sev", choice="High"),
        Answer(id="components", choices=["API", "Web"]),
        Answer(id="details", free_text='Saw "502"\nthen recovered'),
        Answer(id="due", date="2026-12-01"),
    ]
    assert answers_for_model(request_, request_.validate_answers(answers)) == "\n".join(
        [
            "sev: High",
            "components: [API, Web]",
            'details: "Saw \\"502\\"\\nthen recovered"',
            "due: 2026-12-01",
        ]
    )


def test_skipped_questions(request_):
    answers = [Answer(id="details", free_text="nothing")]
    assert answers_for_model(request_, answers) == "\n".join(
        ["sev: (skipped)", "components: (skipped)", 'details: "nothing"', "due: (skipped)"]
    )
    assert answers_for_model(request_, None).splitlines()[0] == "sev: (skipped)"


def test_other_text_is_folded_into_its_question(request_):
    answers = [Answer(id="sev__other", free_text="Somewhere in between"), Answer(id="details", free_text="x")]
    lines = answers_for_model(request_, answers).splitlines()
    assert lines[0] == 'sev: other "Somewhere in between"'
    assert not any(line.startswith("sev__other") for line in lines)
    assert len(lines) == 4


def test_choice_and_other_text_both_shown(request_):
    answers = [Answer(id="sev", choice="Low"), Answer(id="sev__other", free_text="but rising")]
    assert answers_for_model(request_, answers).splitlines()[0] == 'sev: Low; other "but rising"'


def test_expired(request_):
    answers = [Answer(id="sev", choice="High")]
    assert answers_for_model(request_, answers, expired=True) == "\n".join(
        f"{qid}: (expired: no answer)" for qid in ["sev", "components", "details", "due"]
    )
    assert answers_for_model(request_, None, expired=True).count("(expired: no answer)") == 4


def test_choices_that_could_be_misread_are_quoted():
    request = request_from_tool_call(
        {
            "questions": [
                {**SEVERITY, "options": [{"label": "Yes, ship it"}, {"label": "(skipped)"}]},
                {**COMPONENTS, "options": [{"label": "API, v2"}, {"label": "[web]"}]},
            ]
        }
    )
    answers = [Answer(id="sev", choice="(skipped)"), Answer(id="components", choices=["API, v2", "[web]"])]
    assert answers_for_model(request, answers) == 'sev: "(skipped)"\ncomponents: ["API, v2", "[web]"]'
    assert answers_for_model(request, [Answer(id="sev", choice="Yes, ship it")]).startswith('sev: "Yes, ship it"')
    tricky = request_from_tool_call(
        {"questions": [{**SEVERITY, "options": [{"label": 'a; other "b"'}, {"label": "c"}]}]}
    )
    assert answers_for_model(tricky, [Answer(id="sev", choice='a; other "b"')]) == 'sev: "a; other \\"b\\""'


def test_output_is_deterministic_and_ignores_answer_order(request_):
    answers = [Answer(id="due", date="2026-01-02"), Answer(id="sev", choice="Medium")]
    assert answers_for_model(request_, answers) == answers_for_model(request_, list(reversed(answers)))


def test_non_ascii_text_is_kept_readable(request_):
    text = answers_for_model(request_, [Answer(id="details", free_text="não sei ✓")])
    assert 'details: "não sei ✓"' in text


def test_works_for_requests_not_built_from_a_tool_call():
    request = Request(
        reason="r",
        items=[
            Item(id="env", text="Where", type="select", options=[{"value": "prd", "label": "Production"}, "dev"]),
            Item(id="notes__other", text="Unrelated", type="free_text", required=False),
        ],
    )
    answers = [Answer(id="env", choice="prd"), Answer(id="notes__other", free_text="kept")]
    assert answers_for_model(request, answers) == 'env: prd\nnotes__other: "kept"'


REPLICAS = {
    "id": "replicas",
    "header": "Replicas",
    "question": "How many replicas?",
    "type": "number",
    "min": 1,
    "max": 10,
    "integer": True,
}
TYPED = [
    REPLICAS,
    {"id": "go", "header": "Go", "question": "Deploy now?", "type": "boolean"},
    {"id": "contact", "header": "Contact", "question": "Who to tell?", "type": "email", "required": False},
    {"id": "runbook", "header": "Runbook", "question": "Runbook link?", "type": "url", "required": False},
    {"id": "at", "header": "At", "question": "What time?", "type": "time", "required": False},
    {"id": "start", "header": "Start", "question": "When exactly?", "type": "datetime", "required": False},
    {
        "id": "ticket",
        "header": "Ticket",
        "question": "Which ticket?",
        "type": "free",
        "pattern": "[A-Z]+-\\d+",
        "pattern_hint": "a ticket key like ABC-123",
        "max_length": 20,
    },
]


def test_the_new_types_are_in_the_schema_and_become_their_items() -> None:
    jsonschema.validate({"questions": TYPED[:5]}, ASK_USER_SCHEMA)
    jsonschema.validate({"questions": TYPED[5:]}, ASK_USER_SCHEMA)
    request = request_from_tool_call({"questions": TYPED[:5]})
    assert [i.type.value for i in request.items] == ["number", "boolean", "email", "url", "time"]
    replicas = request.items[0]
    assert (replicas.min, replicas.max, replicas.integer) == (1, 10, True)
    ticket = request_from_tool_call({"questions": TYPED[5:]}).items[1]
    assert (ticket.pattern, ticket.pattern_hint, ticket.max_length) == (r"[A-Z]+-\d+", "a ticket key like ABC-123", 20)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ({**DETAILS, "min": 1}, "questions[0] (id 'details'): min only apply to number questions"),
        ({**REPLICAS, "pattern": "x"}, "questions[0] (id 'replicas'): pattern only apply to free questions"),
        ({**REPLICAS, "min": 5, "max": 1}, "min 5 is greater than max 1"),
        ({**DETAILS, "pattern": "("}, "pattern is not a regular expression"),
    ],
)
def test_misplaced_or_inconsistent_rules_are_refused(question, expected) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        request_from_tool_call({"questions": [question]})
    assert any(expected in p for p in caught.value.problems), caught.value.problems


def test_typed_answers_read_as_json_values() -> None:
    request = request_from_tool_call({"questions": TYPED[:3]})
    answers = [Answer(id="replicas", number=3), Answer(id="go", boolean=False)]
    assert answers_for_model(request, answers) == "replicas: 3\ngo: false\ncontact: (skipped)"
