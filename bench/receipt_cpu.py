"""`python bench/receipt_cpu.py [--closes N] [--rounds R] [--db D]`: what a signed receipt costs, in-process.

Seeded paused questions are closed one after another through `RunStore.close`, the step an
accepted answer takes. The baseline is the close alone. Against it, the same close followed
by `ReceiptBook.write`: the statement built, RFC 8785 canonical JSON, an Ed25519 signature
and the MULTI that stores the receipt and moves its workspace's chain. The receipt's half is
the worker's, never the ack's. Wall time and this process's CPU per close are reported per
round, the two sides alternating. Redis: `REDIS_URL` on the database `--db` or the URL
names, else the embedded Redis's 14; it is flushed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.redis_db import bench_redis_url, connect, flush
from bench.seed import seed_paused
from workers.interaction import Answer, Item, ItemType, Request
from workers.receipts import Signer
from workers.store.receipt_replicas import ChainHeads
from workers.store.receipts import ReceiptBook
from workers.store.records import CloseMode
from workers.store.runs import RunStore

REQUEST = Request(
    reason="Deploy api v1.4.2 to prod-eu?",
    items=[
        Item(id="ok", text="Go ahead?", type=ItemType.SELECT, options=["yes", "no"]),
        Item(id="note", text="Note", type=ItemType.FREE_TEXT, required=False),
    ],
)
ANSWERS = [Answer(id="ok", choice="yes"), Answer(id="note", free_text="after the backup")]


def one_side(store: RunStore, book: ReceiptBook | None, n: int) -> tuple[float, float]:
    """Close `n` fresh questions (and write each receipt, with `book`); ms of wall and of CPU per close."""
    flush(store.redis)
    if book is not None:
        book.heads = ChainHeads()  # a flushed Redis starts a new history here, not a loss to report
    seeded = seed_paused(store, n, REQUEST, agent="bench", user_for=lambda i: "U0BENCH")
    questions = [store.interrupt(s.iid) for s in seeded]
    wall, cpu = time.perf_counter(), time.process_time()
    for i, question in enumerate(questions):
        assert question is not None
        store.close(question, CloseMode.ANSWER, "U0BENCH", ANSWERS, f"token-{i}")
        if book is not None and book.write(question.id) is None:
            raise RuntimeError("no receipt was written")
    return (time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n


def main() -> int:
    p = argparse.ArgumentParser(prog="python bench/receipt_cpu.py", description=__doc__.splitlines()[0])
    p.add_argument("--closes", type=int, default=500)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--db", type=int, default=None)
    args = p.parse_args()
    client = connect(bench_redis_url(db=args.db))
    store = RunStore(client)
    book = ReceiptBook(client, Signer.generate())
    bare: list[tuple[float, float]] = []
    signed: list[tuple[float, float]] = []
    one_side(store, book, 50)  # warm both paths: scripts loaded, imports done
    for _ in range(args.rounds):
        bare.append(one_side(store, None, args.closes))
        signed.append(one_side(store, book, args.closes))
    flush(client)
    for name, rows in (("close alone", bare), ("close + receipt", signed)):
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(f"{name:16} wall {statistics.median(walls):.3f} ms/close  cpu {statistics.median(cpus):.3f} ms/close")
    extra_wall = statistics.median(w for w, _ in signed) - statistics.median(w for w, _ in bare)
    extra_cpu = statistics.median(c for _, c in signed) - statistics.median(c for _, c in bare)
    print(f"a receipt adds   wall {extra_wall:.3f} ms  cpu {extra_cpu:.3f} ms per close (on the worker)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
