"""`parley tokens create|list|revoke`: the HTTP API's bearer tokens.

`create` prints the token and its webhook signing secret once. Only the token's sha256 is
stored. So a lost token is revoked and created again, never shown again. Its standard output is
only the two `export NAME=value` lines. So `eval "$(parley tokens create NAME)"` exports both to
the programs the shell starts. The prose goes to standard error. `--json` prints one JSON object
instead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from parley.bootstrap import connect_redis, token_store
from parley.settings import Settings
from workers.questions import tokens


def tokens_command(settings: Settings, args: argparse.Namespace) -> int:
    store = token_store(connect_redis(settings))
    if args.tokens_command == "create":
        if settings.oauth_mode and not args.team:
            print("parley tokens create: with many workspaces (OAuth mode), say which one: --team T…", file=sys.stderr)
            return 2
        scopes = args.scope or ["ask"]
        new = tokens.create(
            store,
            args.name,
            scopes,
            args.rate_limit,
            team=args.team or "",
            temporal=args.temporal,
            open_questions=args.open_questions,
        )
        if args.json:
            record = new.record
            shown = {"name": record.name, "scopes": record.scopes, "team": record.team or None}
            shown["temporal"] = record.temporal
            print(json.dumps({**shown, "token": new.token, "webhook_secret": new.webhook_secret}))
            return 0
        granted = f"; Temporal workflows: {', '.join(new.record.temporal)}" if new.record.temporal else ""
        print(
            f"token {new.record.name} (scopes: {', '.join(new.record.scopes)}{granted}); shown once, keep both safe:",
            file=sys.stderr,
        )
        print(f"export PARLEY_TOKEN={new.token}")
        print(f"export PARLEY_WEBHOOK_SECRET={new.webhook_secret}")
        return 0
    if args.tokens_command == "list":
        found = store.tokens()
        for t in found:
            created = dt.datetime.fromtimestamp(t.created_at).strftime("%Y-%m-%d %H:%M:%S")
            limit = f"  rate limit: {t.rate_limit}/window" if t.rate_limit else ""
            limit += f"  open questions: {t.open_questions}" if t.open_questions else ""
            team = f"  workspace: {t.team}" if t.team else ""
            temporal = f"  temporal: {','.join(t.temporal)}" if t.temporal else ""
            print(f"{t.name}  scopes: {','.join(t.scopes)}  created {created}{limit}{team}{temporal}")
        if not found:
            print("no tokens")
        return 0
    tokens.revoke(store, args.name)
    print(f"revoked {args.name}")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    toks = sub.add_parser("tokens", help="bearer tokens for the HTTP API")
    tsub = toks.add_subparsers(dest="tokens_command")
    create = tsub.add_parser("create", help="create a token; prints it and its webhook secret once")
    create.add_argument("name")
    create.add_argument("--scope", action="append", choices=["ask", "admin"], help="ask (default) and/or admin")
    create.add_argument(
        "--rate-limit", type=int, default=None, metavar="N", help="requests per window (default PARLEY_API_RATE_LIMIT)"
    )
    create.add_argument(
        "--open-questions",
        type=int,
        default=None,
        metavar="N",
        help="questions it may have open at once (default PARLEY_API_OPEN_QUESTIONS)",
    )
    create.add_argument(
        "--team", default=None, metavar="T…", help="the workspace its questions are asked in (needed with OAuth)"
    )
    create.add_argument(
        "--temporal",
        action="append",
        default=None,
        metavar="GLOB",
        help="a workflow-id glob (e.g. 'refund-*') in PARLEY_TEMPORAL_NAMESPACE whose workflows its questions may "
        "signal; repeat for more. None by default: naming any other workflow is refused (403)",
    )
    create.add_argument("--json", action="store_true", help="print one JSON object (name, scopes, token, secret)")
    tsub.add_parser("list", help="list tokens (names and scopes; never the tokens)")
    tsub.add_parser("revoke", help="revoke a token by name").add_argument("name")
    toks.set_defaults(tokens_commands=list(tsub.choices))
