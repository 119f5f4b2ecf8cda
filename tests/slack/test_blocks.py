"""Every Block Kit builder produces what Slack accepts, and agent text never turns into markup."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from bot.slack import blocks, blocks_question, limits, mrkdwn
from workers.interaction.models import Answer, Request
from workers.runtime.admin import RunSummary

try:
    from tests.blockcheck import assert_valid_message, assert_valid_view, block_errors, text_objects
except ImportError:  # tests/ is not a package: pytest puts this directory on sys.path
    from blockcheck import assert_valid_message, assert_valid_view, block_errors, text_objects

pytestmark = pytest.mark.unit

IID = "Zx9_k-3mQpL2vR7tY1uW0aBcDeFgHiJkLmNoPqRsTuV"  # 43 chars, like secrets.token_urlsafe(32)
ASKED = ["UOK1", "UOK2"]
EVIL = "<!channel> <@U123> & <https://evil|click> > done"


def _opts(n: int, label: str = "Option") -> list[dict[str, str]]:
    return [{"value": f"v{k}", "label": f"{label} {k}"[:75]} for k in range(n)]


def one_select() -> Request:
    return Request(reason="Pick one", items=[{"id": "env", "text": "Env?", "type": "select", "options": _opts(8)}])


def one_multi() -> Request:
    items = [{"id": "m", "text": "Which?", "type": "multi_select", "options": _opts(6), "default": ["v1", "v2"]}]
    return Request(reason="Pick many", items=items)


def one_text() -> Request:
    item = {"id": "t", "text": "Notes?", "type": "free_text", "multiline": True, "max_length": 500, "default": "x"}
    return Request(reason="Write", items=[{**item, "placeholder": "Tell us"}])


def one_date() -> Request:
    return Request(reason="When", items=[{"id": "d", "text": "Date?", "type": "date", "default": "2026-01-31"}])


def fast_path() -> Request:
    items = [{"id": "go", "text": "Ship it?", "type": "select", "options": ["yes", "no", "later"], "default": "no"}]
    return Request(reason="Release 1.2 is ready", items=items)


def ten_items() -> Request:
    kinds = ["select", "multi_select", "free_text", "date"]
    items = []
    for n in range(10):
        kind = kinds[n % 4]
        item: dict[str, Any] = {"id": f"i{n}", "text": f"Question {n}", "type": kind, "required": n % 3 != 0}
        if kind in ("select", "multi_select"):
            item["options"] = _opts(12)
        items.append(item)
    return Request(reason="A long form", items=items)


def hundred_options() -> Request:
    items = [
        {"id": "big", "text": "Pick a host", "type": "select", "options": _opts(100, "x" * 75), "default": "v99"},
        {"id": "bigm", "text": "Pick hosts", "type": "multi_select", "options": _opts(100, "y" * 75)},
    ]
    return Request(reason="Many hosts", items=items)


def biggest() -> Request:
    """Every field at its maximum: 3000-char reason, ten 2000-char items with 100 long options each."""
    items = [
        {
            "id": f"i{n}",
            "text": "T" * 2000,
            "type": "select" if n % 2 else "multi_select",
            "options": _opts(100, "L" * 75),
        }
        for n in range(10)
    ]
    return Request(reason="R" * 3000, items=items)


def evil() -> Request:
    items = [
        {"id": "s", "text": EVIL, "type": "select", "options": [{"value": "a", "label": EVIL[:75]}, "b"]},
        {"id": "m", "text": EVIL, "type": "multi_select", "options": ["a", "b"], "required": False},
        {"id": "t", "text": EVIL, "type": "free_text", "placeholder": EVIL[:150]},
        {"id": "d", "text": EVIL, "type": "date", "required": False},
    ]
    return Request(reason=EVIL, items=items)


REQUESTS: dict[str, Callable[[], Request]] = {
    f.__name__: f
    for f in (one_select, one_multi, one_text, one_date, fast_path, ten_items, hundred_options, biggest, evil)
}


def full_answers(request: Request) -> list[Answer]:
    out = []
    for item in request.items:
        if item.is_choice:
            values = item.option_values()
            out.append(Answer.for_item(item, values[0] if item.type.value == "select" else values[:3]))
        elif item.type.value == "free_text":
            out.append(Answer(id=item.id, free_text=("line\n" * 1000)[: item.text_limit]))
        else:
            out.append(Answer(id=item.id, date="2026-02-03"))
    return out


def inputs(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in out if b["type"] == "input"]


# ---- every builder, every shape -----------------------------------------------------------------


@pytest.mark.parametrize("name", REQUESTS)
def test_question_message_is_valid(name: str) -> None:
    request = REQUESTS[name]()
    out = blocks.question_blocks(request, IID, assignees=ASKED)
    assert_valid_message(out, blocks.fallback_text(request))
    limits.check_message_blocks(out)


@pytest.mark.parametrize("name", REQUESTS)
@pytest.mark.parametrize("threshold", [0, 3, 100])
def test_question_message_valid_with_external_selects(name: str, threshold: int) -> None:
    request = REQUESTS[name]()
    assert_valid_message(blocks.question_blocks(request, IID, version=4, assignees=[], external_threshold=threshold))
    assert_valid_view(blocks.modal_view(request, IID, external_threshold=threshold))


@pytest.mark.parametrize("name", REQUESTS)
def test_form_and_locked_messages_are_valid(name: str) -> None:
    request = REQUESTS[name]()
    view = blocks.modal_view(request, IID)
    assert_valid_view(view)
    assert (view["type"], view["callback_id"], view["private_metadata"]) == ("modal", "parley_form", IID)
    assert (view["title"]["text"], view["submit"]["text"], view["close"]["text"]) == ("Answer", "Submit", "Cancel")
    assert [b["block_id"] for b in inputs(view["blocks"])] == [f"f|{IID}|{i.id}" for i in request.items]
    answered = blocks.answered_blocks(request, full_answers(request), answered_by="UOK1", answered_at=1_760_000_000)
    assert_valid_message(answered)
    assert not inputs(answered) and not [b for b in answered if b["type"] == "actions"]
    for status in ("cancelled", "expired"):
        assert_valid_message(blocks.closed_blocks(request, status=status, detail=EVIL, by="UOK2"))


def test_input_ids_and_actions_row() -> None:
    request = ten_items()
    out = blocks.question_blocks(request, IID, version=3, assignees=ASKED)
    assert [b["block_id"] for b in inputs(out)] == [f"q|{IID}|3|{i.id}" for i in request.items]
    assert {b["element"]["action_id"] for b in inputs(out)} == {"answer"}
    assert [b["optional"] for b in inputs(out)] == [not i.required for i in request.items]
    [row, reassign] = [b for b in out if b["type"] == "actions"]
    assert row["block_id"] == f"qa|{IID}|3"
    assert reassign["block_id"] == f"qr|{IID}|3"
    [picker] = reassign["elements"]
    assert (picker["type"], picker["action_id"], picker["placeholder"]["text"]) == (
        "users_select",
        "parley_reassign",
        "Reassign…",
    )
    submit, form = row["elements"]
    assert (submit["action_id"], submit["value"], submit["style"], submit["text"]["text"]) == (
        "parley_submit",
        IID,
        "primary",
        "Submit",
    )
    assert (form["action_id"], form["value"], form["text"]["text"]) == ("parley_open_form", IID, "Answer in a form")
    context = next(b for b in out if b["type"] == "context")
    assert context["elements"][0]["text"] == "Asked of <@UOK1>, <@UOK2>"


def test_notes_and_user_groups_show_who_is_asked_now() -> None:
    out = blocks.question_blocks(
        one_select(), IID, version=4, assignees=["S0REVIEWERS", "UOK1"], notes=["Escalated to <@UOK2>"]
    )
    shown = {b["block_id"]: b["elements"][0]["text"] for b in out if b["type"] == "context"}
    assert shown[f"qm|{IID}|4"] == "Asked of <!subteam^S0REVIEWERS>, <@UOK1>"
    assert shown[f"qn|{IID}|4"] == "Escalated to <@UOK2>"
    view = blocks.modal_view(one_select(), IID, version=4)
    assert [b["block_id"] for b in view["blocks"] if b["type"] == "actions"] == [f"fr|{IID}|4"]


def test_elements_carry_defaults_and_settings() -> None:
    [sel] = inputs(blocks.question_blocks(one_select(), IID, assignees=[]))
    assert sel["element"]["type"] == "static_select" and len(sel["element"]["options"]) == 8
    assert "initial_option" not in sel["element"]
    [multi] = inputs(blocks.question_blocks(one_multi(), IID, assignees=[]))
    assert multi["element"]["type"] == "multi_static_select"
    assert [o["value"] for o in multi["element"]["initial_options"]] == ["v1", "v2"]
    [text] = inputs(blocks.question_blocks(one_text(), IID, assignees=[]))
    element = text["element"]
    assert (element["type"], element["multiline"], element["max_length"], element["initial_value"]) == (
        "plain_text_input",
        True,
        500,
        "x",
    )
    assert element["placeholder"]["text"] == "Tell us"
    [date] = inputs(blocks.question_blocks(one_date(), IID, assignees=[]))
    assert (date["element"]["type"], date["element"]["initial_date"]) == ("datepicker", "2026-01-31")


def test_external_select_above_threshold() -> None:
    items = [
        {"id": "big", "text": "Pick a host", "type": "select", "options": _opts(100), "default": "v99"},
        {"id": "bigm", "text": "Pick hosts", "type": "multi_select", "options": _opts(100)},
    ]
    request = Request(reason="Many hosts", items=items)
    out = inputs(blocks.question_blocks(request, IID, assignees=[], external_threshold=50))
    assert [b["element"]["type"] for b in out] == ["external_select", "multi_external_select"]
    assert all(b["element"]["min_query_length"] == 0 and "options" not in b["element"] for b in out)
    assert out[0]["element"]["initial_option"]["value"] == "v99"
    static = inputs(blocks.question_blocks(request, IID, assignees=[]))
    assert [b["element"]["type"] for b in static] == ["static_select", "multi_static_select"]
    assert blocks_question.EXTERNAL_SELECT_THRESHOLD == 100


def test_fast_path_buttons() -> None:
    request = fast_path()
    assert blocks.is_fast_path(request)
    out = blocks.question_blocks(request, IID, version=2, assignees=ASKED)
    assert not inputs(out)
    [row, reassign] = [b for b in out if b["type"] == "actions"]
    assert row["block_id"] == f"qc|{IID}|2"
    assert reassign["block_id"] == f"qr|{IID}|2" and reassign["elements"][0]["action_id"] == "parley_reassign"
    assert [e["action_id"] for e in row["elements"]] == ["parley_choose_0", "parley_choose_1", "parley_choose_2"]
    assert [e["value"] for e in row["elements"]] == ["yes", "no", "later"]
    assert [e["text"]["text"] for e in row["elements"]] == ["yes", "no", "later"]
    forced = blocks.question_blocks(request, IID, assignees=[], external_threshold=1)
    assert inputs(forced) and inputs(forced)[0]["element"]["type"] == "external_select"


@pytest.mark.parametrize(
    "items",
    [
        [{"id": "a", "text": "?", "type": "select", "options": _opts(6)}],
        [{"id": "a", "text": "?", "type": "select", "options": _opts(2), "required": False}],
        [{"id": "a", "text": "?", "type": "multi_select", "options": _opts(2)}],
        [{"id": "a", "text": "?", "type": "select", "options": _opts(2)}, {"id": "b", "text": "?", "type": "date"}],
    ],
)
def test_no_fast_path_otherwise(items: list[dict[str, Any]]) -> None:
    request = Request(reason="r", items=items)
    assert not blocks.is_fast_path(request)
    assert any(
        b["block_id"].startswith("qa|") for b in blocks.question_blocks(request, IID, assignees=[]) if "block_id" in b
    )


def test_version_bump_changes_every_block_id() -> None:
    for make in REQUESTS.values():
        request = make()
        first = [b.get("block_id") for b in blocks.question_blocks(request, IID, version=1, assignees=ASKED)]
        second = [b.get("block_id") for b in blocks.question_blocks(request, IID, version=2, assignees=ASKED)]
        assert None not in first and None not in second
        assert not set(first) & set(second)


def test_reason_prefix_and_short_header() -> None:
    out = blocks.question_blocks(one_select(), IID, assignees=[], reason_prefix="Reminder:")
    assert out[0]["type"] == "header" and out[0]["text"]["text"] == "Reminder: Pick one"
    long = Request(reason="why " * 100, items=one_select().items)
    section = blocks.question_blocks(long, IID, assignees=[], reason_prefix="Reminder:")[0]
    assert section["type"] == "section" and section["text"]["text"].startswith("*Reminder:* why")


def test_bad_ids_are_refused() -> None:
    with pytest.raises(ValueError):
        blocks.question_blocks(one_select(), "bad|iid", assignees=[])
    with pytest.raises(ValueError):
        blocks.modal_view(one_select(), IID, version=-1)


# ---- escaping -----------------------------------------------------------------------------------

OWN_MARKUP = re.compile(r"<@UOK[12]>|<!date\^\d+\^[^|<>]+\|[^<>]+>")


def assert_inert(mrkdwn_text: str) -> None:
    """No `<`/`>` except Parley's own mentions and date tokens, so nothing pings or links."""
    rest = OWN_MARKUP.sub("", mrkdwn_text)
    assert "<" not in rest and ">" not in rest, mrkdwn_text
    assert "<!channel>" not in mrkdwn_text and "<@U123>" not in mrkdwn_text


