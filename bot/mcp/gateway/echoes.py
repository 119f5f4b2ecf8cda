"""The redacted values of calls in flight, kept from what their upstreams ask people.

While a call runs, its upstream may send an elicitation echoing a redacted argument. On a
handshake-era connection, it carries no link to its call. So each upstream's elicitations are
scrubbed of the redacted values of every call in flight there. This happens before anyone sees
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import mcp_types as types

from bot.mcp.gateway.upstreams import Elicit
from bot.mcp.scrub import Scrubber


class InFlight:
    """The scrubbers of the calls running now, by upstream."""

    def __init__(self) -> None:
        self._calls: dict[str, list[Scrubber]] = {}

    @contextlib.contextmanager
    def calling(self, upstream: str, scrubber: Scrubber) -> Iterator[None]:
        """Within this block, `upstream`'s elicitations are scrubbed with `scrubber` too."""
        calls = self._calls.setdefault(upstream, [])
        calls.append(scrubber)
        try:
            yield
        finally:
            calls.remove(scrubber)

    def scrubber(self, upstream: str) -> Scrubber:
        return Scrubber.joined(self._calls.get(upstream, []))

    def guarding(self, elicit: Elicit) -> Elicit:
        """`elicit`, given each elicitation without its upstream's calls' redacted values."""

        async def guarded(upstream: str, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
            scrubber = self.scrubber(upstream)
            if scrubber:
                dumped = params.model_dump(mode="json", by_alias=True, exclude_none=True)
                params = type(params).model_validate(scrubber.value(dumped))
            return await elicit(upstream, params)

        return guarded
