"""The `parley` command: every Parley process starts here and is wired here."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from parley import people_cmd, receipts_cmd, tokens_cmd
from parley import settings as settings_mod
from workers import logs
from workers.exceptions import ParleyError
from workers.logs import redacted


def _duration(text: str) -> float:
    """argparse type of `--older-than`, with `PARLEY_RETENTION`'s grammar.

    Bad values are refused in argparse's usual line.
    """
    try:
        return settings_mod.parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(reach: int = 0) -> Callable[[str], int]:
    """argparse type of `--port` for a command listening on PORT up to PORT+`reach`."""
    top = 65535 - reach

    def port(text: str) -> int:
        value = int(text) if text.strip().isdigit() else 0
        if not 1 <= value <= top:
            also = f"; it also listens on PORT+{reach}" if reach else ""
            raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 1 to {top}{also}")
        return value

    return port


def _metrics_options(command: argparse.ArgumentParser, help: str) -> None:
    command.add_argument("--metrics-port", type=_port(), default=None, metavar="N", help=help)
    command.add_argument("--metrics-host", default="127.0.0.1", help="address for --metrics-port (default: 127.0.0.1)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="parley", description="Agents that stop to ask people, and carry on.")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run an agent in this terminal, answering its questions here")
    run.add_argument("agent", nargs="?", help="the agent to start")
    run.add_argument("text", nargs="*", help="what the agent is to do: the rest of the line, quoted or not")
    run.add_argument(
        "--resume",
        metavar="RUN_ID",
        help="carry on a run of yours stopped with Ctrl-C: ask its open question again here, then go on",
    )

    worker = sub.add_parser("worker", help="run an RQ worker for Parley's queue")
    worker.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    worker.add_argument(
        "--worker-class",
        choices=["simple", "fork"],
        default="simple",
        help="simple: jobs in the worker process (default, fastest); fork: a child process per job (isolation)",
    )
    worker.add_argument("--name", default=None)
    _metrics_options(worker, "serve Prometheus metrics at http://127.0.0.1:N/metrics")

    serve = sub.add_parser("serve", help="serve the Slack app (HTTP, or Socket Mode)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port(), default=3000, help="HTTP port (default: 3000)")
    serve.add_argument("--workers", type=int, default=1, help="server processes")
    serve.add_argument("--socket-mode", action="store_true", help="connect over Socket Mode (SLACK_APP_TOKEN)")
    _metrics_options(
        serve, "serve Prometheus metrics on a listener of their own at port N (without it: /metrics on --port)"
    )

    mcp = sub.add_parser("mcp", help="serve Parley's MCP tools (ask_human, get_answer, ...) over stdio, for MCP hosts")
    mcp.add_argument(
        "--config", metavar="RULES.yml", default=None, help="the rules file of approve_tool_use: allow, deny or ask"
    )
    msub = mcp.add_subparsers(dest="mcp_command")
    gateway = msub.add_parser("gateway", help="serve other MCP servers' tools over stdio, each call approved by rules")
    gateway.add_argument("--config", required=True, metavar="gateway.yml", help="the rules file: upstreams and rules")
    gateway.add_argument("--flat", action="store_true", help="list tools unprefixed (exactly one upstream)")

    dev = sub.add_parser("dev", help="the whole product on this machine, with a Slack playground")
    dev.add_argument(
        "--port",
        type=_port(reach=2),
        default=3000,
        help="the playground's port (default: 3000); the Slack app listens on PORT+1, the worker's metrics on PORT+2",
    )

    sub.add_parser("up", help="Parley in your own Slack workspace: Redis, a worker and the Slack app over Socket Mode")
    slack = sub.add_parser("slack", help="connect Parley to your Slack workspace")
    ssub = slack.add_subparsers(dest="slack_command")
    setup = ssub.add_parser("setup", help="create the Slack app, check its tokens and save them in .env")
    stdin_note = "; - reads it from standard input, one token a line (a token typed here shows in ps)"
    setup.add_argument("--bot-token", metavar="xoxb-…|-", help="the app's bot token (or SLACK_BOT_TOKEN)" + stdin_note)
    setup.add_argument("--app-token", metavar="xapp-…|-", help="the app-level token (or SLACK_APP_TOKEN)" + stdin_note)
    setup.add_argument(
        "--config-token",
        metavar="xoxe-…|-",
        help="an app configuration token: create the app through Slack's API" + stdin_note,
    )
    slack.set_defaults(slack_commands=list(ssub.choices))

    runs = sub.add_parser("runs", help="inspect and manage runs")
    rsub = runs.add_subparsers(dest="runs_command")
    ls = rsub.add_parser("list", help="list runs, newest first")
    ls.add_argument("--status", default=None)
    ls.add_argument("--page", type=int, default=1)
    for name in ("show", "cancel", "retry"):
        rsub.add_parser(name, help=f"{name} one run").add_argument("run_id")
    purge = rsub.add_parser("purge", help="delete finished runs older than a duration, with everything they own")
    purge.add_argument(
        "--older-than", required=True, type=_duration, metavar="DURATION", help="30d, 12h, 15m, 90s or seconds"
    )
    purge.add_argument("--dry-run", action="store_true", help="list the runs it would delete, and delete nothing")
    runs.set_defaults(runs_commands=list(rsub.choices))  # to name them when none is given
    tokens_cmd.add_parser(sub)
    people_cmd.add_parser(sub)
    receipts_cmd.add_parsers(sub)
    return p


def _refusal(args: argparse.Namespace) -> str | None:
    """A command line argparse accepts but that names no action, as one line.

    None when it is whole.
    """
    if args.command == "slack" and args.slack_command is None:
        return f"parley slack: name a command: {', '.join(args.slack_commands)} (see parley slack --help)"
    if args.command == "tokens" and args.tokens_command is None:
        return f"parley tokens: name a command: {', '.join(args.tokens_commands)} (see parley tokens --help)"
    if args.command == "people" and args.people_command is None:
        return f"parley people: name a command: {', '.join(args.people_commands)} (see parley people --help)"
    if args.command == "runs" and args.runs_command is None:
        return f"parley runs: name a command: {', '.join(args.runs_commands)} (see parley runs --help)"
    if (found := receipts_cmd.refusal(args)) is not None:
        return found
    if args.command == "run" and args.agent is None and args.resume is None:
        return "parley run: name an agent to start a run (parley run AGENT TEXT), or --resume RUN_ID to carry one on"
    if args.command == "run" and args.agent is not None and args.resume is not None:
        return "parley run: name an agent to start a run, or --resume RUN_ID to carry one on, not both"
    return None


def _metrics_setup(args: argparse.Namespace) -> None:
    """Where this command keeps metrics, set before anything imports prometheus_client."""
    from parley.metrics_setup import prepare

    if args.command == "serve":
        serves = not args.socket_mode or args.metrics_port is not None
        prepare(serves_metrics=serves, several_processes=args.workers > 1 and not args.socket_mode)
    elif args.command == "worker":
        prepare(serves_metrics=args.metrics_port is not None, several_processes=args.worker_class == "fork")
    else:
        prepare(serves_metrics=False, several_processes=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (else the process's), returning the exit status."""
    try:
        code = _command(argv)
        sys.stdout.flush()  # here, where a reader gone is caught, not at exit
    except BrokenPipeError:  # the reader went (`parley runs list | head`): Python's documented idiom
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail again
        return 1
    return code


