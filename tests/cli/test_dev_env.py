"""The settings `parley dev` gives its pieces: loopback webhooks, a kept secret key, the scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from parley.dev_env import SECRET_KEY_FILE, playground_secret_key, scripted_model
from workers.questions.destinations import DestinationRefused, check_destination

pytestmark = pytest.mark.unit


def test_the_secret_key_is_made_once_private_and_reused(tmp_path: Path) -> None:
    data_dir = tmp_path / "parley"
    key = playground_secret_key(data_dir)
    assert Fernet(key).decrypt(Fernet(key).encrypt(b"x")) == b"x"  # a key Fernet takes
    assert (data_dir / SECRET_KEY_FILE).stat().st_mode & 0o777 == 0o600
    assert playground_secret_key(data_dir) == key  # the next start opens what the last one sealed


@pytest.mark.parametrize("url", ["http://127.0.0.1:16545/h", "http://localhost:8080/h", "http://[::1]:9000/h"])
def test_loopback_admits_this_machine_on_any_port_and_nothing_more(url: str) -> None:
    assert check_destination(url, (), loopback=True) is not None
    assert check_destination(url, ("hooks.example.com",), loopback=True) is not None
    with pytest.raises(DestinationRefused, match="private"):
        check_destination("http://10.0.0.7:8080/h", (), loopback=True)
    with pytest.raises(DestinationRefused, match="not in PARLEY_WEBHOOK_ALLOW"):
        check_destination("http://10.0.0.7:8080/h", ("hooks.example.com",), loopback=True)


def test_the_scripted_model_stands_in_only_where_no_model_is_configured() -> None:
    base = "http://127.0.0.1:3000"
    assert scripted_model({}, base) == {
        "PARLEY_LLM_BASE_URL": "http://127.0.0.1:3000/scripted-model/v1",
        "PARLEY_LLM_MODEL": "scripted",
    }
    assert scripted_model({"PARLEY_LLM_BASE_URL": "http://127.0.0.1:11434/v1"}, base) == {}
