"""Many workspaces through OAuth, end to end against the Web API stand-in.

Parley's WSGI app serves over real HTTP on loopback in OAuth mode; workspaces A (T0ALPHA) and B
(T0BETA) install it through `/slack/install`, the stand-in's approval and the redirect to
`/slack/oauth_redirect` (bolt exchanges the code at the stand-in's `oauth.v2.access`). Each
workspace's run posts with its own bot token, as the stand-in records; a signed click from A
cannot answer B's question; B's signed `app_uninstalled` deletes B's installation and cancels
B's runs, each with a history entry, and leaves A's alone. An org-wide install (`team: null`,
`is_enterprise_install: true`) is routed to the organisation's installation.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
import redis
from oauth_stack import STATE_COOKIE, OAuthStack, Reply, get, oauth_stack
from runtime_helpers import history_events
from slack_forms import button_action, find_element, form_state, is_question, users_select_action, users_select_state
from slack_payloads import (
    block_actions_payload,
    event_callback_body,
    home_actions_payload,
    interaction_body,
    slash_command_body,
    slash_command_fields,
)

from bot.playground import Channel, User
from bot.slack.blocks_question import CLAIM_ACTION_ID, REASSIGN_ACTION_ID, RELEASE_ACTION_ID
from bot.slack.refusals import WRONG_WORKSPACE
from workers.store.records import InterruptState, RunStatus

pytestmark = pytest.mark.integration

ALPHA, BETA, ORG, ORG_TEAM = "T0ALPHA", "T0BETA", "E0ORG", "T0ORG1"


@pytest.fixture
def stack(r: redis.Redis, redis_url: str, tmp_path: Path) -> Iterator[OAuthStack]:
    with oauth_stack(r, redis_url, tmp_path, parley_admins={ALPHA: ["U0ALICE"]}) as s:
        yield s


def token_of(stack: OAuthStack, team: str | None, enterprise: str | None = None, org: bool = False) -> str:
    bot = stack.installations.find_bot(enterprise_id=enterprise, team_id=team, is_enterprise_install=org)
    assert bot is not None and bot.bot_token
    return bot.bot_token


def run_paused(stack: OAuthStack, agent: str, *, team: str, user: str, channel: str, params: str = "", **fields: str):
    """`/parley <agent> <params> <nonce>` typed in `team`; the worker runs it until it asks. Returns the run."""
    text = f"{params} {secrets.token_hex(4)}".strip()
    body = urlencode({**slash_command_fields(f"{agent} {text}", user=user, channel=channel, team=team), **fields})
    resp = stack.form(body)
    assert (resp.status, resp.text) == (200, ""), resp.text
    run = stack.run_with_text(text)
    stack.enqueued(run)
    stack.work()
    run = stack.worker.store.get(run.id)
    assert run.status is RunStatus.PAUSED, (run.status, run.error)
    return run


def start_paused(stack: OAuthStack, *, team: str, user: str, channel: str, **fields: str) -> tuple[str, dict]:
    """`/parley s-pick …` typed in `team`; the worker runs it until it asks. Returns (run id, question)."""
    run = run_paused(stack, "s-pick", team=team, user=user, channel=channel, **fields)
    [question] = [m for m in stack.ws.thread(channel, run.conversation["thread_ts"]) if is_question(m)]
    return run.id, question


def choose(question: dict, *, user: str, team: str, channel: str) -> dict:
    block, button = find_element(question["blocks"], lambda a: a.startswith("parley_choose_"))
    return block_actions_payload(
        user=user, message=question, channel=channel, action=button_action(block, button), team=team
    )


def test_two_workspaces_install_post_with_their_own_tokens_and_b_uninstalls(stack: OAuthStack) -> None:
    # ---- install A, then B, through bolt's flow and the stand-in's oauth.v2.access ------------
    for team in (ALPHA, BETA):
        done = stack.install(team)
        assert done.status == 200, done.text
    exchanges = stack.calls("oauth.v2.access")
    assert [c["status"] for c in exchanges] == [200, 200] and all(c["token"] is None for c in exchanges)
    alpha, beta = token_of(stack, ALPHA), token_of(stack, BETA)
    assert alpha != beta and alpha.startswith("xoxb-") and beta.startswith("xoxb-")

    # ---- a run in each posts with its own token ----------------------------------------------
    run_a, question_a = start_paused(stack, team=ALPHA, user="U0ALICE", channel="C0GENERAL")
    run_b, question_b = start_paused(stack, team=BETA, user="U0BETA", channel="C0BETA")
    posts = stack.calls("chat.postMessage")
    assert {c["args"]["channel"] for c in posts} == {"C0GENERAL", "C0BETA"}
    for post in posts:
        assert post["token"] == (alpha if post["args"]["channel"] == "C0GENERAL" else beta), post
    assert len([c for c in posts if c["args"].get("blocks")]) == 2  # each question, posted once

    # ---- a click from A can't answer B's question ---------------------------------------------
    forged = choose(question_b, user="U0ALICE", team=ALPHA, channel="C0GENERAL")
    assert stack.form(interaction_body(forged)).status == 200
    told = stack.wait_for("the refusal", lambda: stack.calls("chat.postEphemeral"))[0]
    assert told["token"] == alpha and told["args"]["user"] == "U0ALICE"
    assert told["args"]["text"] == WRONG_WORKSPACE  # the existing WRONG_TEAM refusal
    interrupt_b = stack.worker.store.interrupt(stack.worker.store.get(run_b).interrupt)
    assert interrupt_b is not None and interrupt_b.state is InterruptState.OPEN

    # ---- B uninstalls: its installation is gone, its runs cancelled, A untouched --------------
    assert stack.ws.installs.uninstall(BETA) == [beta]  # Slack revokes the token, then tells Parley
    event = {"type": "app_uninstalled", "event_ts": "1700000000.000100"}
    resp = stack.json(event_callback_body(event, team=BETA))
    assert resp.status == 200
    stack.wait_for("B's run to be cancelled", lambda: stack.worker.store.get(run_b).status is RunStatus.CANCELLED)
    assert stack.installations.find_bot(enterprise_id=None, team_id=BETA) is None
    assert stack.installations.find_installation(enterprise_id=None, team_id=BETA) is None
    [entry] = history_events(stack.worker, run_b, "cancelled")
    assert entry.by == "slack:app_uninstalled"
    assert stack.worker.store.interrupt(interrupt_b.id).state is InterruptState.CANCELLED  # type: ignore[union-attr]
    assert stack.worker.store.get(run_a).status is RunStatus.PAUSED
    assert token_of(stack, ALPHA) == alpha

    # ---- A carries on: its answer is accepted and the run finishes, posting with A's token ----
    answer = choose(question_a, user="U0ALICE", team=ALPHA, channel="C0GENERAL")
    assert stack.form(interaction_body(answer)).status == 200
    stack.work()
    assert stack.worker.store.get(run_a).status is RunStatus.SUCCEEDED
    after = [
        c for c in stack.calls("chat.postMessage") + stack.calls("chat.update") if c["args"]["channel"] == "C0GENERAL"
    ]
    assert after and {c["token"] for c in after} == {alpha}
    assert not [c for c in stack.calls("chat.update") if c["token"] == beta]  # nothing sent with B's dead token


def test_app_uninstalled_cancels_every_open_run_of_the_workspace(stack: OAuthStack) -> None:
    """Several paused runs, one of them on an `ask_all` group: the signed `app_uninstalled` cancels each one."""
    for team in (ALPHA, BETA):
        assert stack.install(team).status == 200
    run_a, _ = start_paused(stack, team=ALPHA, user="U0ALICE", channel="C0GENERAL")
    picks = [start_paused(stack, team=BETA, user="U0BETA", channel="C0BETA")[0] for _ in range(2)]
    both = json.dumps({"a": "U0BETA", "b": "U0BETA"})
    grouped = run_paused(stack, "s-all", team=BETA, user="U0BETA", channel="C0BETA", params=both)
    assert grouped.interrupt.startswith("g")  # paused on a group of questions
    members = stack.worker.store.groups.members(stack.worker.store.groups.group(grouped.interrupt))
    assert len(members) == 2
    beta_runs = [*picks, grouped.id]

    stack.ws.installs.uninstall(BETA)
    event = {"type": "app_uninstalled", "event_ts": "1700000000.000300"}
    assert stack.json(event_callback_body(event, team=BETA)).status == 200
    store = stack.worker.store
    stack.wait_for(
        "every run of B to be cancelled",
        lambda: all(store.get(r).status is RunStatus.CANCELLED for r in beta_runs),
    )
    for run_id in beta_runs:
        assert [h.by for h in history_events(stack.worker, run_id, "cancelled")] == ["slack:app_uninstalled"]
    for run_id in picks:
        assert store.interrupt(store.get(run_id).interrupt).state is InterruptState.CANCELLED  # type: ignore[union-attr]
    assert {store.interrupt(m.id).state for m in members} == {InterruptState.CANCELLED}  # type: ignore[union-attr]
    assert store.get(run_a).status is RunStatus.PAUSED


def test_tokens_revoked_for_the_bot_ends_the_workspace_too(stack: OAuthStack) -> None:
    assert stack.install(BETA).status == 200
    run_b, _ = start_paused(stack, team=BETA, user="U0BETA", channel="C0BETA")
    event = {"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UBT0BETA"]}, "event_ts": "1700000000.000200"}
    assert stack.json(event_callback_body(event, team=BETA)).status == 200
    stack.wait_for("B's run to be cancelled", lambda: stack.worker.store.get(run_b).status is RunStatus.CANCELLED)
    assert [h.by for h in history_events(stack.worker, run_b, "cancelled")] == ["slack:tokens_revoked"]
    assert stack.installations.find_bot(enterprise_id=None, team_id=BETA) is None


def test_an_install_with_a_state_parley_did_not_issue_is_refused(stack: OAuthStack) -> None:
    code = stack.ws.installs.authorize(ALPHA)
    resp = get(
        f"{stack.url}/slack/oauth_redirect",
        {"code": code, "state": "forged.0000"},
        cookies={"slack-app-oauth-state": "forged.0000"},
    )
    assert resp.status == 401 and "state parameter is no longer valid" in resp.text
    assert not stack.calls("oauth.v2.access")
    assert stack.installations.find_bot(enterprise_id=None, team_id=ALPHA) is None


def test_install_pages_write_nothing_and_a_state_installs_once(stack: OAuthStack, r: redis.Redis) -> None:
    pages = [get(f"{stack.url}/slack/install") for _ in range(50)]  # anyone may load it, as often as they like
    assert {p.status for p in pages} == {200}
    assert r.keys("parley:oauth-state:*") == []
    state = pages[-1].cookies[STATE_COOKIE]

    def redirect() -> Reply:
        code = stack.ws.installs.authorize(ALPHA)
        return get(f"{stack.url}/slack/oauth_redirect", {"code": code, "state": state}, cookies={STATE_COOKIE: state})

    assert redirect().status == 200
    assert len(r.keys("parley:oauth-state:*")) == 1  # recorded when consumed, so it is used once
    replay = redirect()
    assert replay.status == 401 and "state parameter is no longer valid" in replay.text
    assert len(stack.calls("oauth.v2.access")) == 1


def test_an_org_wide_install_routes_team_null_payloads_to_the_organisations_installation(stack: OAuthStack) -> None:
    assert stack.install(ALPHA).status == 200
    assert stack.install(None, enterprise=ORG).status == 200
    org_token = token_of(stack, None, ORG, org=True)
    installation = stack.installations.find_installation(
        enterprise_id=ORG, team_id=ORG_TEAM, is_enterprise_install=True
    )
    assert installation is not None and installation.team_id is None and installation.is_enterprise_install

    # /parley in one of the organisation's teams: the run belongs to the org-wide installation.
    org_fields = {"enterprise_id": ORG, "enterprise_name": ORG, "is_enterprise_install": "true"}
    run_id, question = start_paused(stack, team=ORG_TEAM, user="U0ORG", channel="C0ORG", **org_fields)
    run = stack.worker.store.get(run_id)
    assert run.conversation["enterprise"] == ORG and run.conversation["enterprise_install"] is True
    org_posts = stack.calls("chat.postMessage", lambda c: c["args"]["channel"] == "C0ORG")
    assert org_posts and {c["token"] for c in org_posts} == {org_token}

    # A click with `team: null`, as Slack sends it from an org-wide install, answers it.
    click = choose(question, user="U0ORG", team=ORG_TEAM, channel="C0ORG")
    click.update({"team": None, "enterprise": {"id": ORG, "name": ORG}, "is_enterprise_install": True})
    click["user"]["team_id"] = ORG_TEAM
    assert stack.form(interaction_body(click)).status == 200
    interrupt = stack.worker.store.interrupt(run.interrupt)
    assert interrupt is not None and interrupt.state is InterruptState.ANSWERED and interrupt.answered_by == "U0ORG"
    stack.work()
    assert stack.worker.store.get(run_id).status is RunStatus.SUCCEEDED
    locked = stack.calls("chat.update", lambda c: c["args"]["channel"] == "C0ORG")
    assert locked and {c["token"] for c in locked} == {org_token}
    assert not stack.calls("chat.postEphemeral")  # nothing was refused


def test_admins_and_listings_are_the_workspaces_own(stack: OAuthStack) -> None:
    """PARLEY_ADMINS=T0ALPHA:U0ALICE: Alice lists A's runs only; in B she is no admin."""
    for team in (ALPHA, BETA):
        assert stack.install(team).status == 200
    run_a, _ = start_paused(stack, team=ALPHA, user="U0ALICE", channel="C0GENERAL")
    run_b, _ = start_paused(stack, team=BETA, user="U0BETA", channel="C0BETA")
    listing = stack.form(slash_command_body("runs", user="U0ALICE", channel="C0GENERAL", team=ALPHA))
    shown = json.dumps(listing.json())
    assert run_a in shown and run_b not in shown
    refused = stack.form(slash_command_body("runs", user="U0ALICE", channel="C0BETA", team=BETA))
    assert refused.json()["text"] == "Only Parley admins can list runs."


