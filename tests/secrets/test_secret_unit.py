"""Secret items in the port, the Slack blocks and form, the `ask_user` tool and the settings."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError

from bot.slack.blocks import answered_blocks, modal_view, question_blocks
from bot.slack.form_state import StateError, parse_state_values
from bot.terminal.prompts import describe
from parley import settings as parley_settings
from workers.exceptions import ConfigError, SecretUnreadable
from workers.interaction import SECRET_MASK, Answer, AnswerError, Item, ItemType, Request
from workers.interaction.tools import SECRET_PLACEHOLDER, answers_for_model, request_from_tool_call
from workers.store.sealed import SecretBox, split

pytestmark = pytest.mark.unit

TOKEN = Item(id="token", text="Deploy token", type=ItemType.SECRET)
NOTE = Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False)
REQUEST = Request(reason="The deploy needs a token", items=[TOKEN, NOTE], assignees=["U0BOB"])
IID = "qSECRETsecret0000000001"


def test_a_secret_item_takes_no_default_and_its_answer_hides_in_repr() -> None:
    with pytest.raises(ValidationError, match="a secret item takes no default"):
        Item(id="t", text="Token", type=ItemType.SECRET, default="hunter2")
    answer = Answer(id="token", secret="hunter2")
    assert answer.value == "hunter2" and "hunter2" not in repr(answer)
    assert answer.masked() == Answer(id="token", secret=SECRET_MASK)
    assert REQUEST.has_secret and not Request(reason="r", items=[NOTE]).has_secret


def test_a_refused_secret_is_never_quoted_in_the_error() -> None:
    short = Request(reason="r", items=[Item(id="t", text="Token", type=ItemType.SECRET)])
    with pytest.raises(AnswerError) as refused:
        short.validate_answers([Answer(id="t", secret="x" * 3001)])
    assert "xxx" not in str(refused.value) and "over the limit" in str(refused.value)
    with pytest.raises(AnswerError, match="answered with 'secret', not 'free_text'"):
        short.validate_answers([Answer(id="t", free_text="hunter2")])


def test_sealing_masks_the_stored_answers_and_opens_only_with_the_same_key() -> None:
    stored, values = split([Answer(id="token", secret="hunter2"), Answer(id="note", free_text="hi")])
    assert stored == [Answer(id="token", secret=SECRET_MASK), Answer(id="note", free_text="hi")]
    box = SecretBox(Fernet.generate_key().decode())
    sealed = box.seal(values)
    assert "hunter2" not in sealed and box.open(sealed) == {"token": "hunter2"}
    with pytest.raises(SecretUnreadable, match="sealed with another key"):
        SecretBox(Fernet.generate_key().decode()).open(sealed)
    assert repr(box) == "SecretBox(<key hidden>)"


def test_the_question_message_has_no_input_and_one_button_to_the_form() -> None:
    blocks = question_blocks(REQUEST, IID, assignees=["U0BOB"])
    assert [b for b in blocks if b["type"] == "input"] == []
    actions = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert [(e["action_id"], e["value"]) for e in actions] == [("parley_open_form", IID)]
    # Without a secret the same request shows its inputs and Submit.
    plain = question_blocks(Request(reason="r", items=[NOTE]), IID, assignees=["U0BOB"])
    assert any(b["type"] == "input" for b in plain)


def test_the_form_reads_the_secret_and_the_message_may_not_carry_one() -> None:
    view = modal_view(REQUEST, IID)
    [token] = [b for b in view["blocks"] if b.get("block_id") == f"f|{IID}|token"]
    assert token["element"]["type"] == "plain_text_input" and "initial_value" not in token["element"]
    state = {f"f|{IID}|token": {"answer": {"type": "plain_text_input", "value": "hunter2"}}}
    assert parse_state_values(REQUEST, IID, state, prefix="f") == [Answer(id="token", secret="hunter2")]
    forged = {f"q|{IID}|1|token": {"answer": {"type": "plain_text_input", "value": "hunter2"}}}
    with pytest.raises(StateError, match="a secret is answered only in the form"):
        parse_state_values(REQUEST, IID, forged, prefix="q")


def test_the_locked_message_says_who_provided_it_never_what() -> None:
    blocks = answered_blocks(REQUEST, [Answer(id="token", secret=SECRET_MASK)], answered_by="U0BOB", answered_at=1.0)
    text = str(blocks)
    assert "provided by <@U0BOB>" in text and SECRET_MASK not in text


def test_the_tool_offers_secret_and_the_model_reads_a_placeholder() -> None:
    args = {"questions": [{"id": "otp", "header": "Code", "question": "Your code?", "type": "secret"}]}
    request = request_from_tool_call(args)
    assert [(i.id, i.type) for i in request.items] == [("otp", ItemType.SECRET)]
    told = answers_for_model(request, [Answer(id="otp", secret="hunter2")])
    assert told == f"otp: {SECRET_PLACEHOLDER}" and "hunter2" not in told
    assert answers_for_model(request, []) == "otp: (skipped)"


def test_the_terminal_echoes_that_it_was_given_not_what() -> None:
    assert describe(TOKEN, "hunter2") == "(given; hidden)"


def test_a_malformed_secret_key_stops_start_up_naming_the_variable_not_the_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PARLEY_SECRET_KEY", "not-a-key-hunter2")
    with pytest.raises(ConfigError) as stopped:
        parley_settings.load()
    assert str(stopped.value).startswith("PARLEY_SECRET_KEY: ") and "hunter2" not in str(stopped.value)
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("PARLEY_SECRET_KEY", key)
    loaded = parley_settings.load()
    assert loaded.parley_secret_key is not None and loaded.parley_secret_key.get_secret_value() == key
    assert key not in repr(loaded)