def every_mrkdwn(out: Any) -> list[str]:
    return [o["text"] for o in text_objects(out) if o["type"] == "mrkdwn"]


def test_agent_text_is_escaped_everywhere() -> None:
    request = evil()
    answers = [
        Answer(id="s", choice="a"),
        Answer(id="m", choices=["a"]),
        Answer(id="t", free_text=EVIL + "\n" + EVIL),
        Answer(id="d", date="2026-01-01"),
    ]
    outputs: list[Any] = [
        blocks.question_blocks(request, IID, assignees=ASKED),
        blocks.question_blocks(request, IID, assignees=ASKED, reason_prefix=EVIL),
        blocks.modal_view(request, IID),
        blocks.answered_blocks(request, answers, answered_by="UOK1", answered_at=1_760_000_000),
        blocks.closed_blocks(request, status="cancelled", detail=EVIL, by="UOK2"),
        blocks.closed_blocks(request, status=EVIL, detail=EVIL),
        blocks.failed_blocks(EVIL, "run-1", True),
    ]
    texts = [
        blocks.fallback_text(request),
        blocks.run_started_text("UOK1", EVIL, EVIL),
        blocks.progress_text(EVIL),
        blocks.final_text(EVIL),
        blocks.final_text({"note": EVIL}),
        blocks.failed_text(EVIL),
    ]
    for out in outputs:
        found = every_mrkdwn(out)
        assert found
        for text in found:
            assert_inert(text)
        headers = [b for b in (out["blocks"] if isinstance(out, dict) else out) if b["type"] == "header"]
        assert not [h for h in headers if "<" in h["text"]["text"]]
    for text in texts:
        assert_inert(text)
        assert "&amp;" in text and "&lt;!channel&gt;" in text


