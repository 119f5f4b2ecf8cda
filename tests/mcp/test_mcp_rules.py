"""The rules file shared by `parley mcp gateway` and `approve_tool_use`."""

from __future__ import annotations

import pytest

from bot.mcp.rules import (
    REDACTED,
    RuleAction,
    RulesError,
    load_config,
    parse_config,
    path_matches,
    redacted,
    redacted_values,
    with_redacted_restored,
)

pytestmark = pytest.mark.unit

EXAMPLE = """
upstreams:
  files: {command: ["python", "-m", "my_files_server"]}
  tickets: {url: "https://tickets.internal/mcp", headers: {Authorization: "Bearer ${TICKETS_TOKEN}"}}
channel: C0123
assignees: [U024BE7LH, S0OPS]
expires_in: 900
rules:
  - {tools: "files.read_*", action: allow}
  - {tools: "files.delete_*", action: deny, reason: "deleting is never allowed here"}
  - {tools: "tickets.*", action: ask, redact: ["token", "auth.*"], allow_standing: true}
  - {tools: "*", action: ask}
"""


def test_the_issue_example_parses_and_the_first_matching_rule_decides() -> None:
    config = parse_config(EXAMPLE, {"TICKETS_TOKEN": "t0k"})
    assert config.upstreams["tickets"].headers == {"Authorization": "Bearer t0k"}
    assert config.upstreams["files"].command == ("python", "-m", "my_files_server")
    assert config.rule_for("files.read_text").action is RuleAction.ALLOW
    deny = config.rule_for("files.delete_tree")
    assert (deny.action, deny.reason) == (RuleAction.DENY, "deleting is never allowed here")
    ask = config.rule_for("tickets.create")
    assert ask.action is RuleAction.ASK and ask.allow_standing and ask.redact == ("token", "auth.*")
    assert config.rule_for("files.write_text").action is RuleAction.ASK


def test_no_rule_means_ask() -> None:
    assert parse_config("rules: []", {}).rule_for("anything").action is RuleAction.ASK
    assert parse_config("", {}).rule_for("anything").action is RuleAction.ASK


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (EXAMPLE, "${TICKETS_TOKEN} is not set"),
        ("rules: [{tools: '*', action: maybe}]", "rules.0.action"),
        ("upstreams: {x: {command: [a], url: 'http://h'}}", "exactly one of"),
        ("upstreams: {'a b': {command: [a]}}", "upstream name"),
        ("expires_in: 10", "expires_in"),
        ("channel: general", "channel"),
        ("- a list", "must be a mapping"),
        ("rules: [", "not valid YAML"),
        ("rule: []", "rule"),
    ],
)
def test_a_bad_file_is_refused_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(RulesError, match=problem.replace("$", r"\$").replace("{", r"\{").replace("}", r"\}")):
        parse_config(text, {})


def test_a_missing_file_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RulesError, match="cannot read the rules file"):
        load_config(tmp_path / "nope.yml", {})


def test_redaction_hides_matching_paths_and_edits_never_change_them() -> None:
    args = {"title": "Refund", "token": "s3cret", "auth": {"user": "bo", "key": "k"}, "nested": {"token": "keep"}}
    shown = redacted(args, ("token", "auth.*"))
    assert shown == {
        "title": "Refund",
        "token": REDACTED,
        "auth": {"user": REDACTED, "key": REDACTED},
        "nested": {"token": "keep"},
    }
    assert args["token"] == "s3cret"  # the original is untouched
    edited = {"title": "Refund 2", "token": "forged", "auth": {"user": REDACTED}, "nested": {"token": "changed"}}
    restored = with_redacted_restored(args, edited, ("token", "auth.*"))
    assert restored == {
        "title": "Refund 2",
        "token": "s3cret",
        "auth": {"user": "bo", "key": "k"},
        "nested": {"token": "changed"},
    }


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_variable_is_refused_naming_it(value: str) -> None:
    with pytest.raises(RulesError, match=r"upstreams\.tickets\.headers\.Authorization: \$\{TICKETS_TOKEN\} is empty"):
        parse_config(EXAMPLE, {"TICKETS_TOKEN": value})


@pytest.mark.parametrize("written", ["${ TICKETS_TOKEN}", "${TICKETS_TOKEN:-none}", "${TICKETS_TOKEN"])
def test_a_malformed_variable_is_refused_not_sent_as_written(written: str) -> None:
    text = EXAMPLE.replace("${TICKETS_TOKEN}", written)
    with pytest.raises(RulesError, match=r"upstreams\.tickets\.headers\.Authorization: .* is not a variable"):
        parse_config(text, {"TICKETS_TOKEN": "t0k"})


@pytest.mark.parametrize(
    ("tool", "action"),
    [
        ("files.delete_file", RuleAction.DENY),
        ("files.Delete_file", RuleAction.DENY),
        ("FILES.DELETE_TREE", RuleAction.DENY),
        ("files.\uff24elete_file", RuleAction.DENY),  # a fullwidth D is a D once normalised
        ("files.dele\u200bte_file", RuleAction.DENY),  # a zero-width space is dropped
        ("Files.Read_Text", RuleAction.ALLOW),
        ("files.undelete_file", RuleAction.ASK),
    ],
)
def test_rules_match_tool_names_without_regard_to_case(tool: str, action: RuleAction) -> None:
    assert parse_config(EXAMPLE, {"TICKETS_TOKEN": "t0k"}).rule_for(tool).action is action


def test_redact_paths_reach_into_lists_by_any_or_one_index() -> None:
    args = {
        "creds": [{"name": "a", "token": "t-a"}, {"name": "b", "token": "t-b"}],
        "pairs": [["k", "v"]],
        "token": "top",
    }
    assert path_matches(("creds", "1", "token"), ("creds.*.token",))
    assert path_matches(("creds", "0", "token"), ("creds.0.token",))
    assert not path_matches(("creds", "1", "token"), ("creds.0.token",))
    assert not path_matches(("creds", "1"), ("creds.*.token",))
    every = redacted(args, ("creds.*.token", "pairs.*.1"))
    assert every == {
        "creds": [{"name": "a", "token": REDACTED}, {"name": "b", "token": REDACTED}],
        "pairs": [["k", REDACTED]],
        "token": "top",
    }
    assert redacted(args, ("creds.1.token",))["creds"] == [
        {"name": "a", "token": "t-a"},
        {"name": "b", "token": REDACTED},
    ]
    assert redacted_values(args, ("creds.*.token",)) == ["t-a", "t-b"]

    forged = {"creds": [{"name": "A", "token": "forged"}, {"name": "b", "token": REDACTED}], "token": "top"}
    restored = with_redacted_restored(args, forged, ("creds.*.token",))
    assert restored["creds"] == [{"name": "A", "token": "t-a"}, {"name": "b", "token": "t-b"}]
    dropped = with_redacted_restored(args, {"creds": [{"name": "c", "token": "x"}]}, ("creds.*.token",))
    assert dropped["creds"] == args["creds"]  # an item holding a redacted value is never dropped
    replaced = with_redacted_restored(args, {"creds": "none"}, ("creds.*.token",))
    assert replaced["creds"] == args["creds"]
