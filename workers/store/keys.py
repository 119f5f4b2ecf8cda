"""Every Redis key Parley uses, built in one place from one prefix.

Listing always goes through the sorted-set indexes below; nothing on a request
path scans the keyspace.
"""

from __future__ import annotations

PREFIX = "parley:"


def run(run_id: str) -> str:
    """Hash: the run record (status, epoch, conversation, pending interrupt, ...)."""
    return f"{PREFIX}run:{run_id}"


def journal(run_id: str) -> str:
    """Hash: recorded results by replay key (`step:<k>`, `ask:<k>`, `say:<n>`)."""
    return f"{PREFIX}run:{run_id}:journal"


def history(run_id: str) -> str:
    """List: JSON entries of everything that happened to the run, oldest first."""
    return f"{PREFIX}run:{run_id}:history"


def secrets(run_id: str) -> str:
    """Hash: sealed secret answers by interrupt id (Fernet tokens); deleted when the run ends."""
    return f"{PREFIX}run:{run_id}:secrets"


def interrupt(interrupt_id: str) -> str:
    """Hash: one question put to people (request, assignees, state, answers)."""
    return f"{PREFIX}interrupt:{interrupt_id}"


def draft(interrupt_id: str) -> str:
    """String: JSON of the items a person answered in the terminal before stopping; expires with the question."""
    return f"{PREFIX}interrupt:{interrupt_id}:draft"


def group(group_id: str) -> str:
    """Hash: questions asked at once (`ask_all`, `ask_any`, `ask_each`): members, how many answers resume the run."""
    return f"{PREFIX}group:{group_id}"


def status_index(status: str) -> str:
    """Sorted set: run ids in `status`, scored by last update time."""
    return f"{PREFIX}idx:status:{status}"


def waiting_index(user: str) -> str:
    """Sorted set: interrupt ids waiting on `user`, scored by when they were asked."""
    return f"{PREFIX}idx:waiting:{user}"


def all_runs_index() -> str:
    """Sorted set: every run id, scored by creation time."""
    return f"{PREFIX}idx:runs"


def leases_index() -> str:
    """Sorted set: running run ids scored by when their worker's lease lapses."""
    return f"{PREFIX}idx:leases"


def expiry_index() -> str:
    """Sorted set: open interrupt ids scored by when they expire."""
    return f"{PREFIX}idx:expiry"


def remind_index() -> str:
    """Sorted set: open interrupt ids scored by when their assignees get a reminder."""
    return f"{PREFIX}idx:remind"


def escalate_index() -> str:
    """Sorted set: interrupt ids scored by when they are escalated if still unanswered."""
    return f"{PREFIX}idx:escalate"


def accepted_index() -> str:
    """Sorted set: run ids queued by an accepted answer or a retry, awaiting a worker."""
    return f"{PREFIX}idx:accepted"


def thread(channel: str, thread_ts: str) -> str:
    """String: the run whose conversation is this thread (for answers typed as replies).

    Keyed by channel and thread alone: a Slack channel id names one conversation whichever
    team's envelope delivers its events (a shared channel's events may come under another
    organisation's team id), so the team plays no part in finding the thread.
    """
    return f"{PREFIX}thread:{channel}:{thread_ts}"


def seen_event(event_id: str) -> str:
    """String with a TTL: an event delivery already handled (Slack retries deliveries)."""
    return f"{PREFIX}seen:{event_id}"


def install_bot(enterprise: str, team: str) -> str:
    """String: JSON of the latest bot installation of a workspace (`team` is `none` for an org-wide install)."""
    return f"{PREFIX}install:{enterprise}:{team}:bot"


def install_installer(enterprise: str, team: str, user: str | None = None) -> str:
    """String: JSON of the latest installation of a workspace, or of the latest one `user` made."""
    return f"{PREFIX}install:{enterprise}:{team}:installer" + (f":{user}" if user else "")


def install_installers(enterprise: str, team: str) -> str:
    """Set: the per-user installation keys of a workspace, so they can all be deleted."""
    return f"{PREFIX}install:{enterprise}:{team}:installers"


def oauth_state(nonce: str) -> str:
    """String with a TTL: the nonce of an OAuth `state` consumed by an install's redirect (used once), kept
    until the state would have expired."""
    return f"{PREFIX}oauth-state:{nonce}"


# ---- the HTTP API's questions, tokens and webhooks (workers/store/questions.py) ----------
def closed_channel() -> str:
    """Pub/sub channel: the id of every question that closes (answered, expired, cancelled), to wake waiters."""
    return f"{PREFIX}closed"


def api_tokens() -> str:
    """Hash: token name → sha256 of the token (the token itself is never stored)."""
    return f"{PREFIX}api:tokens"


def api_token(token_hash: str) -> str:
    """Hash: one API token by the sha256 of its value (name, scopes, webhook secret, created_at)."""
    return f"{PREFIX}api:token:{token_hash}"


def api_question(question_id: str) -> str:
    """Hash: what the API keeps about a question beyond its run (token, channel, callback, metadata, webhook)."""
    return f"{PREFIX}api:question:{question_id}"


def api_secrets(question_id: str) -> str:
    """String: the asker's sealed copy of an API question's secret answers, then `revealed` once read."""
    return f"{PREFIX}api:question:{question_id}:secrets"


def api_questions(token_name: str) -> str:
    """Sorted set: the question ids asked under a token name before questions had owners (read, never added to)."""
    return f"{PREFIX}api:questions:{token_name}"