@pytest.mark.parametrize("bad", ["U123>|<!channel", "<!here>", "u123", "", "U1 U2"])
def test_mentions_only_for_user_ids(bad: str) -> None:
    with pytest.raises(ValueError):
        mrkdwn.mention(bad)
    assert_inert(mrkdwn.user_ref(bad))
    assert mrkdwn.mention("U0123ABCD") == "<@U0123ABCD>"
    ctx = blocks.question_blocks(one_select(), IID, assignees=[bad or "x", "UOK1"])[1]
    assert_inert(ctx["elements"][0]["text"])


def test_mrkdwn_helpers() -> None:
    assert mrkdwn.escape("a & <b> &lt;") == "a &amp; &lt;b&gt; &amp;lt;"
    assert mrkdwn.truncate("abcdef", 4) == "abc…" and mrkdwn.truncate("abc", 3) == "abc"
    clipped = mrkdwn.clip("ab&&&&", 6)
    assert clipped == "ab…" and len(clipped) <= 6
    for n in range(2, 40):
        out = mrkdwn.clip("x<y>&" * 10, n)
        assert len(out) <= n and not re.search(r"&[a-z]*…", out)
    assert mrkdwn.duration(30) == "just now" and mrkdwn.duration(180) == "3 min" and mrkdwn.duration(7300) == "2 h"


