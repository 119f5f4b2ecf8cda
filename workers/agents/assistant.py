"""`assistant`: a language model that can ask you questions and file local tickets.

The model decides what it still needs to know and asks with `ask_user`. The run parks until
someone answers. It then replays without calling the model again for turns it already had. Its
one local tool, `create_ticket`, writes to the `ticket` agent's tracker. The model is configured
with PARLEY_LLM_BASE_URL and PARLEY_LLM_MODEL. PARLEY_LLM_API_KEY is added if the server needs
one.
"""

from __future__ import annotations

from typing import Any

from workers import AgentRun, agent
from workers.agents.ticket import COMPONENTS, SEVERITIES
from workers.agents.tracker import create_ticket, tickets_path
from workers.llm import Tool, llm_config_from_env, run_loop

SYSTEM_PROMPT = """\
You are Parley's assistant, working for one person in their team's chat.
You can file tickets in the team's tracker with the create_ticket tool.
A ticket needs a title, a description, a severity and the affected components.
Ask the person with ask_user for anything you cannot tell from their message, in one call \
with concrete options where you can; do not ask for what they already told you.
When you are done, reply with one or two sentences saying what you did, including the ticket id."""

_SEVERITY_HELP = "; ".join(f"{o.value} = {o.label} ({o.description})" for o in SEVERITIES)

CREATE_TICKET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 200, "description": "A one-line summary."},
        "description": {
            "type": "string",
            "minLength": 1,
            "maxLength": 5000,
            "description": "What happened, what was expected, and how to reproduce it.",
        },
        "severity": {"type": "string", "enum": [o.value for o in SEVERITIES], "description": _SEVERITY_HELP},
        "components": {
            "type": "array",
            "items": {"type": "string", "enum": COMPONENTS},
            "minItems": 1,
            "uniqueItems": True,
            "description": "The parts of the product affected.",
        },
    },
    "required": ["title", "description", "severity", "components"],
    "additionalProperties": False,
}


def ticket_tool(run: AgentRun) -> Tool:
    """`create_ticket` for this run, filing in the tracker under the run's data directory."""

    def create(title: str, description: str, severity: str, components: list[str]) -> dict[str, Any]:
        fields = {
            "title": title.strip(),
            "reporter": run.started_by,
            "run_id": run.run_id,
            "description": description,
            "severity": severity,
            "components": components,
            "source": "assistant",
        }
        created = create_ticket(tickets_path(run.data_dir), fields)
        return {"id": created["id"], "title": created["title"]}

    return Tool(
        name="create_ticket",
        description="File a ticket in the team's tracker and return its id. Call it once per ticket.",
        parameters=CREATE_TICKET_SCHEMA,
        fn=create,
    )


@agent(
    "assistant",
    description="Ask a language model for help; it asks you what it needs and can file tickets",
    streams=True,
)
def assistant(run: AgentRun, text: str) -> str:
    config = llm_config_from_env()  # raises LLMNotConfigured, an AgentError: the run fails without retrying
    reply = run_loop(
        run,
        config,
        system=SYSTEM_PROMPT,
        user_text=text.strip() or "Hello",
        tools=[ticket_tool(run)],
        ask_reason="The assistant needs a few details",
    )
    return reply or "The assistant finished without a reply."
