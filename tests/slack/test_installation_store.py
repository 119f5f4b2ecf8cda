"""The installation and OAuth state stores on the real Redis: slack_sdk's interfaces, Parley's keys.

Team installs, an org-wide install (found for any of its teams through `is_enterprise_install`),
per-user installations, each delete, and states that are consumed once and expire.
"""

from __future__ import annotations

import json
import time

import pytest
import redis
from slack_sdk.oauth.installation_store import Installation

from workers.store.installations import RedisInstallationStore, RedisOAuthStateStore

pytestmark = pytest.mark.integration


def team_install(team: str, *, user: str = "U1", token: str = "xoxb-a", enterprise: str | None = None) -> Installation:
    return Installation(
        app_id="A1",
        enterprise_id=enterprise,
        team_id=team,
        team_name=f"team {team}",
        user_id=user,
        bot_token=token,
        bot_id=f"B{team}",
        bot_user_id=f"UB{team}",
        bot_scopes="commands,chat:write",
        installed_at=time.time(),
    )


def org_install(enterprise: str, *, token: str = "xoxb-org") -> Installation:
    return Installation(
        app_id="A1",
        enterprise_id=enterprise,
        enterprise_name="Org",
        team_id=None,
        user_id="U9",
        bot_token=token,
        bot_id="BORG",
        bot_user_id="UBORG",
        is_enterprise_install=True,
        installed_at=time.time(),
    )


def test_a_team_install_is_found_by_its_team_and_nothing_else(r: redis.Redis) -> None:
    store = RedisInstallationStore(r)
    store.save(team_install("T1", token="xoxb-one"))
    store.save(team_install("T2", token="xoxb-two"))
    bot = store.find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None and bot.bot_token == "xoxb-one" and bot.bot_user_id == "UBT1"
    installation = store.find_installation(enterprise_id=None, team_id="T2")
    assert installation is not None and installation.bot_token == "xoxb-two" and installation.team_name == "team T2"
    assert store.find_bot(enterprise_id=None, team_id="T3") is None
    assert store.find_bot(enterprise_id="E1", team_id="T1") is None  # another organisation's T1
    # Stored as JSON, never pickled.
    raw = [r.get(k) for k in r.keys("parley:install:*:bot")]
    assert sorted(json.loads(v)["bot_token"] for v in raw) == ["xoxb-one", "xoxb-two"]


def test_a_reinstall_replaces_the_token_and_a_users_installation_carries_the_latest(r: redis.Redis) -> None:
    store = RedisInstallationStore(r)
    store.save(team_install("T1", user="U1", token="xoxb-old"))
    store.save(team_install("T1", user="U2", token="xoxb-new"))
    assert store.find_bot(enterprise_id=None, team_id="T1").bot_token == "xoxb-new"  # type: ignore[union-attr]
    by_u1 = store.find_installation(enterprise_id=None, team_id="T1", user_id="U1")
    assert by_u1 is not None and by_u1.user_id == "U1" and by_u1.bot_token == "xoxb-new"
    assert store.find_installation(enterprise_id=None, team_id="T1", user_id="U3") is None


def test_an_org_wide_install_is_found_for_any_team_through_is_enterprise_install(r: redis.Redis) -> None:
    store = RedisInstallationStore(r)
    store.save(org_install("E1"))
    store.save(team_install("T7", token="xoxb-t7", enterprise="E2"))
    for team in ("T5", "T6", None):
        bot = store.find_bot(enterprise_id="E1", team_id=team, is_enterprise_install=True)
        assert bot is not None and bot.bot_token == "xoxb-org" and bot.is_enterprise_install
    found = store.find_installation(enterprise_id="E1", team_id="T5", is_enterprise_install=True)
    assert found is not None and found.team_id is None and found.enterprise_name == "Org"
    # Without is_enterprise_install, a team of E1 has no installation of its own.
    assert store.find_bot(enterprise_id="E1", team_id="T5") is None
    assert store.find_bot(enterprise_id="E2", team_id="T7", is_enterprise_install=True) is None
    assert store.find_bot(enterprise_id="E2", team_id="T7").bot_token == "xoxb-t7"  # type: ignore[union-attr]