# ---- long text ----------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", ["R" * 3000, "&" * 3000, ("line\n" * 600)[:3000], "<" * 3000])
def test_long_reasons_stay_within_limits(reason: str) -> None:
    request = Request(reason=reason, items=ten_items().items)
    out = blocks.question_blocks(request, IID, assignees=ASKED)
    assert_valid_message(out, blocks.fallback_text(request))
    assert len(blocks.fallback_text(request)) <= 4000
    assert_valid_view(blocks.modal_view(request, IID))
    assert_valid_message(blocks.answered_blocks(request, full_answers(request), answered_by="U0X1", answered_at=0))
    assert_valid_message(blocks.closed_blocks(request, status="expired", detail="x" * 3000))


def test_biggest_request_sheds_option_text_then_shortens_labels() -> None:
    out = blocks.question_blocks(biggest(), IID, assignees=ASKED)
    assert_valid_message(out)
    assert limits.text_length(out) <= blocks_question.QUESTION_TEXT_BUDGET
    shortened = inputs(out)
    assert all(b["element"]["type"] in ("external_select", "multi_external_select") for b in shortened)
    assert all(b["label"]["text"].endswith("…") and "hint" in b for b in shortened)
    form = blocks.modal_view(biggest(), IID)
    assert_valid_view(form)  # within a modal's budget too: the same selects load as people type, labels shortened
    assert all(b["element"]["type"] in ("external_select", "multi_external_select") for b in inputs(form["blocks"]))
    assert all(b["label"]["text"].endswith("…") and "hint" in b for b in inputs(form["blocks"]))


