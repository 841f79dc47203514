"""`easyfirst serve` at 10× the rate it can sustain: are the answered requests' latencies bounded by the
deadline, is every other request a 503, and does memory stay flat?

    python benchmarks/speed/serve_overload.py --json benchmarks/results/serve_overload-cpu-2core-shared.json

Three phases against one server (the bundled model, ``--workers`` processes, ``--max-queue`` and
``--deadline`` as given) on a free loopback port:

1. warm-up and the unloaded RSS: a few requests, then the RSS of the server's processes (their sum);
2. the sustainable rate: ``--clients`` clients each sending a request and waiting for its answer, for
   ``--measure`` seconds; requests answered per second is the rate R;
3. the overload: requests sent at 10 × R per second (open loop: each on its own connection, whatever the
   answers), for ``--seconds`` seconds, at most ``--most`` requests; meanwhile ``GET /health`` every
   0.25 s and the RSS every 0.25 s.

A request holds ``--sentences`` sentences of ``--words`` words (UD English EWT dev's words in order,
through ``$EASYFIRST_DATA``, else the bundled sample), as a burst of long documents would. Reported:
the statuses counted, the p50/p99/max latency of the 200s, of the 503s and of /health, the RSS peak
against the unloaded one. Loopback only; the server is stopped (SIGTERM, then SIGKILL) at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def dies_with_this() -> None:
    """A child's ``preexec_fn``: the kernel ends it (SIGTERM, which a server answers by stopping) when
    this script's process dies."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (linux/prctl.h)


SAMPLE = ROOT / "data" / "samples" / "en-sample.conllu"


