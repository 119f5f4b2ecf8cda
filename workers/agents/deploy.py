"""`deploy`: asks for an approval, then records the deployment in the local deploy log."""

from __future__ import annotations

import fcntl
import json
import time
from pathlib import Path
from typing import Any

from workers import agent
from workers.interaction import Item, ItemType, Option, Request


def approval_request(target: str, attempt: int) -> Request:
    again = "" if attempt == 1 else "\nA rejection needs a reason; please give one or approve."
    return Request(
        reason=f"Approve deployment of {target}?{again}",
        items=[
            Item(
                id="decision",
                text="Decision",
                type=ItemType.SELECT,
                options=[Option(value="approve", label="Approve"), Option(value="reject", label="Reject")],
            ),
            Item(id="reason", text="Reason (required when rejecting)", type=ItemType.FREE_TEXT, required=False),
        ],
    )


def record_deploy(path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(json.dumps({**entry, "at": time.time()}) + "\n")
    return entry


@agent("deploy", description="Ask for approval, then record a deployment: `/parley deploy api v1.4.2`")
def deploy(run: Any, text: str) -> str:
    target = text.strip() or "the current build"
    attempt = 0
    while True:  # the runtime fails the run on the fourth ask of one key
        attempt += 1
        answers = run.ask(approval_request(target, attempt), key="approval")
        if answers["decision"] == "approve" or (answers.get("reason") or "").strip():
            break
        run.say("A rejection needs a reason; asking again.")
    entry = {"target": target, "decision": answers["decision"], "reason": answers.get("reason"), "run_id": run.run_id}
    run.step("record-deploy", lambda: record_deploy(run.data_dir / "deployments.jsonl", entry))
    if answers["decision"] == "approve":
        return f"Deployment of {target} approved and recorded."
    return f"Deployment of {target} rejected: {answers['reason']}"