def test_delete_bot_delete_installation_and_delete_all(r: redis.Redis) -> None:
    store = RedisInstallationStore(r)
    store.save(team_install("T1", user="U1", token="xoxb-1"))
    store.save(team_install("T1", user="U2", token="xoxb-1"))
    store.save(team_install("T2", token="xoxb-2"))
    store.save(org_install("E1"))

    store.delete_installation(enterprise_id=None, team_id="T1", user_id="U1")
    assert store.find_installation(enterprise_id=None, team_id="T1", user_id="U1") is None
    assert store.find_installation(enterprise_id=None, team_id="T1", user_id="U2") is not None

    store.delete_bot(enterprise_id=None, team_id="T1")
    assert store.find_bot(enterprise_id=None, team_id="T1") is None
    assert store.find_installation(enterprise_id=None, team_id="T1") is not None

    store.delete_all(enterprise_id=None, team_id="T1")
    assert store.find_installation(enterprise_id=None, team_id="T1") is None
    assert store.find_installation(enterprise_id=None, team_id="T1", user_id="U2") is None
    assert not r.keys("parley:install:none:T1:*")
    assert store.find_bot(enterprise_id=None, team_id="T2") is not None  # another workspace untouched

    store.delete_all(enterprise_id="E1", team_id=None)
    assert store.find_bot(enterprise_id="E1", team_id="T5", is_enterprise_install=True) is None
    assert not r.keys("parley:install:E1:*")
    assert r.keys("parley:install:none:T2:*")


def test_a_state_is_consumed_once(r: redis.Redis) -> None:
    states = RedisOAuthStateStore(r, "state-secret")
    state = states.issue()
    assert states.consume(state) is True
    assert states.consume(state) is False
    assert states.consume("") is False


def test_issuing_states_writes_nothing_and_consuming_one_records_it_until_it_expires(r: redis.Redis) -> None:
    states = RedisOAuthStateStore(r, "state-secret")
    issued = [states.issue() for _ in range(200)]  # an unauthenticated visitor reloading /slack/install
    assert r.dbsize() == 0
    assert len(set(issued)) == 200
    assert states.consume(issued[7]) is True
    [key] = r.keys("parley:oauth-state:*")
    assert 590 < r.pttl(key) / 1000 <= 600  # kept only as long as the state could be replayed
    assert states.consume(issued[7]) is False and states.consume(issued[8]) is True


def test_a_state_not_signed_with_the_secret_is_refused_and_left_alone(r: redis.Redis) -> None:
    ours = RedisOAuthStateStore(r, "state-secret")
    theirs = RedisOAuthStateStore(r, "another-secret")
    state = theirs.issue()
    assert ours.consume(state) is False
    nonce, expiry, _ = state.split(".")
    assert ours.consume(nonce) is False and ours.consume(f"{nonce}.{expiry}.{'0' * 32}") is False
    assert r.dbsize() == 0
    assert theirs.consume(state) is True  # the refusals consumed nothing


def test_a_state_expires_and_its_expiry_cannot_be_moved(r: redis.Redis) -> None:
    states = RedisOAuthStateStore(r, "state-secret", expiration_seconds=1)
    stale = states.issue()
    time.sleep(1.2)
    fresh = states.issue()
    assert states.consume(stale) is False
    nonce, expiry, signature = stale.split(".")
    later = int(expiry) + 3_600_000
    assert states.consume(f"{nonce}.{later}.{signature}") is False  # the expiry is signed with the nonce
    assert states.consume(fresh) is True


def test_the_state_store_needs_a_secret(r: redis.Redis) -> None:
    with pytest.raises(ValueError, match="secret"):
        RedisOAuthStateStore(r, "")


def test_web_clients_carry_each_installations_token_and_refuse_a_workspace_without_one(r: redis.Redis) -> None:
    from bot.slack.clients import WebClients
    from workers.exceptions import NotInstalled

    store = RedisInstallationStore(r)
    store.save(team_install("T1", token="xoxb-one"))
    store.save(org_install("E1"))
    clients = WebClients(installations=store, base_url="http://127.0.0.1:9/api/")
    assert clients.for_conversation({"team": "T1"}).token == "xoxb-one"
    assert clients.for_conversation({"team": "T1"}) is clients.for_conversation({"team": "T1"})
    org = {"team": "T5", "enterprise": "E1", "enterprise_install": True}
    assert clients.for_conversation(org).token == "xoxb-org"
    # A team of the organisation whose run did not record the org-wide install still finds it.
    assert clients.for_conversation({"team": "T6", "enterprise": "E1"}).token == "xoxb-org"
    with pytest.raises(NotInstalled, match="not installed in workspace T2"):
        clients.for_conversation({"team": "T2"})
    store.delete_all(enterprise_id=None, team_id="T1")
    with pytest.raises(NotInstalled):
        clients.for_conversation({"team": "T1"})
