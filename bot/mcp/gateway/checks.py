"""What the gateway checks of a call before asking about it, and again before forwarding.

A call's arguments must meet the tool's current `inputSchema` (`workers.questions.tool_calls`).
So nobody is asked to approve a call the tool would refuse. And an edit cannot slip past it. A
tool is known by a digest of its whole definition when asked about. The upstream may change the
tool while the call waits. Then the approval was given for something else, and the call is not
forwarded. The caller calls again, and people are asked about the tool as it is.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import anyio.to_thread
import mcp_types as types

from bot.mcp.gateway.upstreams import Target, Upstreams
from workers.questions import tool_calls

CHANGED = "the tool changed while it waited for approval; call it again"
NOT_FORWARDED_DOWN = "nothing was forwarded: call it again once it is back"


def digest(tool: types.Tool) -> str:
    """A digest of all the upstream says of `tool`: name, description, schemas, annotations."""
    definition = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()


def arguments_refused(target: Target, arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not meet `target`'s input schema, or None."""
    return tool_calls.arguments_refused(target.full_name, dict(target.tool.input_schema), arguments)


async def arguments_refused_off_loop(target: Target, arguments: dict[str, Any]) -> str | None:
    """`arguments_refused` in a worker thread, so a costly schema never stalls the loop."""
    return await anyio.to_thread.run_sync(arguments_refused, target, arguments)


def fields_refused(target: Target, arguments: dict[str, Any]) -> list[str]:
    """The argument paths failing `target`'s schema, without values, so safe to record."""
    return tool_calls.fields_refused(dict(target.tool.input_schema), arguments)


def still_the_same(upstreams: Upstreams, target: Target) -> str | None:
    """Why `target` may not be forwarded as asked about.

    None when its upstream lists it unchanged.
    """
    now = upstreams.current(target)
    if now is None and (down := upstreams.unreachable(target.upstream)) is not None:
        return f"upstream {target.upstream!r} is unreachable ({down}); {NOT_FORWARDED_DOWN}"
    if now is None:
        return f"{target.full_name} is no longer listed by its upstream; nothing was forwarded"
    if digest(now) != digest(target.tool):
        return f"{target.full_name}: {CHANGED}"
    return None