@pytest.fixture
def shared(r: redis.Redis, redis_url: str, tmp_path: Path) -> Iterator[OAuthStack]:
    """A and B installed, each with its own admin; C0GENERAL is A's channel, shared with B."""
    with oauth_stack(r, redis_url, tmp_path, parley_admins={ALPHA: ["U0ALICE"], BETA: ["U0BETA"]}) as s:
        s.ws.add_user(User("U0BEEF", "beef", "Beta Colleague"))
        for team in (ALPHA, BETA):
            assert s.install(team).status == 200
        yield s


def _ephemerals_to(stack: OAuthStack, user: str, n: int) -> list[str]:
    """The first `n` ephemeral texts posted to `user`, waited for (the listeners run after the ack)."""

    def told() -> list[str] | None:
        texts = [c["args"]["text"] for c in stack.calls("chat.postEphemeral", lambda c: c["args"]["user"] == user)]
        return texts if len(texts) >= n else None

    return list(stack.wait_for(f"{n} ephemeral(s) to {user}", told))


def test_another_workspaces_admin_can_neither_reassign_nor_release_in_a_shared_channel(shared: OAuthStack) -> None:
    """B's admin clicks Reassign… and Release on A's question inside the channel A shares with B: both refused."""
    params = json.dumps({"assignees": ["U0ALICE", "U0BOB"], "claim": True})
    run = run_paused(shared, "s-form", team=ALPHA, user="U0ALICE", channel="C0GENERAL", params=params)
    [question] = [m for m in shared.ws.thread("C0GENERAL", run.conversation["thread_ts"]) if is_question(m)]
    block, select = find_element(question["blocks"], REASSIGN_ACTION_ID)
    reassign = block_actions_payload(
        user="U0BETA",
        team=BETA,
        message=question,
        channel="C0GENERAL",
        action=users_select_action(block, select, "U0BEEF"),
        state_values={**form_state(question["blocks"], {}), **users_select_state(block, select, "U0BEEF")},
    )
    assert shared.form(interaction_body(reassign)).status == 200
    [refusal] = _ephemerals_to(shared, "U0BETA", 1)
    assert refusal == ":warning: Only the people asked, or a Parley admin, can reassign this question."
    interrupt = shared.worker.store.interrupt(run.interrupt)
    assert interrupt is not None and interrupt.assignees == ["U0ALICE", "U0BOB"]

    block, button = find_element(question["blocks"], CLAIM_ACTION_ID)
    claim = block_actions_payload(
        user="U0BOB", team=ALPHA, message=question, channel="C0GENERAL", action=button_action(block, button)
    )
    assert shared.form(interaction_body(claim)).status == 200
    shared.wait_for("Bob's claim", lambda: shared.worker.store.interrupt(run.interrupt).claimed_by == "U0BOB")
    release = block_actions_payload(
        user="U0BETA",
        team=BETA,
        message=question,
        channel="C0GENERAL",
        action={
            "type": "button",
            "action_id": RELEASE_ACTION_ID,
            "block_id": block["block_id"],
            "value": run.interrupt,
        },
    )
    assert shared.form(interaction_body(release)).status == 200
    _, refused = _ephemerals_to(shared, "U0BETA", 2)
    assert refused.startswith(":warning:")
    assert shared.worker.store.interrupt(run.interrupt).claimed_by == "U0BOB"
    assert [h.event for h in shared.worker.store.history(run.id)] == ["started", "claimed"]


