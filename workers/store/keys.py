"""Every Redis key Parley uses, built in one place from one prefix.

Listing always goes through the sorted-set indexes below. Nothing on a request path scans the
keyspace.
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
    """Hash: sealed secret answers (Fernet tokens) by interrupt id, deleted at run end."""
    return f"{PREFIX}run:{run_id}:secrets"


def interrupt(interrupt_id: str) -> str:
    """Hash: one question put to people (request, assignees, state, answers)."""
    return f"{PREFIX}interrupt:{interrupt_id}"


def draft(interrupt_id: str) -> str:
    """String: JSON of items answered in the terminal before stopping.

    It expires with the question.
    """
    return f"{PREFIX}interrupt:{interrupt_id}:draft"


def group(group_id: str) -> str:
    """Hash: questions asked at once, with members and how many answers resume the run.

    These come from `ask_all`, `ask_any` and `ask_each`.
    """
    return f"{PREFIX}group:{group_id}"


def status_index(status: str) -> str:
    """Sorted set: run ids in `status`, scored by last update time."""
    return f"{PREFIX}idx:status:{status}"


def waiting_index(user: str) -> str:
    """Sorted set: interrupt ids waiting on `user`, scored by asking time."""
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
    """Sorted set: open interrupt ids scored by their assignees' next reminder."""
    return f"{PREFIX}idx:remind"


def escalate_index() -> str:
    """Sorted set: interrupt ids scored by when they escalate if unanswered."""
    return f"{PREFIX}idx:escalate"


def temporal_watch_cursor() -> str:
    """How far the check for ended Temporal workflows got in the waiting runs (`signal_watch`)."""
    return f"{PREFIX}temporal:watch:cursor"


def temporal_watch_resting() -> str:
    """Set, with a TTL, while that check rests after Temporal failed it."""
    return f"{PREFIX}temporal:watch:resting"


def accepted_index() -> str:
    """Sorted set, no longer written: run ids once queued, awaiting a worker.

    The queued status index holds the same runs with the same scores. So the sweep reads that
    index, and no start, answer or claim writes this one. Purges still clear old entries.
    """
    return f"{PREFIX}idx:accepted"


def thread(channel: str, thread_ts: str) -> str:
    """String: the run whose conversation is this thread, for answers typed as replies.

    It is keyed by channel and thread alone. A Slack channel id names one conversation, whichever
    team's envelope delivers its events. A shared channel's events may come under another
    organisation's team id. So the team plays no part in finding the thread.
    """
    return f"{PREFIX}thread:{channel}:{thread_ts}"


def seen_event(event_id: str) -> str:
    """String with a TTL: an event delivery already handled (Slack retries deliveries)."""
    return f"{PREFIX}seen:{event_id}"


def install_bot(enterprise: str, team: str) -> str:
    """String: JSON of a workspace's latest bot installation.

    `team` is `none` for an org-wide install.
    """
    return f"{PREFIX}install:{enterprise}:{team}:bot"


def install_installer(enterprise: str, team: str, user: str | None = None) -> str:
    """String: JSON of a workspace's latest installation, or of `user`'s latest."""
    return f"{PREFIX}install:{enterprise}:{team}:installer" + (f":{user}" if user else "")


def install_installers(enterprise: str, team: str) -> str:
    """Set: a workspace's per-user installation keys, so all can be deleted."""
    return f"{PREFIX}install:{enterprise}:{team}:installers"


def oauth_state(nonce: str) -> str:
    """String with a TTL: the nonce of an OAuth `state` an install's redirect consumed.

    It is used once, and kept until the state would have expired.
    """
    return f"{PREFIX}oauth-state:{nonce}"


# ---- the HTTP API's questions, tokens and webhooks (workers/store/questions.py) ----------
def closed_channel() -> str:
    """Pub/sub channel: the id of every question that closes, to wake waiters.

    Closing means answered, expired or cancelled.
    """
    return f"{PREFIX}closed"


def api_tokens() -> str:
    """Hash: token name → the token's sha256, never the token itself."""
    return f"{PREFIX}api:tokens"


def api_token(token_hash: str) -> str:
    """Hash: one API token by its value's sha256.

    It holds the name, scopes, webhook secret and created_at.
    """
    return f"{PREFIX}api:token:{token_hash}"


def api_question(question_id: str) -> str:
    """Hash: what the API keeps about a question beyond its run.

    That is the token, channel, callback, metadata and webhook.
    """
    return f"{PREFIX}api:question:{question_id}"


def api_secrets(question_id: str) -> str:
    """String: the asker's sealed copy of an API question's secret answers.

    Once read, it becomes `revealed`.
    """
    return f"{PREFIX}api:question:{question_id}:secrets"


def api_questions(token_name: str) -> str:
    """Sorted set: question ids asked under a token name before owners existed.

    It is read, never added to.
    """
    return f"{PREFIX}api:questions:{token_name}"


def api_owned(owner: str) -> str:
    """Sorted set: the question ids one owner asked, by creation time.

    An owner is a token's `owner` id, or `mcp:<origin>`.
    """
    return f"{PREFIX}api:owned:{owner}"


def api_open(owner: str) -> str:
    """Set: the question ids an owner may still have open.

    Closed ones are dropped when the set reaches the owner's cap, so it holds about the cap at most.
    """
    return f"{PREFIX}api:open:{owner}"


def api_all_questions() -> str:
    """Sorted set: every API question id, scored by creation time (admin listing)."""
    return f"{PREFIX}api:questions"


def api_idempotency(owner: str, key_digest: str) -> str:
    """String with a TTL: the question an owner's `Idempotency-Key` created, and its body's digest.

    `key_digest` is the key's short digest, or its hex from before (`workers/store/idempotency.py`).
    """
    return f"{PREFIX}api:idem:{owner}:{key_digest}"


