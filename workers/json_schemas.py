"""jsonschema validators matching `pattern` and `patternProperties` with RE2, in linear time.

jsonschema matches these keywords with Python's `re`, which backtracks. A schema from someone
else could then stall the process, like one with `(a|a)*b` on forty a's. Such schemas are a
tool's arguments, or an upstream's input schema. Every pattern here goes through
`workers.interaction.patterns` instead. A schema whose patterns RE2 cannot compile is refused
when the validator is made. The refusal names the pattern's place.

A `$ref` is followed only within the schema or to JSON Schema's own metaschemas. Left to
itself, jsonschema fetches any other URL it names, with no timeout. A caller's schema could
then make Parley GET an address inside its network, or hang on one.

Within `step_budget`, checking an instance may take only so many keyword steps. `$ref`s can
share subschemas, so a small schema can take exponential time: twenty `anyOf`s of two refs
to the next cost about a million steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for
from jsonschema_specifications import REGISTRY as METASCHEMAS

from workers.exceptions import ParleyError
from workers.interaction.patterns import problem, search

_STEPS: ContextVar[list[int] | None] = ContextVar("parley_schema_steps", default=None)
"""The keyword steps left to the check under way in this context; None: unbounded."""


class TooManySteps(ParleyError, ValueError):
    """Checking an instance took more keyword steps than its `step_budget`."""


@contextmanager
def step_budget(steps: int) -> Iterator[None]:
    """Bound the checks made inside, in this context, to `steps` keyword steps in all."""
    token = _STEPS.set([steps])
    try:
        yield
    finally:
        _STEPS.reset(token)


def _step() -> None:
    """Take one step of the budget in force, if any."""
    left = _STEPS.get()
    if left is not None:
        left[0] -= 1
        if left[0] < 0:
            raise TooManySteps("the schema takes too many steps to check")


def _counted(keyword: Callable[..., Any]) -> Callable[..., Any]:
    """`keyword`'s function, taking one step of the budget each time it is applied."""

    def apply(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _step()
        return keyword(validator, value, instance, schema)

    return apply


def _counted_boolean(checker: Any, instance: Any) -> bool:
    """jsonschema's "boolean" type check, taking a step.

    jsonschema's walk for `unevaluatedProperties` and `unevaluatedItems` follows `$ref`s without
    applying keywords. Each of its calls starts with this check, so the budget bounds it too.
    """
    _step()
    return isinstance(instance, bool)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, given: dict[str, Any], instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in given.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """jsonschema's own, with the properties a `patternProperties` pattern names found by RE2."""
    if not validator.is_type(instance, "object"):
        return
    named, patterns = schema.get("properties", {}), list(schema.get("patternProperties", {}))
    extras = sorted(k for k in instance if k not in named and not any(search(p, k) for p in patterns))
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, extras))} unexpected)")


def schema_pattern_problems(schema: Any, where: str = "") -> list[str]:
    """Each pattern in `schema` RE2 cannot compile, by place.

    It also lists each use jsonschema would match with `re`.
    """
    found: list[str] = []
    if isinstance(schema, list):
        for i, sub in enumerate(schema):
            found += schema_pattern_problems(sub, f"{where}/{i}")
    if not isinstance(schema, dict):
        return found
    if isinstance(schema.get("pattern"), str) and (why := problem(schema["pattern"])):
        found.append(f"{where or '/'}: pattern {schema['pattern']!r}: {why}")
    given = schema.get("patternProperties")
    if isinstance(given, dict):
        found += [f"{where or '/'}: patternProperties {p!r}: {why}" for p in given if (why := problem(p))]
    if "unevaluatedProperties" in schema and given:
        found.append(f"{where or '/'}: unevaluatedProperties beside patternProperties is not supported")
    for key, sub in schema.items():
        if key not in ("pattern", "const", "enum", "default", "examples") and isinstance(sub, dict | list):
            found += schema_pattern_problems(sub, f"{where}/{key}")
    return found


def linear_validator(schema: dict[str, Any]) -> Validator:
    """A validator for `schema` matching patterns with RE2.

    The draft is 2020-12 unless the schema says otherwise. `ValueError` lists the places whose
    patterns RE2 cannot compile. jsonschema's `SchemaError` says the schema itself is invalid.
    """
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    if problems := schema_pattern_problems(schema):
        raise ValueError("; ".join(problems))
    keywords = {
        **cls.VALIDATORS,
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    counted = {name: _counted(keyword) for name, keyword in keywords.items()}
    linear = extend(cls, counted, type_checker=cls.TYPE_CHECKER.redefine("boolean", _counted_boolean))
    return linear(schema, registry=METASCHEMAS)  # a registry that retrieves nothing: see above
