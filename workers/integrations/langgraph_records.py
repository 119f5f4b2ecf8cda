"""A graph's output as its step records it, read back strictly on every replay.

The output is kept as JSON where it is JSON. Otherwise it is kept as the checkpointer's
serializer writes it, as for messages or models. That is msgpack, whose extension values name a
Python callable to rebuild an object. The record lives in Redis. So reading it back must not
call whatever a record names. Every name is checked first. Only two kinds pass: types LangGraph
deems safe (`SAFE_MSGPACK_TYPES`), and those the serializer allows by name. A record naming
anything else fails the run, before anything is built.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde import _msgpack as lg_msgpack
from langgraph.checkpoint.serde import jsonplus

from workers.exceptions import AgentError

__all__ = ["RecordRefused", "decoded", "recorded"]

NAMED = {
    jsonplus.EXT_CONSTRUCTOR_SINGLE_ARG,
    jsonplus.EXT_CONSTRUCTOR_POS_ARGS,
    jsonplus.EXT_CONSTRUCTOR_KW_ARGS,
    jsonplus.EXT_PYDANTIC_V1,
    jsonplus.EXT_PYDANTIC_V2,
}
"""Extension codes whose payload is `(module, name, args, ...)`: a callable to construct with."""


class RecordRefused(AgentError):
    """A recorded graph output naming a callable not allowed, so not decoded."""


def recorded(saver: BaseCheckpointSaver[Any], value: Any) -> dict[str, Any]:
    """`value` as a step records it: plain JSON, or msgpack in base64.

    The msgpack is the serializer's.
    """
    try:
        json.dumps(value)
        return {"json": value}
    except (TypeError, ValueError):
        kind, data = saver.serde.dumps_typed(value)
        return {"serde": [kind, base64.b64encode(data).decode()]}


def decoded(saver: BaseCheckpointSaver[Any], outcome: dict[str, Any]) -> Any:
    """The value `outcome` records.

    `RecordRefused` for one naming anything not allowed.
    """
    if "json" in outcome:
        return outcome["json"]
    try:
        kind, text = outcome["serde"]
        data = base64.b64decode(text, validate=True)
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise RecordRefused(f"the graph's recorded output is malformed: {exc}") from exc
    if kind == "null":
        return None
    if kind != "msgpack":
        raise RecordRefused(f"the graph's recorded output is of kind {kind!r}; only msgpack is read back")
    allowed, refusals = _allowed(saver), list[str]()
    try:
        ormsgpack.unpackb(data, ext_hook=_checker(allowed, refusals), option=ormsgpack.OPT_NON_STR_KEYS)
    except (ormsgpack.MsgpackDecodeError, ValueError, TypeError, IndexError) as exc:
        raise RecordRefused(refusals[0] if refusals else f"the graph's recorded output does not decode: {exc}") from exc
    strict = jsonplus.JsonPlusSerializer(allowed_msgpack_modules=allowed or None)
    return strict.loads_typed(("msgpack", data))


def _allowed(saver: BaseCheckpointSaver[Any]) -> set[tuple[str, ...]]:
    """The types a record may name: LangGraph's safe ones, and the serializer's listed ones."""
    listed = getattr(saver.serde, "_allowed_msgpack_modules", None)
    return set(lg_msgpack.SAFE_MSGPACK_TYPES) | (set(listed) if isinstance(listed, set) else set())


def _checker(allowed: set[tuple[str, ...]], refusals: list[str]) -> Any:
    """An extension hook that builds nothing, only checking every name.

    It notes in `refusals` why a name is refused.
    """

    def check(code: int, data: bytes) -> None:
        inner = ormsgpack.unpackb(data, ext_hook=check, option=ormsgpack.OPT_NON_STR_KEYS)
        if code in (jsonplus.EXT_DELTA_SNAPSHOT, jsonplus.EXT_NUMPY_ARRAY):
            return None  # a value, or an array's bytes: nothing is called by name
        if code == jsonplus.EXT_METHOD_SINGLE_ARG and _names(inner, (0, 1, 3)):
            if (inner[0], inner[1], inner[3]) in lg_msgpack.SAFE_MSGPACK_METHODS:
                return None
            refusals.append(f"the graph's recorded output calls {inner[0]}.{inner[1]}.{inner[3]}, which is not allowed")
        elif code in NAMED and _names(inner, (0, 1)):
            if (inner[0], inner[1]) in allowed:
                return None
            refusals.append(
                f"the graph's recorded output names {inner[0]}.{inner[1]}, which is not an allowed type; "
                "a type of your own is allowed by naming it in the checkpointer's serializer "
                "(JsonPlusSerializer(allowed_msgpack_modules=[...]))"
            )
        else:
            refusals.append(f"the graph's recorded output holds an extension value Parley does not read (code {code})")
        raise RecordRefused(refusals[-1])

    return check


def _names(inner: Any, at: tuple[int, ...]) -> bool:
    """Whether `inner` is a list with a text name at each position in `at`."""
    return isinstance(inner, list) and len(inner) > max(at) and all(isinstance(inner[n], str) for n in at)