def api_rate(bucket: str) -> str:
    """List with a TTL: when one bucket spent, newest first.

    A bucket is a token's owner id, or `auth-failed:<address>`.
    """
    return f"{PREFIX}api:rates:{bucket}"


# ---- how fast runs are started from Slack (workers/store/starts.py) ------------------------
def starts_user(team: str, user: str) -> str:
    """Hash with a TTL: one person's token bucket of run starts in a workspace (tokens, at)."""
    return f"{PREFIX}starts:user:{team}:{user}"


def starts_channel(team: str, channel: str) -> str:
    """Hash with a TTL: one channel's token bucket of run starts in a workspace (tokens, at)."""
    return f"{PREFIX}starts:channel:{team}:{channel}"


def open_runs(team: str, user: str) -> str:
    """Sorted set: a person's maybe-open runs in a workspace, scored by start time.

    Ended ones are dropped at the person's next start, so it holds at most the cap.
    """
    return f"{PREFIX}open:{team}:{user}"


def webhook_in_flight(kind: str, name: str) -> str:
    """Sorted set: webhook attempts in flight for one token or host (`kind`), by job id.

    The score is when the attempt's deadline has surely passed.
    """
    return f"{PREFIX}webhook:inflight:{kind}:{name}"


def webhook_circuit(host: str) -> str:
    """Hash: a destination host's circuit breaker (`timeouts` in a row, `open_until`).

    It expires a day after.
    """
    return f"{PREFIX}webhook:circuit:{host}"


def webhook_circuits_open() -> str:
    """Sorted set: hosts with an open circuit, scored by half-open time, for metrics."""
    return f"{PREFIX}webhook:circuits-open"


# ---- MCP over streamable HTTP (bot/mcp/events.py) -------------------------------------------
def mcp_events(session: str, stream: str) -> str:
    """Stream with a TTL: the SSE events of one MCP session's response stream.

    A request's stream is keyed by its id. Events are JSON-RPC JSON, empty for a priming event. They
    are kept so a client reconnecting with `Last-Event-ID` gets them.
    """
    return f"{PREFIX}mcp:events:{session}:{stream}"


# ---- the MCP approval gateway (workers/store/gateway.py) -----------------------------------
def gateway_forward(question_id: str) -> str:
    """String with a TTL: what became of an asked tool call (`forwarded`, `client gone`).

    It is set once. So a call is forwarded upstream at most once, whatever restarts or duplicates.
    """
    return f"{PREFIX}gateway:forward:{question_id}"


def gateway_standing(session_digest: str, tool_digest: str) -> str:
    """String with a TTL: the run granting one MCP session a standing approval of one tool."""
    return f"{PREFIX}gateway:standing:{session_digest}:{tool_digest}"


def reply_proposal(proposal_id: str) -> str:
    """Hash with a TTL: answers a model read from a thread reply, until confirmed."""
    return f"{PREFIX}proposal:{proposal_id}"


def reply_readings(interrupt_id: str, user: str) -> str:
    """Counter with a TTL: how many of one person's replies to a question the model has read."""
    return f"{PREFIX}readings:{interrupt_id}:{user}"


def away(team: str, user: str) -> str:
    """Hash: a person away until a time, and their delegate meanwhile.

    It expires at that time.
    """
    return f"{PREFIX}away:{team}:{user}"


def away_index(team: str) -> str:
    """Sorted set: a workspace's absent people, scored by their return time."""
    return f"{PREFIX}idx:away:{team}"


def surface_off(team: str, method: str) -> str:
    """String: Slack's refusal of agent surface `method` in workspace `team`.

    It expires in a day.
    """
    return f"{PREFIX}slack-surface-off:{team or '-'}:{method}"


def session_status(run_id: str) -> str:
    """String: the last status of the run's Slack agent session.

    It expires with the longest question.
    """
    return f"{PREFIX}run:{run_id}:session"


def plan(run_id: str) -> str:
    """String: JSON of the run's live plan in Slack, its tasks and message.

    It expires like the session's.
    """
    return f"{PREFIX}run:{run_id}:plan"


# ---- signed decision receipts (workers/receipts/) ------------------------------------------
def receipts_pending() -> str:
    """Sorted set: closed question ids without a written receipt, scored by close time."""
    return f"{PREFIX}receipts:pending"


def receipt(interrupt_id: str) -> str:
    """Hash: a closed question's signed receipt, which outlives its run.

    It holds the envelope, digest, workspace and sequence.
    """
    return f"{PREFIX}receipt:{interrupt_id}"


def receipt_chain(workspace: str) -> str:
    """Sorted set: a workspace's receipts (question ids), scored by place in its chain."""
    return f"{PREFIX}receipts:chain:{workspace}"


def receipt_head(workspace: str) -> str:
    """Hash: the last receipt of a workspace's chain (digest, sequence, question id)."""
    return f"{PREFIX}receipts:head:{workspace}"


def receipt_workspaces() -> str:
    """Set: every workspace with a chain of receipts."""
    return f"{PREFIX}receipts:workspaces"


def receipt_keys() -> str:
    """Hash: key id -> PEM public key of each key that signed a receipt here."""
    return f"{PREFIX}receipts:keys"


def receipts_rewound() -> str:
    """List: JSON notes of chains found to have gone back (receipts lost with a failover), newest last."""
    return f"{PREFIX}receipts:rewound"


def signal_sending(question_id: str) -> str:
    """String with a TTL: the process sending an API question's Temporal signal now (`signal_leases`)."""
    return f"{PREFIX}api:question:{question_id}:sending"
