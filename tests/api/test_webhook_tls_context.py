"""Webhook attempts share one TLS context per set of trusted authorities, made once."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.questions import webhooks

pytestmark = pytest.mark.unit


def test_attempts_share_one_context_until_the_trusted_authorities_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = webhooks.tls_context()
    assert webhooks.tls_context() is first  # not made again (loading every authority) for each attempt
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    other = webhooks.tls_context()
    assert other is not first and webhooks.tls_context() is other
    monkeypatch.delenv("SSL_CERT_DIR")
    assert webhooks.tls_context() is first
