"""Tagging on a Dask cluster (easyfirst.integrations.dask) against one process, on one machine: the
numbers docs/studies/dask.md scales to 8 and 64 nodes.

    python benchmarks/speed/dask_tagging.py --json benchmarks/results/dask-tagging-cpu-2core.json

Measured in one run, on UD English EWT dev (and test, for ``tag_files``; through EASYFIRST_DATA) with
the bundled model (or ``--model``), each as wall-clock seconds and as CPU seconds (``time.process_time``
of this process, which also runs the LocalCluster's scheduler, and of each worker process, so a busy
machine's other work does not count):

- ``one_process``: ``Tagger.tag`` on one torch thread, no pool: what one core can do;
- ``driver``: the file read and written through ``easyfirst tag``'s path with a stub in place of the
  tagger (every tag ``_``): what ``tag_file``'s driver does per word besides waiting;
- ``cluster_start``: a LocalCluster of ``--workers`` worker processes on loopback, to its first answer;
  ``register``: the Tagger loaded on every worker (the plugin's setup);
- ``idle``: CPU seconds per second of five seconds with nothing to do (heartbeats, monitors);
- ``task``: per task of ``--tasks`` empty tasks sent with ``client.map`` and gathered;
- ``tag_file``: dev tagged on the cluster (twice), and whether it equals ``easyfirst tag``'s output;
- ``tag_files``: dev and test, a file per worker, read and written there.
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
from contextlib import contextmanager
from pathlib import Path


class StubTagger:
    """A tagger that tags nothing: the driver's own work (reading, windows, writing) alone."""

    def __init__(self, config):
        self.config = config

    def tag(self, sentences, **options):
        return [["_"] * len(words) for words in sentences]


@contextmanager
def timed(found: dict, key: str, client=None):
    """``found[key]``: wall seconds, this process's CPU seconds and (``client``) its workers'."""
    workers = client.run(time.process_time) if client is not None else {}
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    found[key] = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    if client is not None:
        after = client.run(time.process_time)
        found[key]["workers_cpu_s"] = sum(after[w] - workers[w] for w in after)


def measure(paths: list[Path], model: str | None, workers: int, tasks: int, out: Path) -> dict:
    import torch
    from distributed import Client, LocalCluster

    from easyfirst import Tagger
    from easyfirst.data.conllu import iter_conllu
    from easyfirst.integrations.dask import register, tag_file, tag_files
    from easyfirst.tagging.pipeline import Source, write_output

    sentences = [s.words for s in iter_conllu(paths[0])]
    found: dict = {"words": sum(map(len, sentences)), "sentences": len(sentences)}
    found["words_of_each_file"] = [sum(len(s.words) for s in iter_conllu(p)) for p in paths]
    torch.set_num_threads(1)
    tagger = Tagger.load(model)
    tagger.processes = 1
    tagger.tag(sentences[:100])
    with timed(found, "one_process"):
        tagger.tag(sentences)
    source = Source.find(str(paths[0]), None, {})
    with timed(found, "driver"):
        write_output(
            out / "stub.conllu", source.writer(StubTagger(tagger.config), {}, batch_size=256, output=None)
        )
    source.close()
    with timed(found, "cluster_start"):
        cluster = LocalCluster(
            n_workers=workers,
            processes=True,
            host="127.0.0.1",
            threads_per_worker=1,
            dashboard_address="127.0.0.1:0",
        )
        client = Client(cluster)
        client.submit(len, [], pure=False).result()
    with timed(found, "register"):
        register(client, model)
    with timed(found, "idle", client):  # what the workers spend doing nothing, per second
        time.sleep(5)
    found["idle"] = {
        key: value / found["idle"]["wall_s"] for key, value in found["idle"].items() if key != "wall_s"
    }
    with timed(found, "task", client):
        client.gather(client.map(len, [[]] * tasks, pure=False))
    found["task"] = {key: value / tasks for key, value in found["task"].items()}
    for run in (1, 2):
        with timed(found, f"tag_file_{run}", client):
            tag_file(client, paths[0], out / "dask.conllu", model=model)
    with timed(found, "tag_files", client):
        tag_files(client, [(p, out / f"files-{p.name}") for p in paths], model=model)
    client.close()
    cluster.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from easyfirst.data.datasets import resolve_split

    paths = [Path(resolve_split("ud-en-ewt", split)) for split in ("dev", "test")]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        found = measure(paths, args.model, args.workers, args.tasks, out)
        command = [sys.executable, "-m", "easyfirst", "tag", str(paths[0]), "-o", str(out / "tag.conllu")]
        command += ["-m", args.model] if args.model else []
        start = time.perf_counter()
        subprocess.run(command, check=True)
        found["easyfirst_tag_wall_s"] = time.perf_counter() - start
        found["tag_file_identical"] = filecmp.cmp(out / "tag.conllu", out / "dask.conllu", shallow=False)
    words = found["words"]
    cluster = found["tag_file_2"]
    found["rates_words_per_cpu_s"] = {
        "one_process": words / found["one_process"]["cpu_s"],
        "tag_file_workers": words / cluster["workers_cpu_s"],
        "tag_file_driver": words / cluster["cpu_s"],
        "driver_stub": words / found["driver"]["cpu_s"],
        "tag_files_workers": sum(found["words_of_each_file"]) / found["tag_files"]["workers_cpu_s"],
    }
    found.update(
        workers=args.workers,
        machine=f"{platform.machine()}, {os.cpu_count()} cores",
        load_average_after=[round(x, 2) for x in os.getloadavg()],
        python=platform.python_version(),
    )
    text = json.dumps(found, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
