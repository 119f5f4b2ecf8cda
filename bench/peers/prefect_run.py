"""`python -m bench.peers.prefect_run pause|serve`: the peer's processes, started by `bench.m_peers`.

- `pause --tag T --poll P --count C` runs `prefect_flows.pause_flow` in this process
  (a flow run without a deployment, as a script would), pausing C times;
- `serve` runs `prefect_flows.suspend_flow.serve(name="bench")`: a runner that polls
  the server every PREFECT_RUNNER_POLL_FREQUENCY seconds and starts each scheduled
  run of the deployment in a new process.

The flows live in `bench.peers.prefect_flows`, not here, so the runner's child
processes import them by that module's name.
"""

from __future__ import annotations

import argparse

from bench.peers.prefect_server import DEPLOYMENT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.peers.prefect_run")
    sub = p.add_subparsers(dest="mode", required=True)
    pause = sub.add_parser("pause")
    pause.add_argument("--tag", required=True)
    pause.add_argument("--poll", type=float, required=True)
    pause.add_argument("--count", type=int, default=1)
    sub.add_parser("serve")
    args = p.parse_args(argv)

    from bench.peers import prefect_flows

    if args.mode == "pause":
        prefect_flows.pause_flow(tag=args.tag, count=args.count, poll=args.poll)
    else:
        prefect_flows.suspend_flow.serve(name=DEPLOYMENT, pause_on_shutdown=False, print_starting_message=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