def test_long_run_texts() -> None:
    huge = "&<>" * 5000
    for text in (
        blocks.run_started_text("UOK1", huge, huge),
        blocks.progress_text(huge),
        blocks.final_text(huge),
        blocks.final_text({"k": [huge] * 3}),
        blocks.failed_text(huge),
    ):
        assert len(text) <= 4000
        assert_inert(text)
    assert_valid_message(blocks.failed_blocks(huge, "r" * 200, True))


def test_answered_message_shows_labels_and_who() -> None:
    request = ten_items()
    answers = [Answer(id="i1", choices=["v0", "v3"]), Answer(id="i2", free_text="a\nb & c")]
    out = blocks.answered_blocks(request, answers, answered_by="UOK1", answered_at=1_760_000_000)
    texts = [b["text"]["text"] for b in out if b["type"] == "section"]
    assert "*Question 1*\nOption 0, Option 3" in texts
    assert "*Question 2*\na\nb &amp; c" in texts
    assert "*Question 0*\n_no answer_" in texts
    who = out[-1]["elements"][0]["text"]
    # The date token renders "today at 12:55 AM" itself: "Answered by @x, today at 12:55 AM", never "at today at".
    assert who == "Answered by <@UOK1>, <!date^1760000000^{date_short_pretty} at {time}|2025-10-09 08:53 UTC>"
    closed = blocks.closed_blocks(request, status="cancelled", detail="", by="UOK2")
    assert "Cancelled by <@UOK2>" in closed[-1]["text"]["text"]
    expired = blocks.closed_blocks(request, status="expired", detail="")
    assert "Expired without an answer" in expired[-1]["text"]["text"]