def _command(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    refusal = _refusal(args)
    if refusal:
        print(refusal, file=sys.stderr)
        return 2
    try:
        settings = settings_mod.load()
        _metrics_setup(args)
        logs.configure(
            settings.parley_log_level if args.command not in ("run", "slack") else "WARNING", settings.parley_log_format
        )
        if args.command == "run" and args.resume:
            from parley.resume import resume_in_terminal

            return resume_in_terminal(settings, args.resume)
        if args.command == "run":
            from parley.terminal import run_in_terminal

            return run_in_terminal(settings, args.agent, " ".join(args.text))
        if args.command == "worker":
            from parley.worker import run_worker

            return run_worker(
                settings,
                burst=args.burst,
                worker_class=args.worker_class,
                name=args.name,
                metrics=(args.metrics_host, args.metrics_port) if args.metrics_port else None,
            )
        if args.command == "serve":
            from parley.serve import serve

            return serve(
                settings,
                host=args.host,
                port=args.port,
                workers=args.workers,
                socket_mode=args.socket_mode,
                metrics=(args.metrics_host, args.metrics_port) if args.metrics_port else None,
            )
        if args.command == "mcp" and args.mcp_command == "gateway":
            from parley.gateway_cmd import run_gateway

            return run_gateway(settings, args.config, flat=args.flat)
        if args.command == "mcp":
            from parley.mcp_cmd import run_mcp

            return run_mcp(settings, config=args.config)
        if args.command == "dev":
            from parley.dev import run_dev

            return run_dev(settings, port=args.port)
        if args.command == "up":
            from parley.up import run_up

            return run_up(settings)
        if args.command == "slack":
            from parley.slack_setup import slack_setup

            return slack_setup(
                settings, bot_token=args.bot_token, app_token=args.app_token, config_token=args.config_token
            )
        if args.command == "tokens":
            return tokens_cmd.tokens_command(settings, args)
        if args.command == "people":
            return people_cmd.people_command(settings, args)
        if args.command in ("receipts", "audit"):
            return receipts_cmd.receipts_command(settings, args)
        from parley.runs_cmd import runs_command

        return runs_command(settings, args)
    except ParleyError as exc:
        print(f"parley: {redacted(str(exc))}", file=sys.stderr)
        if args.command == "mcp":  # the host reads stdio: tell it there too, as an MCP error
            from parley.mcp_cmd import refuse_on_stdio

            refuse_on_stdio(redacted(str(exc)))
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
