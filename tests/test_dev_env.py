"""The settings `parley dev` gives its pieces: loopback webhooks, a kept secret key, the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from parley.dev_env import SECRET_KEY_FILE, playground_secret_key, scripted_model, webhook_allow
from workers.questions.destinations import check_destination

pytestmark = pytest.mark.unit


def test_the_secret_key_is_made_once_private_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "parley"
    key = playground_secret_key(data_dir)
    assert Fernet(key).decrypt(Fernet(key).encrypt(b"x")) == b"x"  # a key Fernet takes
    assert (data_dir / SECRET_KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert playground_secret_key(data_dir) == key  # the next start opens what the last one sealed


@pytest.mark.parametrize("url", ["http://127.0.0.1:16545/h", "http://localhost:8080/h", "http://[::1]:9000/h"])
def test_loopback_on_any_port_is_allowed_besides_the_persons_entries(url: str) -> None:
    allow = tuple(webhook_allow(["hooks.example.com"]).split(","))
    assert check_destination(url, allow) is None
    assert "hooks.example.com" in allow


def test_the_scripted_model_stands_in_only_where_no_model_is_configured() -> None:
    base = "http://127.0.0.1:3000"
    assert scripted_model({}, base) == {
        "PARLEY_LLM_BASE_URL": "http://127.0.0.1:3000/scripted-model/v1",
        "PARLEY_LLM_MODEL": "scripted",
    }
    assert scripted_model({"PARLEY_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}, base) == {}