def test_the_deploy_agents_approval_shows_each_argument_and_approve_edit_reject() -> None:
    """One field per argument (long values cut: the form shows them whole), and the three buttons."""
    from workers.agents.deploy import replicas_schema
    from workers.interaction.approval import approval_request

    facts = {"service": "api", "version": "v" + "9" * 400, "target": "production", "replicas": 3}
    request = approval_request("Deploy api", facts, schema=replicas_schema(facts), editable=["replicas"])
    out = blocks.question_blocks(request, IID, assignees=["U0BOB"], context=facts)
    [fields] = [b["fields"] for b in out if b["type"] == "section" and "fields" in b]
    shown = [f["text"] for f in fields]
    assert shown[0] == "*service*\napi" and shown[3] == "*replicas*\n3"
    assert len(shown[1]) < 230 and shown[1].endswith("…")
    assert not [b for b in out if b["type"] == "input"]
    [row] = [b for b in out if b.get("block_id", "").startswith("qa|")]
    assert [(e["text"]["text"], e["action_id"]) for e in row["elements"]] == [
        ("Approve", "parley_approve"),
        ("Edit…", "parley_open_form"),
        ("Reject", "parley_reject"),
    ]
    form = blocks.modal_view(request, IID)
    [replicas] = [b for b in form["blocks"] if b["type"] == "input"]
    assert replicas["block_id"] == f"f|{IID}|replicas"
    assert "9" * 400 in json.dumps(form)  # the form shows the value whole
    assert (form["title"]["text"], form["submit"]["text"]) == ("Edit and approve", "Approve")


@pytest.mark.parametrize("name", ["one_select", "fast_path", "approval"])
def test_a_question_not_reassignable_has_no_reassign_on_its_message_or_form(name: str) -> None:
    """An `ask_each` question: each person answers their own, so nobody hands it on."""
    from workers.interaction.approval import approval_request

    request = approval_request("Scale api", {"replicas": 3}) if name == "approval" else REQUESTS[name]()
    assert blocks.REASSIGN_ACTION_ID in json.dumps(blocks.question_blocks(request, IID, assignees=ASKED))
    assert blocks.REASSIGN_ACTION_ID in json.dumps(blocks.modal_view(request, IID))
    message = blocks.question_blocks(request, IID, assignees=ASKED, reassignable=False)
    assert blocks.REASSIGN_ACTION_ID not in json.dumps(message)
    assert_valid_message(message)
    form = blocks.modal_view(request, IID, reassignable=False)
    assert blocks.REASSIGN_ACTION_ID not in json.dumps(form)
    assert_valid_view(form)


def test_run_message_texts_and_retry() -> None:
    assert blocks.run_started_text("U0AB", "ticket", "fix it") == "<@U0AB> started *ticket*: fix it"
    with_retry = blocks.failed_blocks("boom", "run-9", True)
    button = with_retry[-1]["elements"][0]
    assert (button["action_id"], button["value"], button["text"]["text"]) == ("parley_admin_retry", "run-9", "Retry")
    assert [b["type"] for b in blocks.failed_blocks("boom", "run-9", False)] == ["section"]
    assert "```" in blocks.final_text({"a": 1})


# ---- home tab -----------------------------------------------------------------------------------


def _runs(n: int) -> list[RunSummary]:
    statuses = ["paused", "failed", "running", "done"]
    return [
        RunSummary(
            run_id=f"run-{k}",
            agent=f"agent {k} {EVIL}",
            status=statuses[k % 4],
            text=EVIL * 20,
            started_by="UOK1",
            updated_at=1_760_000_000 + k,
            assignees=("UOK1", "UOK2") * 4,
        )
        for k in range(n)
    ]


