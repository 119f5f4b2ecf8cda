"""`REDIS_URL=rediss://...`: a run completes with the bot, the workers, RQ and the CLI all on a TLS-only Redis.

Debian's redis-server is built with TLS; the server here listens on a TLS port only (no
plain port), with a self-signed certificate for 127.0.0.1 made by `cryptography`, which the
URL names as its CA (`ssl_ca_certs`, one of redis-py's query options).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from redis_servers import DATA_PORTS, Server, free_port, tls_build
from slack_stack import PARLEY, SlackStack

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(not tls_build(), reason="needs a TLS build of redis-server, as Debian's (.ci/run installs it)"),
]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key; returns (certificate, key) paths."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "redis.crt", directory / "redis.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[str]:
    """A TLS-only redis-server; yields its `rediss://` URL."""
    cert, key = self_signed(tmp_path / "tls")
    port = free_port(DATA_PORTS)
    args = ["--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    args += ["--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert)]
    args += ["--tls-auth-clients", "no", "--dir", str(tmp_path / "tls")]
    ping = {"ssl": True, "ssl_ca_certs": str(cert)}
    server = Server("tls", port, args, tmp_path / "tls", ping_options=ping).start()
    try:
        yield f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={quote(str(cert))}&ssl_cert_reqs=required"
    finally:
        server.stop()


def test_a_run_completes_over_tls(tls_redis: str, tmp_path: Path) -> None:
    stack = SlackStack(tls_redis, tmp_path / "stack", workers=1).start()
    try:
        run = stack.start_run("s-form", json.dumps({"assignees": ["U0BOB"]}) + " tls")
        question = stack.question(run)
        resp, _ = stack.submit(run, question, {"Colour": "Blue"})
        assert resp.status_code == 200
        stack.wait_status(run, "succeeded")
        assert stack.redis is not None
        assert stack.redis.hget(f"parley:run:{run.run_id}", "result") == b"colour Blue, note -"
        shown = subprocess.run(
            [str(PARLEY), "runs", "show", run.run_id], env=stack.env(), capture_output=True, text=True
        )
        assert shown.returncode == 0 and "status succeeded" in shown.stdout, shown.stdout + shown.stderr
    finally:
        stack.stop()


def test_a_certificate_the_url_does_not_trust_is_refused(tls_redis: str, tmp_path: Path) -> None:
    """Without the CA, the server's self-signed certificate fails verification: TLS is really in use."""
    untrusted = tls_redis.split("?")[0] + "?ssl_cert_reqs=required"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "PARLEY_"))}
    env.update(REDIS_URL=untrusted, PARLEY_DATA_DIR=str(tmp_path / "data"))
    out = subprocess.run([str(PARLEY), "runs", "list"], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "REDIS_URL: cannot reach" in out.stderr and "certificate verify failed" in out.stderr, out.stderr
