"""Where the bench runs: never on a database of a shared server that nobody named.

The bench flushes its database between rounds, so without a server named it uses the
embedded Redis, and given one it needs the database named too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.redis_db import bench_redis_url, connect, flush

pytestmark = pytest.mark.integration


def test_with_no_server_named_the_bench_flushes_only_the_embedded_redis(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setenv("PARLEY_DATA_DIR", str(tmp_path / "parley"))
    url = bench_redis_url(None, None)
    assert url.startswith("unix://") and url.endswith("db=14"), url
    client = connect(url)
    client.set("bench:marker", "1")
    flush(client)
    assert client.dbsize() == 0
    assert str(tmp_path) in url  # the embedded server lives in the data folder, not on a shared port


def test_a_named_server_without_a_named_database_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379")
    with pytest.raises(SystemExit, match="name one it may flush: --db N or a URL ending /N"):
        bench_redis_url(None, None)
    with pytest.raises(SystemExit, match="name one it may flush"):
        bench_redis_url("redis://127.0.0.1:6390", None)
    assert bench_redis_url(None, 7) == "redis://127.0.0.1:6379/7"
    assert bench_redis_url("redis://127.0.0.1:6390/3", None) == "redis://127.0.0.1:6390/3"
    with pytest.raises(SystemExit, match="database 0"):
        bench_redis_url("redis://127.0.0.1:6390/0", None)
