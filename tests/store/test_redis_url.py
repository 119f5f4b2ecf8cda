"""`REDIS_URL`'s forms: redis-py's own (TLS options in the query) and Parley's Sentinel form; bad ones say why."""

from __future__ import annotations

import re

import pytest
from redis.connection import SSLConnection
from redis.sentinel import SentinelConnectionPool, SentinelManagedConnection

from parley import settings
from workers.exceptions import ConfigError
from workers.store.connection import SentinelTarget, connect, parse_sentinel_url, sibling

pytestmark = pytest.mark.unit


def test_the_documented_sentinel_form() -> None:
    assert parse_sentinel_url("redis+sentinel://host:26379,host:26380/mymaster/0") == SentinelTarget(
        sentinels=[("host", 26379), ("host", 26380)], service="mymaster", db=0
    )


def test_passwords_for_the_master_and_for_the_sentinels() -> None:
    target = parse_sentinel_url("redis+sentinel://:s%40cret@10.0.0.1:26379/main/3?sentinel_password=watch")
    assert (target.password, target.username, target.sentinel_password) == ("s@cret", None, "watch")
    assert (target.service, target.db, target.sentinels) == ("main", 3, [("10.0.0.1", 26379)])
    named = parse_sentinel_url("redis+sentinel://parley:pw@h:1/main")
    assert (named.username, named.password, named.db) == ("parley", "pw", 0)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+sentinel:///mymaster/0", "names no Sentinel"),
        ("redis+sentinel://host/mymaster", "'host' is not host:port"),
        ("redis+sentinel://host:26379,other/mymaster", "'other' is not host:port"),
        ("redis+sentinel://host:99999/mymaster", "'host:99999' is not host:port"),
        ("redis+sentinel://host:26379", "names no service"),
        ("redis+sentinel://host:26379/mymaster/zero", "path must be /service or /service/db"),
        ("redis+sentinel://host:26379/a/0/extra", "path must be /service or /service/db"),
        ("redis+sentinel://host:26379/mymaster?ssl=true", "unknown option 'ssl'"),
    ],
)
def test_a_malformed_sentinel_url_says_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        parse_sentinel_url(url)


def test_settings_name_the_variable_and_the_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis+sentinel://host/mymaster")
    with pytest.raises(ConfigError, match=r"^REDIS_URL: .*'host' is not host:port"):
        settings.load()
    monkeypatch.setenv("REDIS_URL", "http://host:6379")
    starts = r"^REDIS_URL: .*must start with redis://, rediss://, unix:// or redis\+sentinel://"
    with pytest.raises(ConfigError, match=starts):
        settings.load()
    monkeypatch.setenv("REDIS_URL", "redis+sentinel://a:26379,b:26380/mymaster/2")
    assert settings.load().redis_url == "redis+sentinel://a:26379,b:26380/mymaster/2"


def test_a_sentinel_url_gives_a_client_of_the_service_master() -> None:
    """No connection is made until a command: the pool asks the Sentinels for the master then, every time."""
    client = connect(
        "redis+sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/4?sentinel_password=sp", socket_timeout=1.5
    )
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "mymaster" and pool.is_master
    assert pool.connection_class is SentinelManagedConnection
    assert (pool.connection_kwargs["db"], pool.connection_kwargs["password"]) == (4, "pw")
    sentinels = pool.sentinel_manager.sentinels
    assert [s.connection_pool.connection_kwargs["port"] for s in sentinels] == [26379, 26380]
    assert {s.connection_pool.connection_kwargs.get("password") for s in sentinels} == {"sp"}
    assert {s.connection_pool.connection_kwargs.get("socket_timeout") for s in sentinels} == {1.5}

    quick = sibling(client, max_connections=2, socket_timeout=0.3)  # the lease keeper's client
    assert isinstance(quick.connection_pool, SentinelConnectionPool)
    assert quick.connection_pool.service_name == "mymaster" and quick.connection_pool.max_connections == 2
    assert quick.connection_pool.connection_kwargs["socket_timeout"] == 0.3
    assert quick.connection_pool.connection_kwargs["db"] == 4


def test_a_tls_url_takes_its_options_from_the_query() -> None:
    client = connect("rediss://127.0.0.1:6380/2?ssl_ca_certs=/etc/parley/ca.pem&ssl_cert_reqs=required")
    pool = client.connection_pool
    assert pool.connection_class is SSLConnection
    assert pool.connection_kwargs["ssl_ca_certs"] == "/etc/parley/ca.pem"
    assert (pool.connection_kwargs["ssl_cert_reqs"], pool.connection_kwargs["db"]) == ("required", 2)
