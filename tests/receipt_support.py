"""Helpers for the receipts' tests: keys on disk, the CLI's verdicts, and the documented snippet."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from workers.receipts import KeyRing, Signer
from workers.receipts.keys import public_pem
from workers.receipts.verify import verify_envelope, verify_text

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "receipts.md"


def key_files(tmp: Path, name: str = "receipt") -> tuple[Signer, Path, Path]:
    """A new signing key written as PEM, and its public key beside it."""
    signer = Signer.generate()
    private, public = tmp / f"{name}.pem", tmp / f"{name}.pub.pem"
    private.write_bytes(signer.private_pem())
    public.write_text(public_pem(signer.public))
    return signer, private, public


def ring(*signers: Signer) -> KeyRing:
    return KeyRing([s.public for s in signers])


def predicate(line: dict[str, Any], keys: KeyRing) -> dict[str, Any]:
    """The verified predicate of a receipt as the API gives it."""
    return verify_envelope(line["envelope"], keys, line["digest"]["sha256"]).predicate


def cli(*argv: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`parley ARGV...` in a subprocess, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "parley.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        input=stdin,
        cwd=ROOT,
    )


def snippet() -> str:
    """The plain-Python verification snippet of docs/receipts.md (its first ```python block)."""
    found = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert found, "docs/receipts.md has no python snippet"
    return found.group(1)


def run_snippet(receipt: Path, public_key: Path) -> subprocess.CompletedProcess[str]:
    """Run the documented snippet on a receipt file and a public key file, with `cryptography` alone."""
    return subprocess.run(
        [sys.executable, "-I", "-c", snippet(), str(receipt), str(public_key)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def verified(
    surfaces: dict[str, dict[str, Any]], public_key: Path, keys: KeyRing, path: Path
) -> dict[str, list[dict[str, Any]]]:
    """Each surface's receipt(s) checked by `parley receipts verify` and the documented snippet; the predicates.

    All go in one file, in the shape the API gives an `ask_each` question (`receipts`, a list),
    so one run of each checks every copy: a line each, in order.
    """
    lines = [(name, r) for name, body in surfaces.items() for r in body.get("receipts", [body])]
    write(path, {"receipts": [r for _, r in lines]})
    done = cli("receipts", "verify", str(path), "--keys", str(public_key))
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert [out.split()[2] for out in done.stdout.splitlines()] == [r["digest"]["sha256"][:16] for _, r in lines]
    snippet = run_snippet(path, public_key)
    assert snippet.returncode == 0, snippet.stderr
    assert [out.startswith("verified: ") for out in snippet.stdout.splitlines()] == [True] * len(lines)
    found: dict[str, list[dict[str, Any]]] = {}
    for name, r in lines:
        found.setdefault(name, []).append(verify_text(json.dumps(r), keys).predicate)
    return found
