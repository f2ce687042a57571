"""`python -m batsim_double`: the double behind a ZeroMQ REQ socket, like Batsim.

Accepts Batsim's CLI subset; unknown flags only warn so that scripts written for the
real binary run unchanged.  Like Batsim it blocks forever if the decision process
never answers (unless the debug flag --max-wait is given).
"""

from __future__ import annotations

import argparse
import os
import sys

import zmq

from .double import BatsimDouble


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="batsim", description="Batsim 4.2.1 test double")
    ap.add_argument("-p", "--platform", required=True)
    ap.add_argument("-w", "--workload", action="append", default=[])
    ap.add_argument("-e", "--export", default="out")
    ap.add_argument("-s", "--socket-endpoint", default="tcp://localhost:28000")
    ap.add_argument("-m", "--master-host", default="master_host")
    ap.add_argument("--enable-compute-sharing", action="store_true")
    ap.add_argument("--forward-profiles-on-submission", action="store_true")
    ap.add_argument("--enable-dynamic-jobs", action="store_true")
    ap.add_argument("--acknowledge-dynamic-jobs", action="store_true")
    ap.add_argument("--enable-profile-reuse", action="store_true")
    ap.add_argument("--events", default=None)
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("-v", "--verbosity", default="information")
    ap.add_argument("--max-wait", type=float, default=None,
                    help="debug only: give up (exit 124) after this many seconds without a reply")
    args, unknown = ap.parse_known_args(argv)
    for flag in unknown:
        print(f"batsim double: warning: ignoring unsupported option '{flag}'", file=sys.stderr)
    return args


def _level(args: argparse.Namespace) -> int:
    if args.quiet:
        return 30
    v = str(args.verbosity).lower()
    return {"quiet": 30, "network-only": 20, "information": 20, "debug": 10}.get(v, 20)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    double = BatsimDouble(args.platform, args.workload, compute_sharing=args.enable_compute_sharing,
                          forward_profiles=args.forward_profiles_on_submission,
                          dynamic_jobs=args.enable_dynamic_jobs,
                          ack_dynamic_jobs=args.acknowledge_dynamic_jobs,
                          profile_reuse=args.enable_profile_reuse, events_path=args.events,
                          export_prefix=args.export, master_host=args.master_host, log_stream=sys.stderr,
                          log_level=_level(args))
    text = double.start()
    if text is None:
        return double.exit_code or 0
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(args.socket_endpoint)
    timeout_ms = int(args.max_wait * 1000) if args.max_wait else None
    try:
        while text is not None:
            sock.send(text.encode("utf-8"))
            if timeout_ms is not None and not sock.poll(timeout_ms):
                print(f"batsim double: no reply within {args.max_wait} s, giving up", file=sys.stderr)
                return 124
            raw = sock.recv().decode("utf-8")
            text = double.on_reply(raw)
    finally:
        sock.close()
        ctx.term()
    sys.stderr.flush()
    return double.exit_code if double.exit_code is not None else 0


def run() -> None:
    code = main()
    sys.stderr.flush()
    os._exit(code)