def _waiting(n: int) -> list[dict[str, Any]]:
    return [
        {
            "run_id": f"run-{k}",
            "agent": "ticket",
            "reason": EVIL,
            "permalink": f"https://x.slack.com/archives/C1/p{k}" if k % 2 else None,
            "asked_at": 1000.0,
            "now": 1000.0 + 60 * k * 7,
        }
        for k in range(n)
    ]


def test_home_view_empty_and_non_admin() -> None:
    view = blocks.home_view(waiting=[], admin=None)
    assert_valid_view(view)
    assert view["type"] == "home" and "Nothing is waiting" in str(view)
    admin_empty = blocks.home_view(waiting=[], admin={"counts": {}, "runs": [], "page": 0, "has_next": False})
    assert_valid_view(admin_empty)
    assert "parley_admin_page" not in str(admin_empty)


def test_the_admins_home_section_says_it_lists_paused_runs() -> None:
    """Counts of every status above an empty list read as if runs were missing: say what is listed."""

    def admin_texts(page: int) -> dict[str, str]:
        admin = {"counts": {"succeeded": 4, "paused": 0, "failed": 1}, "runs": [], "page": page, "has_next": False}
        view = blocks.home_view(waiting=[], admin=admin)
        assert_valid_view(view)
        found = {b["block_id"]: b for b in view["blocks"] if b.get("block_id", "").startswith("home|")}
        return {
            "heading": found["home|runs"]["text"]["text"],
            "counts": found["home|counts"]["elements"][0]["text"],
            "empty": found["home|noruns"]["text"]["text"],
        }

    assert admin_texts(0) == {
        "heading": "Paused runs",
        "counts": "Runs waiting for an answer, newest first. All runs: *succeeded* 4 · *failed* 1",
        "empty": "No paused runs right now.",
    }
    assert admin_texts(2)["empty"] == "No paused runs on this page."
    listed = [b.get("text", {}).get("text") for b in blocks.runs_list_blocks([], {"succeeded": 4})]
    assert listed[:3] == ["*Paused runs*", None, "No paused runs right now."]


def test_home_view_many_runs_pages() -> None:
    admin = {"counts": {"paused": 30, "failed": 10}, "runs": _runs(60), "page": 2, "has_next": True}
    view = blocks.home_view(waiting=_waiting(50), admin=admin)
    assert_valid_view(view)
    assert len(view["blocks"]) <= 100
    for text in every_mrkdwn(view):
        rest = re.sub(r"<https://x\.slack\.com/archives/C1/p\d+\|[^<>]*>", "", text)
        assert_inert(rest)
    assert "waiting 7 min" in str(view) and "waiting 2 h" in str(view)
    pages = [b for b in view["blocks"] if b.get("block_id", "").startswith("home|page|")]
    assert [(b["elements"][0]["action_id"], b["elements"][0]["value"]) for b in pages] == [
        ("parley_admin_page", "1"),
        ("parley_admin_page", "3"),
    ]
    run_sections = [b for b in view["blocks"] if b.get("block_id", "").startswith("hr|")]
    assert run_sections[0]["block_id"] == "hr|run-59"  # newest first
    rows = {b["block_id"]: b for b in view["blocks"] if b.get("block_id", "").startswith("hra|")}
    paused = [e["action_id"] for e in rows["hra|run-56"]["elements"]]
    assert paused == ["parley_admin_cancel", "parley_admin_remind", "parley_inspect"]
    assert rows["hra|run-56"]["elements"][0]["confirm"]["title"]["text"]
    assert [e["action_id"] for e in rows["hra|run-57"]["elements"]] == ["parley_admin_retry", "parley_inspect"]
    assert [e["action_id"] for e in rows["hra|run-59"]["elements"]] == ["parley_inspect"]  # finished: Inspect only
    assert all(e["value"] == k.removeprefix("hra|") for k, b in rows.items() for e in b["elements"])


