"""Peers that `python -m bench --peers` measures Parley beside: Prefect's pause and suspend.

The peer is an optional extra (`pip install -e '.[peers]'`), so nothing here imports it:
`prefect_version` asks the installed distribution's metadata, and only the modules that
talk to a Prefect server (`prefect_api`, `prefect_flows`) import `prefect` itself.
"""

from __future__ import annotations

from importlib import metadata

INSTALL_HINT = "bench --peers: Prefect is not installed; get it with: pip install -e '.[peers]' (skipped)"


def prefect_version() -> str | None:
    """The installed Prefect's version, or None when the `peers` extra is not installed."""
    try:
        return metadata.version("prefect")
    except metadata.PackageNotFoundError:
        return None
