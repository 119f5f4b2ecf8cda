"""Old names of renamed types, importable for a while with a DeprecationWarning.

A module lists its old names with the new ones. Its `__getattr__` calls `renamed`.
"""

from __future__ import annotations

import warnings
from typing import Any


def renamed(module: str, name: str, old_names: dict[str, str], namespace: dict[str, Any]) -> Any:
    """The type old name `name` of `module` now names, with a DeprecationWarning.

    Any other missing name is an `AttributeError`, as without this hook.
    """
    new = old_names.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} is deprecated: use {module}.{new}", DeprecationWarning, stacklevel=3)
    return namespace[new]
