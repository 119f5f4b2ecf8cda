"""A certificate for `localhost`, made by `openssl`, so the bench can reach its Web API stand-in over TLS.

Slack's Web API is HTTPS: a client that opens a connection per call pays a TLS handshake per
call, which plain HTTP on loopback never shows. The clients trust the certificate through
`SSL_CERT_FILE` (the stand-in's processes) or a context made from it (`webapi_cpu`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def localhost_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for `localhost` and its key, written into `directory`: (cert, key)."""
    cert, key = directory / "localhost.pem", directory / "localhost.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"),
            *("-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"),
            *("-addext", "subjectAltName=DNS:localhost"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
