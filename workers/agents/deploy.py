"""`deploy`: asks to approve exactly what it will deploy, then records what was approved.

`/parley deploy api v1.4.2 to production` asks to approve `{service, version, target, replicas}`
with `run.approve`. `replicas=4` may be added. The approver may lower `replicas` before
approving. The agent deploys what was approved.

Without a version (`/parley deploy api to staging`), it reads the service's current release.
That is in `releases/<service>` in the data directory. It is read live on every replay, not in a
`run.step`. So if a newer release lands before the approval, the approval is void. It is asked
again, showing the new version.
"""

from __future__ import annotations

import fcntl
import json
import re
import time
from pathlib import Path
from typing import Any

from workers import AgentRun, agent
from workers.interaction import Decision

DEFAULT_TARGET = "production"
UNKNOWN_VERSION = "current build"
DEFAULT_REPLICAS = 3
MAX_REPLICAS = 50
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def deploy_facts(text: str, data_dir: Path) -> dict[str, Any]:
    """What `service [version] [to target] [replicas=N]` names.

    Without a version given, it is read live.
    """
    words = text.split()
    replicas = DEFAULT_REPLICAS
    for word in [w for w in words if w.lower().startswith("replicas=")]:
        words.remove(word)
        count = word.partition("=")[2]
        if count.isdigit() and 1 <= int(count) <= MAX_REPLICAS:
            replicas = int(count)
    target = DEFAULT_TARGET
    if len(words) >= 2 and words[-2].lower() == "to":
        target, words = words[-1], words[:-2]
    service = words[0] if words else "the service"
    version = " ".join(words[1:]) or current_release(data_dir, service) or UNKNOWN_VERSION
    return {"service": service, "version": version, "target": target, "replicas": replicas}


def current_release(data_dir: Path, service: str) -> str | None:
    """The version in `releases/<service>` (written by a release pipeline), or None."""
    if not _NAME.fullmatch(service):
        return None
    path = data_dir / "releases" / service
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def describe(facts: dict[str, Any]) -> str:
    return f"{facts['service']} {facts['version']} to {facts['target']}"


def replicas_schema(facts: dict[str, Any]) -> dict[str, Any]:
    """Only `replicas` is editable, and only down: from one to the proposal."""
    top = facts["replicas"]
    return {"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": top}}}


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
    decision: Decision = run.approve(
        f"Deploy {describe(facts)}", facts, schema=replicas_schema(facts), editable=["replicas"], key="approval"
    )
    if run.context_changed("approval"):
        run.say(f"The facts changed after an earlier answer; this one was given on {describe(facts)}.")
    approved = decision.args
    entry = {
        **approved,
        "decision": "approve" if decision.approved else "reject",
        "reason": decision.reason,
        "edited": [c[0] for c in decision.changes],
        "by": decision.by,
        "run_id": run.run_id,
    }
    run.step("record-deploy", lambda: record_deploy(run.data_dir / "deployments.jsonl", entry))
    if not decision.approved:
        why = f": {decision.reason}" if decision.reason else ""
        return f"Deployment of {describe(facts)} rejected{why}"
    edits = (
        f" (edited: {', '.join(f'{f} {old} → {new}' for f, old, new in decision.changes)})" if decision.edited else ""
    )
    return f"Deployment of {describe(approved)} with {approved['replicas']} replicas approved and recorded{edits}."