def test_runs_list_blocks() -> None:
    assert_valid_message(blocks.runs_list_blocks([], {}))
    out = blocks.runs_list_blocks(_runs(100), {"paused": 25, "failed": 25})
    assert_valid_message(out)
    listed = [b for b in out if b.get("accessory")]
    assert listed and all(b["accessory"]["action_id"] == "parley_inspect" for b in listed)
    assert listed[0]["accessory"]["value"] == "run-99"  # newest first
    assert "more" in out[-1]["elements"][0]["text"]
    for text in every_mrkdwn(out):
        assert_inert(text)


# ---- limits -------------------------------------------------------------------------------------


def _section(n: int, block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": f"s{n}"}}
    if block_id:
        block["block_id"] = block_id
    return block


def _select(**option: Any) -> dict[str, Any]:
    opt = {"text": {"type": "plain_text", "text": "ok"}, "value": "ok", **option}
    element = {"type": "static_select", "action_id": "a", "options": [opt]}
    return {"type": "input", "block_id": "x", "label": {"type": "plain_text", "text": "L"}, "element": element}


VIOLATIONS: dict[str, tuple[list[dict[str, Any]], str]] = {
    "51 blocks": ([_section(n) for n in range(51)], "51 blocks"),
    "duplicate block_id": ([_section(1, "same"), _section(2, "same")], "duplicate block_id"),
    "long option value": ([_select(value="v" * 151)], "value over 150"),
    "long option text": ([_select(text={"type": "plain_text", "text": "t" * 76})], "text over 75"),
    "long description": ([_select(description={"type": "plain_text", "text": "d" * 76})], "description over 75"),
    "max_length 0": (
        [
            {
                "type": "input",
                "label": {"type": "plain_text", "text": "L"},
                "element": {"type": "plain_text_input", "action_id": "a", "max_length": 0},
            }
        ],
        "max_length",
    ),
    "max_length 3001": (
        [
            {
                "type": "input",
                "label": {"type": "plain_text", "text": "L"},
                "element": {"type": "plain_text_input", "action_id": "a", "max_length": 3001},
            }
        ],
        "max_length",
    ),
    "max_selected_items 0": (
        [
            {
                "type": "input",
                "label": {"type": "plain_text", "text": "L"},
                "element": {"type": "multi_static_select", "action_id": "a", "options": [], "max_selected_items": 0},
            }
        ],
        "max_selected_items",
    ),
    "aggregate text": ([_section(0) | {"text": {"type": "mrkdwn", "text": "x" * 3000}} for _ in range(5)], "12000"),
    "duplicate action_id": (
        [
            {
                "type": "actions",
                "elements": [
                    {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "1"}},
                    {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "2"}},
                ],
            }
        ],
        "duplicate action_id",
    ),
}


@pytest.mark.parametrize("case", VIOLATIONS)
def test_limits_catch_each_violation(case: str) -> None:
    bad, expected = VIOLATIONS[case]
    with pytest.raises(limits.BlockLimitError) as caught:
        limits.check_message_blocks(bad)
    assert expected in str(caught.value)
    assert isinstance(caught.value, ValueError) and caught.value.problems
    assert block_errors(bad), "the test-side checker must agree"


def test_limits_on_views_and_valid_input() -> None:
    limits.check_message_blocks([_section(n) for n in range(50)])
    limits.check_message_blocks([_section(n) for n in range(100)], surface="home")
    with pytest.raises(limits.BlockLimitError, match="101 blocks"):
        limits.check_view({"type": "modal", "blocks": [_section(n) for n in range(101)]})
    with pytest.raises(ValueError):
        limits.check_message_blocks([], surface="email")


def test_blockcheck_uses_slack_sdk_validation() -> None:
    assert block_errors([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}])
    assert block_errors([{"type": "no_such_block"}])
    with pytest.raises(AssertionError):
        assert_valid_message([_section(1)], text="")