def requests_body(sentences: int, words: int) -> tuple[bytes, str]:
    from easyfirst.data.conllu import read_conllu

    data = os.environ.get("EASYFIRST_DATA")
    path = Path(data) / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu" if data else SAMPLE
    path = path if path.is_file() else SAMPLE
    stream = [w for s in read_conllu(path) for w in s.words]
    stream = stream * -(-(sentences * words) // len(stream))
    chunks = [stream[i * words : (i + 1) * words] for i in range(sentences)]
    return json.dumps({"sentences": chunks}).encode(), path.name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def health(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=60) as answer:
        return json.loads(answer.read())


def rss_mb(pid: int) -> float:
    """The RSS of ``pid`` and its children (the workers), summed, in MB."""
    total = 0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for process in [pid, *map(int, children)]:
        for line in Path(f"/proc/{process}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return round(total / 1024, 1)


async def post(port: int, body: bytes) -> tuple[int, float, str | None]:
    """One request on its own connection: its status, latency (s) and Retry-After header."""
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = (
            "POST /tag HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        writer.write(head + body)
        await writer.drain()
        answer = await reader.read()
    finally:
        writer.close()
    first, _, rest = answer.partition(b"\r\n")
    status = int(first.split()[1]) if first.startswith(b"HTTP/") else 0
    retry = None
    for line in rest.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.lower() == b"retry-after":
            retry = value.strip().decode()
    return status, time.perf_counter() - start, retry


async def sustainable(port: int, body: bytes, clients: int, seconds: float) -> float:
    """Requests answered per second by ``clients`` closed-loop clients."""
    end, answered = time.perf_counter() + seconds, []

    async def client() -> None:
        while time.perf_counter() < end:
            status, _, _ = await post(port, body)
            if status == 200:
                answered.append(time.perf_counter())

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return len(answered) / (time.perf_counter() - start)


async def overload(port: int, pid: int, body: bytes, rate: float, seconds: float, most: int) -> dict:
    results, healths, rss = [], [], []
    stop = asyncio.Event()

    async def one() -> None:
        try:
            results.append(await post(port, body))
        except OSError as error:  # refused or reset: counted as such
            results.append((f"{type(error).__name__}", 0.0, None))

    async def watch() -> None:
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            start = time.perf_counter()
            try:
                await loop.run_in_executor(None, health, port)
                healths.append(time.perf_counter() - start)
            except OSError:
                healths.append(float("inf"))
            rss.append(rss_mb(pid))
            await asyncio.sleep(0.25)

    watcher = asyncio.create_task(watch())
    tasks, start, count = [], time.perf_counter(), min(most, int(rate * seconds))
    for k in range(count):
        await asyncio.sleep(max(0.0, start + k / rate - time.perf_counter()))
        tasks.append(asyncio.create_task(one()))
    sent = time.perf_counter() - start
    await asyncio.gather(*tasks)
    stop.set()
    await watcher
    return {"results": results, "healths": healths, "rss": rss, "sent_s": sent}


def quantiles(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50_s": round(pick(0.5), 3), "p99_s": round(pick(0.99), 3), "max_s": round(ordered[-1], 3)}


def machine() -> str:
    import torch

    from easyfirst.parallel.cores import processor

    return f"{os.cpu_count()} cores, {processor()}, torch {torch.__version__}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-queue", type=int, default=None, help="default: the server's")
    parser.add_argument("--deadline", type=float, default=5.0)
    parser.add_argument("--sentences", type=int, default=100)
    parser.add_argument("--words", type=int, default=30)
    parser.add_argument("--clients", type=int, default=4, help="closed-loop clients measuring the rate")
    parser.add_argument("--measure", type=float, default=15.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--most", type=int, default=2000, help="at most this many requests in the overload")
    parser.add_argument("--factor", type=float, default=10.0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--note", default="", help="kept in the JSON: e.g. the machine shared by other work")
    args = parser.parse_args()
    body, source = requests_body(args.sentences, args.words)
    port = free_port()
    command = ["easyfirst", "serve", "--port", str(port), "--workers", str(args.workers), "--no-access-log"]
    command += ["--deadline", str(args.deadline)] if args.deadline else []
    command += ["--max-queue", str(args.max_queue)] if args.max_queue else []
    server = subprocess.Popen(
        [sys.executable, "-m", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=dies_with_this,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                health(port)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.3)
        for _ in range(2 * args.workers):  # warm-up: every worker's first forward passes
            asyncio.run(post(port, body))
        unloaded = rss_mb(server.pid)
        rate = asyncio.run(sustainable(port, body, args.clients, args.measure))
        print(f"sustainable: {rate:.2f} requests/s ({rate * args.sentences * args.words:,.0f} words/s)")
        found = asyncio.run(overload(port, server.pid, body, args.factor * rate, args.seconds, args.most))
        counts = Counter(status for status, _, _ in found["results"])
        answered = [s for status, s, _ in found["results"] if status == 200]
        refused = [(s, retry) for status, s, retry in found["results"] if status == 503]
        end = health(port)
        result = {
            "command": " ".join(command).replace(f"--port {port}", "--port PORT"),
            "request": f"{args.sentences} sentences of {args.words} words ({source})",
            "sustainable_requests_per_s": round(rate, 3),
            "overload_requests_per_s": round(args.factor * rate, 3),
            "sent": len(found["results"]),
            "sent_in_s": round(found["sent_s"], 1),
            "statuses": {str(k): v for k, v in sorted(counts.items(), key=str)},
            "answered": quantiles(answered),
            "refused": quantiles([s for s, _ in refused]),
            "retry_after_missing": sum(retry is None for _, retry in refused),
            "health": quantiles(found["healths"]),
            "deadline_s": args.deadline,
            "answered_p99_within_deadline": bool(answered)
            and (not args.deadline or quantiles(answered)["p99_s"] <= args.deadline),
            "other_than_200_503": sum(v for k, v in counts.items() if k not in (200, 503)),
            "rss_unloaded_mb": unloaded,
            "rss_peak_mb": max(found["rss"]),
            "rss_peak_ratio": round(max(found["rss"]) / unloaded, 3),
            "server_counts": {
                k: end[k] for k in ("requests", "batches", "waiting_words", "refused", "expired")
            },
            "machine": machine(),
            "note": args.note,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(json.dumps(result, indent=1))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(result, indent=1) + "\n")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
