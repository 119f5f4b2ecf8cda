"""`pai_invoice`: a Pydantic AI agent that sends an invoice once a person approved it, amount editable.

`/parley pai_invoice Invoice ACME Corp 1200 EUR for March consulting` has the model call
`send_invoice`, a tool that needs approval: the approver sees the customer, amount, currency and
description, may change the amount, and approves or rejects (the model reads the reason). Sending
writes the invoice to `invoices/outbox.jsonl` in the data directory, once per tool call. The agent
runs on `workers.integrations.pydantic_ai`, with the model of `assistant`: PARLEY_LLM_BASE_URL,
PARLEY_LLM_MODEL and (if the server needs one) PARLEY_LLM_API_KEY, read when the agent runs.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from workers import AgentRun, agent
from workers.integrations.pydantic_ai import EDITABLE, run_agent
from workers.llm import LLMConfig, llm_config_from_env

INSTRUCTIONS = """\
You send invoices for the team. From the person's message, work out the customer, the amount, the \
currency (an ISO code such as EUR) and a one-line description, then call send_invoice once. A person \
approves each invoice and may change the amount, so report the amount the tool result states. When \
the call was rejected, say so and give the reason. Reply in one or two sentences."""


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


def invoice_agent(config: LLMConfig) -> Agent[AgentRun, str | DeferredToolRequests]:
    """The Pydantic AI agent, on the OpenAI-compatible model `config` names."""
    key = config.api_key.get_secret_value() if config.api_key is not None else "none"
    provider = OpenAIProvider(base_url=config.base_url, api_key=key)
    model = OpenAIChatModel(config.model, provider=provider)
    invoices: Agent[AgentRun, str | DeferredToolRequests] = Agent(
        model, deps_type=AgentRun, output_type=[str, DeferredToolRequests], instructions=INSTRUCTIONS
    )

    @invoices.tool(requires_approval=True, metadata={EDITABLE: ["amount"]})
    def send_invoice(
        ctx: RunContext[AgentRun],
        customer: str,
        amount: Annotated[float, Field(gt=0)],
        currency: str,
        description: str,
    ) -> str:
        """Send an invoice to a customer.

        Args:
            customer: Who pays.
            amount: The amount due.
            currency: The ISO currency code, such as EUR.
            description: What the invoice is for, in one line.
        """
        run = ctx.deps
        fields = {"customer": customer, "amount": amount, "currency": currency, "description": description}
        invoice = send(run.data_dir, {**fields, "sent_by": run.started_by}, run.run_id, ctx.tool_call_id or customer)
        return f"Invoice {invoice['number']} sent to {customer}: {amount:.2f} {currency}."

    return invoices


@agent(
    "pai_invoice", description="Send an invoice with a Pydantic AI agent; a person approves it and may edit the amount"
)
def pai_invoice(run: AgentRun, text: str) -> str:
    config = llm_config_from_env()  # raises LLMNotConfigured, an AgentError: the run fails without retrying
    reply = run_agent(run, invoice_agent(config), text.strip() or "Hello", deps=run)
    return str(reply) or "The invoice agent finished without a reply."