@pytest.fixture
def org(r: redis.Redis, redis_url: str, tmp_path: Path) -> Iterator[OAuthStack]:
    """An org-wide install of E0ORG; U0ORG is the admin of its team T0ORG1 only."""
    with oauth_stack(r, redis_url, tmp_path, parley_admins={ORG_TEAM: ["U0ORG"]}) as s:
        s.ws.add_channel(Channel("C0ORG2", "org2"))
        s.ws.add_user(User("U0ORG2", "org2", "Other Team Person"))
        assert s.install(None, enterprise=ORG).status == 200
        yield s


def test_a_teams_admin_under_an_org_wide_install_sees_and_cancels_only_that_teams_runs(org: OAuthStack) -> None:
    fields = {"enterprise_id": ORG, "enterprise_name": ORG, "is_enterprise_install": "true"}
    mine = run_paused(org, "s-pick", team=ORG_TEAM, user="U0ORG", channel="C0ORG", **fields)
    other = run_paused(org, "s-pick", team="T0ORG2", user="U0ORG2", channel="C0ORG2", **fields)
    listing = org.form(
        urlencode({**slash_command_fields("runs", user="U0ORG", channel="C0ORG", team=ORG_TEAM), **fields})
    )
    shown = json.dumps(listing.json())
    assert mine.id in shown and other.id not in shown

    for run in (other, mine):
        action = {"type": "button", "action_id": "parley_admin_cancel", "block_id": "b1", "value": run.id}
        click = home_actions_payload(user="U0ORG", view={"id": "V0HOME"}, action=action, team=ORG_TEAM)
        click.update({"enterprise": {"id": ORG, "name": ORG}, "is_enterprise_install": True})
        assert org.form(interaction_body(click)).status == 200
    org.wait_for("the own team's run cancelled", lambda: org.worker.store.get(mine.id).status is RunStatus.CANCELLED)
    assert org.worker.store.get(other.id).status is RunStatus.PAUSED
    refused = org.calls("chat.postMessage", lambda c: c["args"]["channel"] == "U0ORG")
    assert [c["args"]["text"] for c in refused][:1] == ["Only Parley admins can do that."]
