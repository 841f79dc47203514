"""SIGTERM under a keep-alive load: how many requests already sent are answered, reset or dropped.

Starts ``easyfirst serve`` on 127.0.0.1 (a free port), puts ``--clients`` keep-alive clients on it (each
sends ``POST /tag`` one after the other on one connection, never reconnecting: tests/serving.py
keep_alive_load), sends SIGTERM ``--after`` seconds in, and prints per run the requests answered, those
whose answer said ``Connection: close``, those reset (ECONNRESET/EPIPE) and those closed unanswered, the
exit status and the seconds from the signal to the exit (docs/studies/serve-load.md, "Draining on SIGTERM, measured")::

    python benchmarks/analyses/serve_drain.py --workers 1 2 --repeat 5
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from serving import Server, keep_alive_load  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--after", type=float, default=1.0, help="seconds of load before SIGTERM")
    args = parser.parse_args()
    totals = {"answered": 0, "closed": 0, "reset": 0, "unanswered": 0, "other": 0}
    for workers in args.workers:
        for run in range(1, args.repeat + 1):
            with Server("--workers", str(workers), "--no-access-log") as served:
                signalled = []

                def stop(served=served, signalled=signalled) -> None:
                    signalled.append(time.monotonic())
                    served.process.send_signal(signal.SIGTERM)

                counts = keep_alive_load(served.port, args.clients, stop, args.after)
                code, _ = served.stop()
                took = time.monotonic() - signalled[0]
            for key in totals:
                totals[key] += counts[key]
            print(
                f"workers {workers} run {run}: {counts['answered']} answered ({counts['closed']} with "
                f"Connection: close), {counts['reset']} reset, {counts['unanswered']} closed unanswered, "
                f"exit {code} {took:.2f} s after SIGTERM",
                flush=True,
            )
    print(f"all runs: {totals}")


if __name__ == "__main__":
    main()
