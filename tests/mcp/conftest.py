"""Fixtures the gateway's test modules share: the gateway over a module's `bot`, and a files folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from gateway_support import Gateway
from inprocess_bot import Bot


@pytest.fixture
def gateway(bot: Bot, redis_url: str) -> Gateway:
    """The gateway, in this process, over the module's own `bot` (which registers the API host)."""
    return Gateway(bot, redis_url)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """An empty folder an upstream serves or the test writes into."""
    root = tmp_path / "files"
    root.mkdir()
    return root
