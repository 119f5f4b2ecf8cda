"""`Problem`: every API error's body, as RFC 9457 `application/problem+json`.

It lives apart from the API's other bodies (`models`), which it shares nothing with but the
OpenAPI document.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from workers.interaction import ContextChange


class ErrorItem(BaseModel):
    """One problem in a body: where it is and what is wrong, as pydantic words it."""

    model_config = ConfigDict(extra="forbid")

    loc: list[str | int]
    msg: str
    type: str


class Problem(BaseModel):
    """An error, as RFC 9457 `application/problem+json`."""

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[ErrorItem] | None = None
    changes: list[ContextChange] | None = None
