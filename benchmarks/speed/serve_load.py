"""Load test of `easyfirst serve` on the loopback: 1, 8 and 32 concurrent clients, one sentence per request.

For each number of clients, every client sends one sentence per request (the next one of the set) and
waits for the answer before sending the next, over one keep-alive connection; the run stops when the
sentences are used up or after --seconds. Reported: tokens/s over the wall time, p50 and p99 latency,
the mean number of requests tagged together (the server's /health counters), and the ratio to the
batch throughput of `easyfirst tag` on the same sentences (Tagger.tag with its batch size of 256, the
call `easyfirst tag` makes), measured in the same run, with the server stopped. ``--workers 1 2``
starts the server once per worker count (``easyfirst serve --workers K``) and reads each server
process's RSS and PSS from /proc after its load.

    python benchmarks/speed/serve_load.py            # EWT dev through EASYFIRST_DATA; writes a new results/serve_load-TIME.json
    python benchmarks/speed/serve_load.py --workers 1 2 --output benchmarks/results/serve_load-cpu-2core-shared.json
    python benchmarks/speed/serve_load.py --table benchmarks/results/serve_load-cpu-2core-shared.json   # the docs' table

The sentences: UD English EWT dev (``$EASYFIRST_DATA``), else the bundled sample. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "samples" / "en-sample.conllu"
RESULTS = ROOT / "benchmarks" / "results"


def sentences_to_tag(limit: int) -> tuple[list[list[str]], str]:
    from easyfirst.data.conllu import read_conllu

    data = os.environ.get("EASYFIRST_DATA")
    path = Path(data) / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu" if data else SAMPLE
    if not path.is_file():
        path = SAMPLE
    words = [s.words for s in read_conllu(path)]
    # more than the file holds: the file again, so that a quiet machine's run lasts long enough for its
    # p99 (1,000 requests are about a second there, and the first ones pay each worker's warm-up)
    words = (words * -(-limit // len(words)))[:limit]
    return words, str(path.relative_to(data) if data else path.name)


def batch_throughput(sentences: list[list[str]], chunk: int | None = None, repeats: int = 3) -> float:
    """Tokens per second of Tagger.tag over all the sentences at once (best of ``repeats``), or (``chunk``)
    over successive groups of ``chunk`` sentences in the order the clients send them: the forward
    passes the server makes when each gathers ``chunk`` requests, without HTTP."""
    from easyfirst import Tagger
    from easyfirst.parallel.cores import tagging_processes

    tagger = Tagger.load()
    tagger.processes = tagging_processes()  # a large call on every core, as before issue #45
    tagger.tag(sentences[:64])  # warm-up
    size = chunk or len(sentences)
    tokens, best = sum(map(len, sentences)), float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for first in range(0, len(sentences), size):
            tagger.tag(sentences[first : first + size], batch_size=256)
        best = min(best, time.perf_counter() - start)
    return tokens / best


async def client(port: int, queue: list, latencies: list, deadline: float) -> int:
    """Send the sentences left in ``queue`` one per request until it is empty or time is up."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    tokens = 0
    try:
        while queue and time.perf_counter() < deadline:
            words = queue.pop()
            body = json.dumps({"sentences": [words]}).encode()
            head = (
                f"POST /tag HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            start = time.perf_counter()
            writer.write(head + body)
            await writer.drain()
            status, *lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
            length = 0
            for line in lines:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            answer = json.loads(await reader.readexactly(length))
            latencies.append(time.perf_counter() - start)
            if b" 200 " not in status or len(answer["sentences"][0]["tags"]) != len(words):
                raise RuntimeError(f"bad answer: {status!r} {answer}")
            tokens += len(words)
    finally:
        writer.close()
    return tokens


def run(coroutine):
    """``asyncio.run(coroutine)`` on uvloop's event loop where it is installed (the extra ``serve``):
    the clients share the server's cores, so that the less CPU they take the more the server has."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def client_loop() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def model_description() -> str:
    """The bundled model, as its config says."""
    from easyfirst.api import DEFAULT_MODEL, Tagger

    m = Tagger.load().config.model
    steps = "N = L" if m.decoder.sketch_steps is None else f"N = {m.decoder.sketch_steps}"
    return f"bundled {DEFAULT_MODEL} ({m.model}, {m.decoder.attention}, {steps})"


def health(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as response:
        return json.loads(response.read())


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` and of its children (the workers) so far."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    ticks = 0
    for process in [pid, *map(int, children)]:
        fields = Path(f"/proc/{process}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (the 14th and 15th of stat)
    return ticks / os.sysconf("SC_CLK_TCK")


async def load(port: int, sentences: list[list[str]], clients: int, seconds: float, pid: int) -> dict:
    queue = list(reversed(sentences))
    latencies: list[float] = []
    before = health(port)
    server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
    start = time.perf_counter()
    tokens = await asyncio.gather(*(client(port, queue, latencies, start + seconds) for _ in range(clients)))
    wall = time.perf_counter() - start
    server_cpu, client_cpu = cpu_seconds(pid) - server_cpu, time.process_time() - client_cpu
    after = health(port)
    latencies.sort()
    batches = after["batches"] - before["batches"]
    found = {
        "clients": clients,
        "requests": len(latencies),
        "tokens": sum(tokens),
        "seconds": round(wall, 3),
        "tokens_per_s": round(sum(tokens) / wall, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2),
        "requests_per_group": round((after["requests"] - before["requests"]) / max(batches, 1), 2),
        # where the cores went: the server's processes, and this one (the clients, their JSON)
        "server_cpu_s": round(server_cpu, 2),
        "client_cpu_s": round(client_cpu, 2),
    }
    if "timings" in after:  # EASYFIRST_SERVE_TIMINGS=1 (easyfirst.serve.timings)
        found["us_per_request"] = breakdown(before["timings"], after["timings"], server_cpu)
    return found


def breakdown(before: dict, after: dict, server_cpu: float) -> dict:
    """µs per request of each stage the server counted over the level, and "other": the server's CPU
    time per request less the stages measured in CPU time (all but queue, a wait)."""
    requests = max(after["requests"] - before["requests"], 1)
    per = {name: (after["ns"][name] - before["ns"][name]) / 1000 / requests for name in after["ns"]}
    per["other"] = 1e6 * server_cpu / requests - sum(v for name, v in per.items() if name != "queue")
    per["server_cpu"] = 1e6 * server_cpu / requests
    return {name: round(value, 1) for name, value in per.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port: int, window: float, workers: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "easyfirst", "serve", "--port", str(port), "--no-access-log",
         "--batch-window", str(window), "--max-sentences", "1000", "--workers", str(workers)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            health(port)
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the server did not start")


def memory(pid: int) -> dict:
    """RSS and PSS (MB) of the server process ``pid`` and of each of its children (the workers), from
    /proc: PSS shares each page among the processes that map it, so the workers' sum is what they
    cost together, and a worker's PSS beyond the one process of ``--workers 1`` is what it adds."""

    def sizes(process: int) -> dict:
        fields = {}
        for line in Path(f"/proc/{process}/smaps_rollup").read_text().splitlines()[1:]:
            name, value = line.split()[:2]
            fields[name.rstrip(":")] = int(value)
        return {"rss_mb": round(fields["Rss"] / 1024, 1), "pss_mb": round(fields["Pss"] / 1024, 1)}

    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    found = {"parent": sizes(pid), "workers": [sizes(int(child)) for child in children]}
    found["pss_total_mb"] = round(sum(p["pss_mb"] for p in [found["parent"], *found["workers"]]), 1)
    return found


def table(result: dict) -> str:
    rows = [
        "| workers | clients | requests | tokens/s | × batch | p50 (ms) | p99 (ms) | requests per group "
        "| Tagger.tag alone at that batch (tokens/s) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for level in result["levels"]:
        level.setdefault("requests_per_group", level.get("requests_per_forward"))  # files before --workers
        rows.append(
            f"| {level.get('workers', 1)} | {level['clients']} | {level['requests']:,} | {level['tokens_per_s']:,.0f} | "
            f"{level['ratio_to_batch']:.2f} | {level['p50_ms']:.1f} | {level['p99_ms']:.1f} | "
            f"{level['requests_per_group']:.1f} | {level['tagger_tokens_per_s_at_this_batch']:,.0f} |"
        )
    rows.append(f"| `easyfirst tag` (batch 256) | | | {result['batch_tokens_per_s']:,.0f} | 1.00 | | | | |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--workers", type=int, nargs="+", default=[1], help="server processes, one run each")
    parser.add_argument(
        "--sentences",
        type=int,
        default=1000,
        help="at most this many sentences per level (the file repeated past its end)",
    )
    parser.add_argument("--seconds", type=float, default=60, help="at most this long per level")
    parser.add_argument(
        "--batch-window",
        type=float,
        default=0.25,
        help="the server's gather window (ms; easyfirst serve's default)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="the result file (default: results/serve_load-<UTC time>.json, a new file)",
    )
    parser.add_argument("--table", type=Path, help="print the Markdown table of a result file and exit")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())), end="")
        return
    sentences, source = sentences_to_tag(args.sentences)
    levels, memories = [], {}
    for workers in args.workers:
        port = free_port()
        server = serve(port, args.batch_window, workers)
        try:
            run(load(port, sentences[:50], 4, 30, server.pid))  # warm-up
            for c in args.clients:
                levels.append({"workers": workers, **run(load(port, sentences, c, args.seconds, server.pid))})
            memories[workers] = memory(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=60)
    batch = batch_throughput(sentences)  # `easyfirst tag`'s path, which does not load numba's loops
    try:  # the server's: each group in numba's compiled loops, where Numba is (issue #46)
        from easyfirst.backends.chooser import load_tagging_loops

        load_tagging_loops()
    except ImportError:  # a checkout before them
        pass
    for level in levels:
        level["ratio_to_batch"] = round(level["tokens_per_s"] / batch, 3)
        # the model alone at this level's batch size: what the forward passes cost without HTTP
        chunk = max(1, round(level["requests_per_group"]))
        level["tagger_tokens_per_s_at_this_batch"] = round(batch_throughput(sentences, chunk), 1)
    import torch

    result = {
        "command": "python benchmarks/speed/serve_load.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads)",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "model": model_description(),
        "sentences": source,
        "sentences_per_level": len(sentences),
        "batch_window_ms": args.batch_window,
        "client_loop": client_loop(),
        "batch_tokens_per_s": round(batch, 1),
        "levels": levels,
        "memory": memories,
    }
    # never over a kept result by default: the docs' tables are rebuilt from those files
    args.output = args.output or RESULTS / f"serve_load-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.json"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result), end="")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
