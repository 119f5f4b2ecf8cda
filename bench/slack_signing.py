"""The Slack credentials the bench's servers share, and requests signed the way Slack signs them.

The signing secret is made up per bench run: the servers the bench starts get it in their
environment, and its requests carry Slack's v0 signature under it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SIGNING_SECRET = secrets.token_hex(16)
BOT_TOKEN = "xoxb-bench-0000"


def signed_headers(body: bytes, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """Slack's v0 signature: hex HMAC-SHA256 of "v0:{timestamp}:{raw body}" under the signing secret."""
    ts = str(int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": f"v0={digest}",
    }
