"""`ticket`: files a bug in the local tracker after asking a person for details."""

from __future__ import annotations

from workers import AgentRun, agent
from workers.agents.tracker import create_ticket, tickets_path
from workers.interaction import Item, ItemType, Option, Request

SEVERITIES = [
    Option(value="sev1", label="Critical", description="Outage or data loss"),
    Option(value="sev2", label="High", description="Major feature broken"),
    Option(value="sev3", label="Medium", description="Degraded, with a workaround"),
    Option(value="sev4", label="Low", description="Cosmetic"),
]
COMPONENTS = ["Login", "API", "Web app", "Mobile app", "Billing", "Notifications"]


def details_request(title: str) -> Request:
    return Request(
        reason=f"I'm filing a ticket for: {title}\nA few details first.",
        items=[
            Item(
                id="description",
                text="Describe the bug",
                type=ItemType.FREE_TEXT,
                multiline=True,
                placeholder="What happened, what you expected, steps to reproduce",
            ),
            Item(
                id="affected",
                text="Who is affected?",
                type=ItemType.SELECT,
                options=["All users", "Some users", "One customer", "Internal only"],
                default="All users",
            ),
            Item(id="severity", text="Severity", type=ItemType.SELECT, options=SEVERITIES),
            Item(id="components", text="Components", type=ItemType.MULTI_SELECT, options=COMPONENTS),
            Item(id="due", text="Due date", type=ItemType.DATE, required=False),
        ],
    )


@agent(
    "ticket",
    description="File a ticket in the local tracker: `/parley ticket Login fails on Safari`",
    usage="<what is wrong>",
)
def ticket(run: AgentRun, text: str) -> str:
    title = text.strip() or "Untitled ticket"
    answers = run.ask(details_request(title), key="details")
    fields = {"title": title, "reporter": run.started_by, "run_id": run.run_id, **answers}
    created = run.step("create-ticket", lambda: create_ticket(tickets_path(run.data_dir), fields))
    severity = next(o.label for o in SEVERITIES if o.value == answers["severity"])
    components = answers["components"]
    due = f", due {answers['due']}" if answers.get("due") else ""
    return (
        f"Created {created['id']}: {title}. Severity {severity}, affects {answers['affected']}, "
        f"components {', '.join(components if isinstance(components, list) else [])}{due}."
    )
