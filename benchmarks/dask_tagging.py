"""Tagging on a Dask cluster (easyfirst.integrations.dask) against one process, on one machine: the
numbers docs/integrations.md scales to 8 and 64 nodes.

    python benchmarks/dask_tagging.py --split dev --json benchmarks/results/dask-tagging-cpu-2core.json

Measured, in one run, on UD English EWT's ``--split`` (through EASYFIRST_DATA) with the bundled model
(or ``--model``):

- ``one_process``: ``Tagger.tag`` on one torch thread, no pool: what one worker can do (words/s);
- ``cluster_start``: a LocalCluster of ``--workers`` worker processes on loopback, to its first answer;
- ``register``: the Tagger loaded on every worker (the plugin's setup);
- ``task_overhead``: seconds per task of ``--tasks`` empty tasks sent with ``client.map`` and gathered;
- ``driver``: the file read and written through ``easyfirst tag``'s path with a stub in place of the
  tagger (every tag ``_``): the rate at which one driver can feed a cluster (words/s);
- ``cluster``: ``tag_file`` on the cluster, twice (the first includes nothing but tagging: the model is
  loaded), words/s, and whether its output equals ``easyfirst tag``'s byte for byte.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class StubTagger:
    """A tagger that tags nothing: the driver's own work (reading, windows, writing) alone."""

    def __init__(self, config):
        self.config = config

    def tag(self, sentences, **options):
        return [["_"] * len(words) for words in sentences]


def words_in(path: Path) -> int:
    from easyfirst.data.conllu import iter_conllu

    return sum(len(s.words) for s in iter_conllu(path))


def measure(path: Path, model: str | None, workers: int, tasks: int, out: Path) -> dict:
    import torch
    from distributed import Client, LocalCluster

    from easyfirst import Tagger
    from easyfirst.data.conllu import iter_conllu
    from easyfirst.integrations.dask import register, tag_file
    from easyfirst.tagging.pipeline import Source, write_output

    found: dict = {"words": words_in(path)}
    sentences = [s.words for s in iter_conllu(path)]
    torch.set_num_threads(1)
    tagger = Tagger.load(model)
    tagger.processes = 1
    start = time.perf_counter()
    tagger.tag(sentences)
    found["one_process_s"] = time.perf_counter() - start

    source = Source.find(str(path), None, {})
    start = time.perf_counter()
    write_output(
        out / "stub.conllu", source.writer(StubTagger(tagger.config), {}, batch_size=256, output=None)
    )
    found["driver_s"] = time.perf_counter() - start
    source.close()

    start = time.perf_counter()
    cluster = LocalCluster(
        n_workers=workers,
        processes=True,
        host="127.0.0.1",
        threads_per_worker=1,
        dashboard_address="127.0.0.1:0",
    )
    client = Client(cluster)
    client.submit(len, [], pure=False).result()
    found["cluster_start_s"] = time.perf_counter() - start
    start = time.perf_counter()
    register(client, model)
    found["register_s"] = time.perf_counter() - start
    start = time.perf_counter()
    client.gather(client.map(len, [[]] * tasks, pure=False))
    found["task_overhead_s"] = (time.perf_counter() - start) / tasks
    found["cluster_s"] = []
    for _ in range(2):
        start = time.perf_counter()
        tag_file(client, path, out / "dask.conllu", model=model)
        found["cluster_s"].append(time.perf_counter() - start)
    client.close()
    cluster.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=["train", "dev", "test"])
    parser.add_argument("--model", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from easyfirst.data.datasets import resolve_split

    path = Path(resolve_split("ud-en-ewt", args.split))
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        found = measure(path, args.model, args.workers, args.tasks, out)
        command = [sys.executable, "-m", "easyfirst", "tag", str(path), "-o", str(out / "tag.conllu")]
        if args.model:
            command += ["-m", args.model]
        start = time.perf_counter()
        subprocess.run(command, check=True)
        found["easyfirst_tag_s"] = time.perf_counter() - start
        found["identical"] = filecmp.cmp(out / "tag.conllu", out / "dask.conllu", shallow=False)
    words = found["words"]
    found["one_process_words_per_s"] = words / found["one_process_s"]
    found["driver_words_per_s"] = words / found["driver_s"]
    found["cluster_words_per_s"] = words / min(found["cluster_s"])
    found["speedup_over_one_process"] = found["one_process_s"] / min(found["cluster_s"])
    found.update(
        split=args.split,
        workers=args.workers,
        machine=f"{platform.machine()}, {os.cpu_count()} cores",
        load_average_before_and_after=[round(x, 2) for x in os.getloadavg()],
        python=platform.python_version(),
    )
    text = json.dumps(found, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
