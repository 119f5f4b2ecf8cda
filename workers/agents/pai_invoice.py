"""`pai_invoice`: a Pydantic AI agent that sends an invoice once a person approved it, amount editable.

`/parley pai_invoice Invoice ACME Corp 1200 EUR for March consulting` has the model call
`send_invoice`, a tool that needs approval: the approver sees the customer, amount, currency and
description, may change the amount, and approves or rejects (the model reads the reason). Sending
writes the invoice to `invoices/outbox.jsonl` in the data directory, once per tool call. The agent
runs on `workers.integrations.pydantic_ai`, with the model of `assistant`: PARLEY_LLM_BASE_URL,
PARLEY_LLM_MODEL and (if the server needs one) PARLEY_LLM_API_KEY, read when the agent runs.
It is offered only where the `pydantic-ai` extra is installed; the agent itself is built in
`pai_invoice_agent`, imported when it runs, so loading the agents stays cheap.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

from workers import AgentRun, agent
from workers.llm import llm_config_from_env


def outbox_path(data_dir: Path) -> Path:
    return data_dir / "invoices" / "outbox.jsonl"


def read_outbox(data_dir: Path) -> list[dict[str, Any]]:
    path = outbox_path(data_dir)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def send(data_dir: Path, fields: dict[str, Any], run_id: str, call_id: str) -> dict[str, Any]:
    """Write the invoice to the outbox and return it; a second send of one tool call returns the first."""
    path = outbox_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    number = "INV-" + hashlib.sha256(f"{run_id}/{call_id}".encode()).hexdigest()[:8].upper()
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        for line in fh:
            if line.strip() and (sent := json.loads(line))["number"] == number:
                return dict(sent)
        invoice = {"number": number, "run_id": run_id, "sent_at": time.time(), **fields}
        fh.write(json.dumps(invoice, ensure_ascii=False) + "\n")
        fh.flush()
    return invoice


def pai_invoice(run: AgentRun, text: str) -> str:
    config = llm_config_from_env()  # raises LLMNotConfigured, an AgentError: the run fails without retrying
    from workers.agents.pai_invoice_agent import invoice_agent
    from workers.integrations.pydantic_ai import run_agent

    reply = run_agent(run, invoice_agent(config), text.strip() or "Hello", deps=run)
    return str(reply) or "The invoice agent finished without a reply."


DESCRIPTION = "Send an invoice with a Pydantic AI agent; a person approves it and may edit the amount"
if importlib.util.find_spec("pydantic_ai") is not None:
    agent("pai_invoice", description=DESCRIPTION)(pai_invoice)
