"""Reading a workspace's chain of receipts: its receipts in order, and its newest kept.

A read never hides a deletion. Retention takes receipts from a chain's start, so only those
leave its index here. A receipt gone after one still kept stays in the index, and an export
shows the gap, which `parley audit verify` names.
"""

from __future__ import annotations

from collections.abc import Iterator

from redis import Redis
from redis.client import Pipeline

from workers.logs import Log
from workers.store import keys
from workers.store.receipt_records import Receipt
from workers.store.replies import as_text, reply, text_hash

log = Log("parley.receipts")


class ChainReader:
    """A Redis's receipt chains, reached as `ReceiptBook.chains`."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    def workspaces(self) -> list[str]:
        """Every workspace with a chain: those listed, and those whose chain index exists.

        An export must not lose a chain because its name left the list.
        """
        listed = {as_text(w) for w in reply(self.redis.smembers(keys.receipt_workspaces()))}
        prefix = keys.receipt_chain("")
        indexed = {as_text(k)[len(prefix) :] for k in self.redis.scan_iter(match=prefix + "*", count=1000)}
        return sorted(listed | indexed)

    def chain(self, workspace: str, batch: int = 500) -> Iterator[Receipt]:
        """A workspace's receipts in chain order.

        Ones past retention are gone from its start, and leave its index here. A receipt gone
        after one still kept is not retention's doing: it is skipped and its place kept, so the
        exported log shows the gap.
        """
        start, kept = 0, False
        while True:
            found = self._stored(reply(self.redis.zrange(keys.receipt_chain(workspace), start, start + batch - 1)))
            if not found:
                return
            for iid, data in found:
                if data:
                    kept = True
                    yield Receipt.from_hash(iid, text_hash(data))
                elif not kept:  # expired with retention: the chain starts after it now
                    self.redis.zrem(keys.receipt_chain(workspace), iid)
                    start -= 1
                else:
                    log.error("a receipt in the middle of its chain is gone", workspace=workspace, interrupt_id=iid)
            start += batch

    def newest_kept(self, workspace: str, batch: int = 100) -> Receipt | None:
        """The chain's newest receipt still stored, walking back from its end."""
        start = 0
        while True:
            found = self._stored(reply(self.redis.zrevrange(keys.receipt_chain(workspace), start, start + batch - 1)))
            if not found:
                return None
            for iid, data in found:
                if data:
                    return Receipt.from_hash(iid, text_hash(data))
            start += batch

    def _stored(self, members: list[bytes]) -> list[tuple[str, dict[bytes, bytes]]]:
        """Each chain member's id and its receipt's hash ({} once gone), in one round trip."""
        ids = [as_text(m) for m in members]
        pipe = self.redis.pipeline(transaction=False)
        for iid in ids:
            pipe.hgetall(keys.receipt(iid))
        return list(zip(ids, pipe.execute() if ids else [], strict=True))


def head_from_index(pipe: Pipeline, workspace: str) -> dict[str, str]:
    """The chain's head read from its index, when its head pointer is gone; {} for a new chain.

    The pointer is never expired, so it was deleted. Starting again at 1 would fork the chain:
    it goes on after the newest receipt the index holds, as long as that receipt is kept.
    """
    top = reply(pipe.zrevrange(keys.receipt_chain(workspace), 0, 0, withscores=True))
    if not top:
        return {}
    newest, place = as_text(top[0][0]), int(top[0][1])
    found = reply(pipe.hget(keys.receipt(newest), "digest"))
    log.error(
        "a receipt chain's head was gone; it goes on after the newest receipt its index holds",
        workspace=workspace,
        interrupt_id=newest,
        sequence=place,
        kept=found is not None,
    )
    return {"digest": as_text(found), "sequence": str(place)} if found is not None else {}
