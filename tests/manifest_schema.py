"""Slack's app manifest schema, for the tests that check a manifest against it.

The schema (slackapi/manifest-schema `manifest.schema.1.0.0.json`) is not shipped with
Parley: it is found through PARLEY_MANIFEST_SCHEMA, else beside the checkout, else in the
CI workspace. A test without it, or without `jsonschema`, is skipped, saying why.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCHEMA_NAME = "shared/slack/manifest.schema.1.0.0.json"


def schema_path() -> Path:
    """PARLEY_MANIFEST_SCHEMA, else Slack's schema beside the checkout, else in the CI workspace."""
    override = os.environ.get("PARLEY_MANIFEST_SCHEMA")
    if override:
        return Path(override)
    candidates = [REPO.parent / SCHEMA_NAME, Path("/work") / SCHEMA_NAME]
    return next((c for c in candidates if c.is_file()), candidates[0])


def schema_errors(manifest: Any) -> list[str]:
    """Where `manifest` breaks Slack's schema, one `path: message` each; skips the test without the schema."""
    jsonschema = pytest.importorskip("jsonschema")
    path = schema_path()
    if not path.is_file():
        pytest.skip(f"Slack's manifest schema not found at {path}")
    schema = json.loads(path.read_text())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(manifest), key=lambda e: list(e.path))
    return [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors]
