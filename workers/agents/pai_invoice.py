"""`pai_invoice`: a Pydantic AI agent sending an approved invoice, amount editable.

`/parley pai_invoice Invoice ACME Corp 1200 EUR for March consulting` has the model call
`send_invoice`. That tool needs approval. The approver sees the customer, amount, currency and
description. They may change the amount, and approve or reject. The model reads the reason.
Sending writes the invoice to `invoices/outbox.jsonl` in the data directory, once per tool call.

The agent runs on `workers.integrations.pydantic_ai`, with `assistant`'s model. It reads
PARLEY_LLM_BASE_URL, PARLEY_LLM_MODEL and, if needed, PARLEY_LLM_API_KEY when it runs. It is
offered only where the `pydantic-ai` extra is installed. The agent itself is built in
`pai_invoice_agent`, imported when it runs. So loading the agents stays cheap.
"""

from __future__ import annotations

import importlib.util

from workers import AgentRun, agent
from workers.agents.invoice_outbox import outbox_path as outbox_path
from workers.agents.invoice_outbox import read_outbox as read_outbox
from workers.agents.invoice_outbox import send as send
from workers.llm import llm_config_from_env


def pai_invoice(run: AgentRun, text: str) -> str:
    config = llm_config_from_env()  # raises LLMNotConfigured, an AgentError: the run fails without retrying
    from workers.agents.pai_invoice_agent import invoice_agent
    from workers.integrations.pydantic_ai import run_agent

    reply = run_agent(run, invoice_agent(config), text.strip() or "Hello", deps=run)
    return str(reply) or "The invoice agent finished without a reply."


DESCRIPTION = "Send an invoice with a Pydantic AI agent; a person approves it and may edit the amount"
if importlib.util.find_spec("pydantic_ai") is not None:
    agent("pai_invoice", description=DESCRIPTION)(pai_invoice)