def api_owned(owner: str) -> str:
    """Sorted set: the question ids one owner (a token's `owner` id, `mcp:<origin>`) asked, by creation time."""
    return f"{PREFIX}api:owned:{owner}"


def api_all_questions() -> str:
    """Sorted set: every API question id, scored by creation time (admin listing)."""
    return f"{PREFIX}api:questions"


def api_idempotency(owner: str, key_digest: str) -> str:
    """String with a TTL: the question an owner's `Idempotency-Key` created, with the digest of its body."""
    return f"{PREFIX}api:idem:{owner}:{key_digest}"


def api_rate(bucket: str) -> str:
    """List with a TTL: when one bucket (a token's owner id, `auth-failed:<address>`) spent, newest first."""
    return f"{PREFIX}api:rates:{bucket}"


# ---- how fast runs are started from Slack (workers/store/starts.py) ------------------------
def starts_user(team: str, user: str) -> str:
    """Hash with a TTL: the token bucket of run starts by one person of a workspace (tokens, at)."""
    return f"{PREFIX}starts:user:{team}:{user}"


def starts_channel(team: str, channel: str) -> str:
    """Hash with a TTL: the token bucket of run starts in one channel of a workspace (tokens, at)."""
    return f"{PREFIX}starts:channel:{team}:{channel}"


def open_runs(team: str, user: str) -> str:
    """Sorted set: the runs a person of a workspace started that may still be open, scored by start
    time; ended ones are dropped at the person's next start, so it holds at most the cap."""
    return f"{PREFIX}open:{team}:{user}"


def webhook_in_flight(kind: str, name: str) -> str:
    """Sorted set: the webhook attempts in flight for one token or destination host (`kind`), by
    job id, scored by when the attempt's deadline has surely passed."""
    return f"{PREFIX}webhook:inflight:{kind}:{name}"


def webhook_circuit(host: str) -> str:
    """Hash: a destination host's circuit breaker (`timeouts` in a row, `open_until`); expires a day after."""
    return f"{PREFIX}webhook:circuit:{host}"


def webhook_circuits_open() -> str:
    """Sorted set: hosts whose circuit is open, scored by when it half-opens (for metrics)."""
    return f"{PREFIX}webhook:circuits-open"


# ---- MCP over streamable HTTP (bot/mcp/events.py) -------------------------------------------
def mcp_events(session: str, stream: str) -> str:
    """Stream with a TTL: the SSE events of one MCP session's response stream (a request's, by its id), as
    JSON-RPC JSON (empty for a priming event), kept so a client that reconnects with `Last-Event-ID` gets them."""
    return f"{PREFIX}mcp:events:{session}:{stream}"


# ---- the MCP approval gateway (workers/store/gateway.py) -----------------------------------
def gateway_forward(question_id: str) -> str:
    """String with a TTL: what became of an asked tool call (`forwarded`, `client gone`): set once, so a call
    is forwarded upstream at most once, whatever restarts or duplicates."""
    return f"{PREFIX}gateway:forward:{question_id}"


def gateway_standing(session_digest: str, tool_digest: str) -> str:
    """String with a TTL: the run that granted a standing approval of one tool to one MCP session."""
    return f"{PREFIX}gateway:standing:{session_digest}:{tool_digest}"


def reply_proposal(proposal_id: str) -> str:
    """Hash: answers a model read from a thread reply, until the replier confirms them (with a TTL)."""
    return f"{PREFIX}proposal:{proposal_id}"


def away(team: str, user: str) -> str:
    """Hash: a person away until a time, and whom their questions go to meanwhile (expires then)."""
    return f"{PREFIX}away:{team}:{user}"


def away_index(team: str) -> str:
    """Sorted set: the people of a workspace who are away, scored by when they are back."""
    return f"{PREFIX}idx:away:{team}"


def surface_off(team: str, method: str) -> str:
    """String: Slack's refusal of an agent surface `method` in workspace `team`; expires in a day."""
    return f"{PREFIX}slack-surface-off:{team or '-'}:{method}"


def session_status(run_id: str) -> str:
    """String: the last status of the run's Slack agent session; expires with the longest question."""
    return f"{PREFIX}run:{run_id}:session"


def plan(run_id: str) -> str:
    """String: JSON of the run's live plan in Slack (its tasks, its message); expires like the session's."""
    return f"{PREFIX}run:{run_id}:plan"


# ---- signed decision receipts (workers/receipts/) ------------------------------------------
def receipts_pending() -> str:
    """Sorted set: closed question ids whose receipt is not written yet, scored by when they closed."""
    return f"{PREFIX}receipts:pending"


def receipt(interrupt_id: str) -> str:
    """Hash: a closed question's signed receipt (envelope, digest, workspace, sequence); outlives its run."""
    return f"{PREFIX}receipt:{interrupt_id}"


def receipt_chain(workspace: str) -> str:
    """Sorted set: a workspace's receipts (question ids) scored by their place in its chain."""
    return f"{PREFIX}receipts:chain:{workspace}"


def receipt_head(workspace: str) -> str:
    """Hash: the last receipt of a workspace's chain (digest, sequence, question id)."""
    return f"{PREFIX}receipts:head:{workspace}"


def receipt_workspaces() -> str:
    """Set: every workspace with a chain of receipts."""
    return f"{PREFIX}receipts:workspaces"


def receipt_keys() -> str:
    """Hash: key id -> PEM public key of every key that signed a receipt here."""
    return f"{PREFIX}receipts:keys"
