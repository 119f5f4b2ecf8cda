"""`parley receipts keygen|verify` and `parley audit export|verify`: signed receipts, offline checks.

Each check prints one line: `ok: ...` (exit 0) or `bad: ...` (exit 1). Some failures are a
verdict, never a traceback. These are an unparseable receipt, a wrong key, an unknown key id and
a broken chain.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from parley.settings import Settings, parse_duration
from workers.exceptions import ConfigError
from workers.receipts import KeyRing, ReceiptError, Signer
from workers.receipts.keys import public_pem
from workers.receipts.verify import statement_of, verify_log, verify_text
from workers.store.receipts import ReceiptBook
from workers.store.records import HistoryEntry

DEFAULT_KEY_FILE = "receipt-key.pem"


def add_parsers(sub: Any) -> None:
    receipts = sub.add_parser("receipts", help="signed decision receipts: make a key, verify a receipt")
    rsub = receipts.add_subparsers(dest="receipts_command")
    keygen = rsub.add_parser("keygen", help="make an Ed25519 signing key (PEM) for PARLEY_RECEIPT_KEY")
    keygen.add_argument("--out", default=DEFAULT_KEY_FILE, help=f"where to write it (default: {DEFAULT_KEY_FILE})")
    verify = rsub.add_parser("verify", help="verify one receipt offline: signature, key id, digests")
    verify.add_argument("file", help="the receipt: as GET /api/v1/questions/{id}/receipt gives it, or its envelope")
    verify.add_argument("--keys", action="append", default=None, help="PEM file(s) of the public keys to trust")
    receipts.set_defaults(receipts_commands=list(rsub.choices))

    audit = sub.add_parser("audit", help="the audit log: every receipt, chained per workspace")
    asub = audit.add_subparsers(dest="audit_command")
    export = asub.add_parser("export", help="write the chains of receipts as JSON lines, oldest first")
    export.add_argument("--team", default=None, help="one workspace's chain only")
    export.add_argument("--since", default=None, help="receipts closed since: an ISO date or time, or 30d, 12h")
    averify = asub.add_parser("verify", help="check an exported audit log; names the first bad line")
    averify.add_argument("file")
    averify.add_argument("--keys", action="append", default=None, help="PEM file(s) of the public keys to trust")
    audit.set_defaults(audit_commands=list(asub.choices))


def refusal(args: argparse.Namespace) -> str | None:
    """A `receipts` or `audit` command line naming no action, as one line."""
    for group in ("receipts", "audit"):
        if args.command == group and getattr(args, f"{group}_command") is None:
            names = ", ".join(getattr(args, f"{group}_commands"))
            return f"parley {group}: name a command: {names} (see parley {group} --help)"
    return None


def keyring(settings: Settings, files: list[str] | None) -> KeyRing:
    """`--keys` files when given, else this deployment's keys (`PARLEY_RECEIPT_KEY`, `PARLEY_RECEIPT_KEYS`)."""
    if files:
        return KeyRing.from_files([Path(f) for f in files])
    ring = KeyRing()
    pem = settings.receipt_key_pem()
    if pem is not None:
        ring.add(Signer.from_pem(pem).public)
    trusted = settings.receipt_trusted_pem()
    if trusted is not None:
        ring.merge(KeyRing.from_pem_text(trusted))
    if not ring:
        raise ReceiptError("no keys to verify with: pass --keys KEYS.pem, or set PARLEY_RECEIPT_KEY")
    return ring


def keygen(out: str) -> int:
    path = Path(out)
    if path.exists():
        print(f"parley receipts keygen: {path} exists; choose another --out", file=sys.stderr)
        return 2
    signer = Signer.generate()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(signer.private_pem())
    public = path.with_name(path.name.removesuffix(".pem") + ".pub.pem")
    public.write_text(public_pem(signer.public))
    print(f"key {signer.keyid} written to {path} (private, keep it safe); its public key to {public}", file=sys.stderr)
    print(f"export PARLEY_RECEIPT_KEY={path.resolve()}")
    return 0


def _read(file: str) -> bytes:
    try:
        return sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise ReceiptError(f"cannot read {file}: {exc.strerror}") from None


def verify_receipt(settings: Settings, file: str, keys: list[str] | None) -> int:
    ring = keyring(settings, keys)
    text = _read(file)
    try:
        wrapped = json.loads(text)
    except ValueError:
        wrapped = None
    many = wrapped.get("receipts") if isinstance(wrapped, dict) else None
    if isinstance(wrapped, dict) and "receipts" in wrapped and not (isinstance(many, list) and many):
        raise ReceiptError("no receipts in the file: `receipts` is empty or not a list")
    lines = [json.dumps(r) for r in many] if isinstance(many, list) else [text.decode(errors="replace")]
    for line in lines:
        checked = verify_text(line, ring)
        p = checked.predicate
        who = (p.get("who") or {}).get("user", "?")
        question = (p.get("question") or {}).get("id", "?")
        print(f"ok: receipt {checked.digest[:16]} of question {question}: {p.get('outcome')} by {who}")
    return 0


def since_of(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return datetime.now(UTC).timestamp() - parse_duration(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--since: {text!r} is neither a date (2026-01-31) nor a duration (30d, 12h)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def export(settings: Settings, team: str | None, since: str | None) -> int:
    """Write the chains to stdout; what went wrong, and chains a failover set back, to stderr."""
    from parley.bootstrap import connect_redis
    from workers.receipts.export import export_lines
    from workers.store.receipt_replicas import ReceiptUnconfirmed, rewind_line
    from workers.store.receipts import ReceiptBook
    from workers.store.replication import Replication

    book = ReceiptBook(connect_redis(settings), replication=Replication(settings.parley_redis_min_replicas))
    count = 0
    try:
        for line in export_lines(book, team, since_of(since)):
            sys.stdout.write(line + "\n")
            count += 1
    except ReceiptUnconfirmed as exc:
        print(f"parley audit export: {exc}; export again in a moment", file=sys.stderr)
        return 1
    for note in book.rewinds():
        if team is None or note.get("workspace") == team:
            print(f"parley audit export: {rewind_line(note)}", file=sys.stderr)
    print(f"{count} receipts exported", file=sys.stderr)
    return 0


def receipts_command(settings: Settings, args: argparse.Namespace) -> int:
    try:
        if args.command == "receipts" and args.receipts_command == "keygen":
            return keygen(args.out)
        if args.command == "receipts":
            return verify_receipt(settings, args.file, args.keys)
        if args.audit_command == "export":
            return export(settings, args.team, args.since)
        count = verify_log(_read(args.file).decode(errors="replace").splitlines(), keyring(settings, args.keys))
        print(f"ok: {count} receipts verified, every chain intact")
        return 0
    except ReceiptError as exc:
        print(f"bad: {exc}")
        return 1


def receipt_lines(book: ReceiptBook, history: list[HistoryEntry]) -> list[str]:
    """`parley runs show`'s lines about the receipts of the run's closed questions, by digest."""
    ids = list(dict.fromkeys(str(h.detail.get("interrupt_id")) for h in history if h.detail.get("interrupt_id")))
    lines = []
    for iid in ids:
        receipt = book.get(iid)
        if receipt is not None:
            outcome = statement_of(receipt.envelope).get("predicate", {}).get("outcome", "?")
            where = f"{receipt.workspace} #{receipt.sequence}"
            lines.append(f"  question {iid}: {outcome}  sha256:{receipt.digest}  ({where})")
        elif book.pending(iid):
            lines.append(f"  question {iid}: receipt not written yet (a worker writes it)")
    return ["\nreceipts:", *lines] if lines else []
