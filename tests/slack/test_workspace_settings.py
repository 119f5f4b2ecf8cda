"""The two Slack modes' settings, `PARLEY_ADMINS` per workspace, and which runs a workspace owns."""

from __future__ import annotations

from typing import Any

import pytest
from slack_bolt import BoltContext

from bot.deps import BotDeps
from bot.slack.clients import WebClients
from bot.slack.host import SlackHost
from bot.slack.tenant import Tenant, owned
from parley import settings as settings_module
from parley.serve import build_bot
from parley.settings import Settings
from workers.exceptions import ConfigError

pytestmark = pytest.mark.unit

OAUTH = {"slack_client_id": "1.2", "slack_client_secret": "cs", "slack_state_secret": "ss"}


def settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_oauth_mode_needs_all_three_settings() -> None:
    assert settings(**OAUTH).oauth_mode
    for missing in OAUTH:
        assert not settings(**{k: v for k, v in OAUTH.items() if k != missing}).oauth_mode
    assert not settings(slack_bot_token="xoxb-1").oauth_mode


def test_oauth_mode_is_not_served_over_socket_mode() -> None:
    with pytest.raises(ConfigError, match="SLACK_CLIENT_ID: OAuth installs are served over HTTP"):
        build_bot(settings(**OAUTH), socket_mode=True)


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ("U1,U2", {"": ["U1", "U2"]}),
        (" U1 , U2 ", {"": ["U1", "U2"]}),
        ("T1:U1,U2;T2:U3", {"T1": ["U1", "U2"], "T2": ["U3"]}),
        ("U9; E1:U1 ;", {"": ["U9"], "E1": ["U1"]}),
        ("T1:U1;T1:U2", {"T1": ["U1", "U2"]}),
        ("", {}),
    ],
)
def test_parley_admins_plain_and_per_workspace(monkeypatch: pytest.MonkeyPatch, raw: str, parsed: dict) -> None:
    monkeypatch.setenv("PARLEY_ADMINS", raw)
    assert settings_module.load().parley_admins == parsed


@pytest.mark.parametrize(
    ("raw", "why"),
    [("x1:U1", "team id (T…) or enterprise id (E…)"), ("T1:", "names no user"), ("T1: ,", "names no user")],
)
def test_a_malformed_parley_admins_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, raw: str, why: str) -> None:
    monkeypatch.setenv("PARLEY_ADMINS", raw)
    with pytest.raises(ConfigError) as info:
        settings_module.load()
    assert str(info.value).startswith("PARLEY_ADMINS: ") and why in str(info.value)


def context(team: str | None, enterprise: str | None = None, org: bool = False) -> BoltContext:
    return BoltContext(team_id=team, enterprise_id=enterprise, is_enterprise_install=org)


def deps(*, many: bool, admins: frozenset[str] = frozenset(), team_admins: dict | None = None) -> BotDeps:
    clients = WebClients(installations=object(), base_url="http://x/") if many else WebClients(single=object())  # type: ignore[arg-type]
    return BotDeps(
        runs=None,  # type: ignore[arg-type]
        client=None,  # type: ignore[arg-type]
        slack=SlackHost(clients, None),  # type: ignore[arg-type]
        admins=admins,
        team_admins=team_admins or {},
    )


def test_admins_of_one_workspace_are_admins_there_only() -> None:
    d = deps(many=True, admins=frozenset({"U0"}), team_admins={"T1": frozenset({"U1"}), "E1": frozenset({"U2"})})
    assert d.is_admin("U0", context("T9"))  # the plain form: every workspace
    assert d.is_admin("U1", context("T1")) and not d.is_admin("U1", context("T2"))
    assert d.is_admin("U2", context("T5", "E1", org=True)) and not d.is_admin("U2", context("T5", "E2"))
    assert not d.is_admin("U1")
    d.pool.shutdown()


def test_a_workspace_owns_its_runs_and_an_org_wide_install_every_team_of_its_organisation() -> None:
    team = Tenant.of(context("T1", "E1"))
    assert team.owns({"team": "T1", "enterprise": "E1"}) and not team.owns({"team": "T2", "enterprise": "E1"})
    org = Tenant.of(context("T1", "E1", org=True))
    assert org.owns({"team": "T2", "enterprise": "E1", "enterprise_install": True})
    assert not org.owns({"team": "T1", "enterprise": "E2"})
    nobody = Tenant.of(context(None))
    assert not nobody.owns({"team": "", "host": "terminal"})
    assert owned(None, {"host": "terminal"})  # single-workspace mode: every run


def test_single_workspace_mode_does_not_scope() -> None:
    single, many = deps(many=False, admins=frozenset({"U0"})), deps(many=True, admins=frozenset({"U0"}))
    assert single.tenant(context("T1")) is None and single.admin_filter("U0", context("T1")) is None
    keep = many.admin_filter("U0", context("T1"))
    assert keep is not None
    single.pool.shutdown()
    many.pool.shutdown()


def test_an_admin_reaches_the_runs_of_the_team_or_organisation_it_admins() -> None:
    d = deps(many=True, admins=frozenset({"U0"}), team_admins={"T1": frozenset({"U1"}), "E1": frozenset({"U2"})})
    t1, t2 = {"team": "T1", "enterprise": "E1"}, {"team": "T2", "enterprise": "E1"}
    org = context("T1", "E1", org=True)
    assert d.admin_over("U1", org, t1) and not d.admin_over("U1", org, t2)  # a team's admin: its team alone
    assert d.admin_over("U2", org, t1) and d.admin_over("U2", org, t2)  # the organisation's admin: every team
    assert d.admin_over("U0", org, t2) and not d.admin_over("U0", context("T3"), t1)  # never another tenant's
    assert not d.admin_over("U1", context("T2"), {"team": "T1"})  # from another workspace's shared channel
    assert d.admin_over(
        "U2", context("T1", "E1"), {"team": "T1"}
    )  # the organisation's admin, on a run of no enterprise
    single = deps(many=False, team_admins={"T1": frozenset({"U1"})})
    assert single.admin_over("U1", context("T1"), {"host": "api"})  # a run of no team: the one workspace's
    assert not single.admin_over("U1", context("T2"), {"team": "T1"})  # a Slack Connect partner's admin
    single.pool.shutdown()
    d.pool.shutdown()


def test_web_clients_need_one_client_or_an_installation_store() -> None:
    with pytest.raises(ValueError, match="either one client or an installation store"):
        WebClients()
