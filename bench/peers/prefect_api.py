"""The bench's calls to the Prefect server: create a run, wait until it is paused, resume it with an answer.

Resuming goes through Prefect's own `resume_flow_run(flow_run_id, run_input=...)`, the
call a Prefect user's Slack handler would make, so its client-side work is part of what
is timed (as Parley's is: the signed Submit POST). Imported only when the `peers` extra
is installed, after `PREFECT_API_URL` and `PREFECT_HOME` are set for this process.
"""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.flow_runs import resume_flow_run

ANSWER: dict[str, Any] = {"env": "production", "regions": ["eu-west-1"], "why": "Hotfix for the login outage"}
"""The same answer Parley's bench clicks give (`bench.seed.ANSWER_STATE`)."""


def wait_paused(flow_run_id: str | UUID, timeout: float) -> None:
    """Poll (every 10 ms) until the run is paused or suspended and its input form is saved.

    The flow saves its `RunInput` schema just after its state becomes PAUSED; until then
    the server refuses a resume with input ("Run input schema not found"), and no person
    could have seen the form, so an answer is only sent once the schema is there.
    """
    run = UUID(str(flow_run_id))
    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while True:
            state = client.read_flow_run(run).state
            if state is not None and state.is_paused():
                keyset = state.state_details.run_input_keyset or {}
                try:
                    if "schema" not in keyset or client.read_flow_run_input(run, keyset["schema"]):
                        return
                except Exception:  # 404 until the flow has saved it
                    pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"flow run {flow_run_id} not paused within {timeout:g} s (state {state})")
            time.sleep(0.01)


def resume(flow_run_id: str | UUID) -> None:
    resume_flow_run(UUID(str(flow_run_id)), run_input=ANSWER)


def deployment_id(name: str, timeout: float) -> UUID:
    """The id of deployment `name` (`flow/deployment`), once the runner has registered it."""
    deadline = time.monotonic() + timeout
    with get_client(sync_client=True) as client:
        while True:
            try:
                return client.read_deployment_by_name(name).id
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def create_run(deployment: UUID, parameters: dict[str, Any]) -> UUID:
    with get_client(sync_client=True) as client:
        return client.create_flow_run_from_deployment(deployment, parameters=parameters).id


def flow_run_states(ids: list[UUID]) -> dict[str, int]:
    """How many of these runs are in each state (by name): for error messages."""
    out: dict[str, int] = {}
    with get_client(sync_client=True) as client:
        for i in ids:
            state = client.read_flow_run(i).state
            name = state.name if state is not None else "none"
            out[name] = out.get(name, 0) + 1
    return out
