"""The Slack credentials the bench's servers share, and requests signed the way Slack signs them.

The signing secret is made up per bench run: the servers the bench starts get it in their
environment, and its requests carry Slack's v0 signature under it.
"""

from __future__ import annotations

import secrets
import time

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = secrets.token_hex(16)
BOT_TOKEN = "xoxb-bench-0000"


def signed_headers(body: bytes, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """Slack's v0 signature, made by slack_sdk's own signer."""
    ts = str(int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature,
    }
