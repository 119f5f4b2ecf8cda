"""The Pydantic AI agent of `pai_invoice`.

It is apart, so loading the agents does not import Pydantic AI.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic_ai import Agent, DeferredToolRequests, RunContext

from workers import AgentRun
from workers.agents.invoice_outbox import send
from workers.integrations.pydantic_ai import EDITABLE, parley_model
from workers.llm import LLMConfig

INSTRUCTIONS = """\
You send invoices for the team. From the person's message, work out the customer, the amount, the \
currency (an ISO code such as EUR) and a one-line description, then call send_invoice once. A person \
approves each invoice and may change the amount, so report the amount the tool result states. When \
the call was rejected, say so and give the reason. Reply in one or two sentences."""


def invoice_agent(config: LLMConfig) -> Agent[AgentRun, str | DeferredToolRequests]:
    """The Pydantic AI agent, on the OpenAI-compatible model `config` names."""
    model = parley_model(config)
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
