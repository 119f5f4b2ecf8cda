"""`deploy`: asks for an approval of exactly what it will deploy, then records the deployment.

`/parley deploy api v1.4.2 to production` asks to approve `{service, version, target}`,
bound to the answer as its context. Without a version (`/parley deploy api to staging`)
the service's current release is read from `releases/<service>` in the data directory,
live on every replay rather than in a `run.step`: when a newer release lands before the
approval, the approval is void and the question is asked again showing the new version.
"""

from __future__ import annotations

import fcntl
import json
import re
import time
from pathlib import Path
from typing import Any

from workers import AgentRun, agent
from workers.interaction import Item, ItemType, Option, Request

DEFAULT_TARGET = "production"
UNKNOWN_VERSION = "current build"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def deploy_facts(text: str, data_dir: Path) -> dict[str, str]:
    """What a deploy request names: `service [version] [to target]`, the version read live when not given."""
    words = text.split()
    target = DEFAULT_TARGET
    if len(words) >= 2 and words[-2].lower() == "to":
        target, words = words[-1], words[:-2]
    service = words[0] if words else "the service"
    version = " ".join(words[1:]) or current_release(data_dir, service) or UNKNOWN_VERSION
    return {"service": service, "version": version, "target": target}


def current_release(data_dir: Path, service: str) -> str | None:
    """The version in `releases/<service>` (written by a release pipeline), or None."""
    if not _NAME.fullmatch(service):
        return None
    path = data_dir / "releases" / service
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def describe(facts: dict[str, str]) -> str:
    return f"{facts['service']} {facts['version']} to {facts['target']}"


def approval_request(facts: dict[str, str], attempt: int) -> Request:
    again = "" if attempt == 1 else "\nA rejection needs a reason; please give one or approve."
    return Request(
        reason=f"Approve deployment of {describe(facts)}?{again}",
        items=[
            Item(
                id="decision",
                text="Decision",
                type=ItemType.SELECT,
                options=[Option(value="approve", label="Approve"), Option(value="reject", label="Reject")],
            ),
            # Optional to Slack, which shows "Reason (optional)": an approval needs none, a
            # rejection without one is asked again.
            Item(
                id="reason",
                text="Reason",
                type=ItemType.FREE_TEXT,
                required=False,
                placeholder="Needed if you reject",
            ),
        ],
    )


def record_deploy(path: Path, entry: dict[str, Any]) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(json.dumps({**entry, "at": time.time()}) + "\n")
    return entry


@agent(
    "deploy",
    description="Ask for approval, then record a deployment: `/parley deploy api v1.4.2 to production`",
    usage="<service> [version] [to <target>]",
)
def deploy(run: AgentRun, text: str) -> str:
    facts = deploy_facts(text, run.data_dir)  # live on every replay: the approval is bound to these
    attempt = 0
    while True:  # the runtime fails the run on the fourth ask of one key
        attempt += 1
        answers = run.ask(approval_request(facts, attempt), key="approval", context=facts)
        if answers["decision"] == "approve" or str(answers.get("reason") or "").strip():
            break
        run.say("A rejection needs a reason; asking again.")
    if run.context_changed("approval"):
        run.say(f"The facts changed after an earlier answer; this one was given on {describe(facts)}.")
    entry = {**facts, "decision": answers["decision"], "reason": answers.get("reason"), "run_id": run.run_id}
    run.step("record-deploy", lambda: record_deploy(run.data_dir / "deployments.jsonl", entry))
    if answers["decision"] == "approve":
        return f"Deployment of {describe(facts)} approved and recorded."
    return f"Deployment of {describe(facts)} rejected: {answers['reason']}"
