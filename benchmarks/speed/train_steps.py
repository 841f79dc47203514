"""Two checkouts side by side: the CPU time of one sentence per update (or a batch), in turns.

Each tree gets one long-lived process (its code through PYTHONPATH, one torch thread) that builds the
same model (``--config``, default configs/pos-reference.toml, the paper's regime; seed 1) on the first
``--sentences`` sentences of EWT train and, at each turn, runs forward, backward, clipping and
Adagrad's step over them in file order: the CPU seconds of this process (``time.process_time``), not the
wall clock, so that a shared machine's other work counts less than in an epoch's words per second. The
turns alternate between the trees; the table gives each tree's median over ``--rounds`` and the ratio to
the first tree.

    python benchmarks/speed/train_steps.py OLD_TREE NEW_TREE --rounds 7 --json benchmarks/results/NAME.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = """
import sys, time, torch
torch.set_num_threads(1)
from easyfirst.config import Config
from easyfirst.data.batching import collate, encode
from easyfirst.data.conllu import read_conllu
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.training.epochs import backward_step
from easyfirst.training.loop import build_vocabularies
from easyfirst.training.optim import make_optimizer

config_path, train_path, count, batch_size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sentences = read_conllu(train_path)[:count]
config = Config.load(config_path)
config.train.batch_size = batch_size
vocabs = build_vocabularies(config, sentences)
torch.manual_seed(1)
model = EasyFirstTagger(config.model, config.loss, vocabs)
model.train()
optimizer = make_optimizer(config.train.optimizer, config.train.lr, model)
parameters = list(model.parameters())
groups = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
batches = [collate([encode(vocabs, s.words, s.tags) for s in g], list(range(len(g)))) for g in groups]
words = sum(len(s.words) for s in sentences)
print("ready", flush=True)
for line in sys.stdin:
    start = time.process_time()
    for batch in batches:
        backward_step(model, model, optimizer, parameters, batch, config.train)
        optimizer.step()
    print(words / (time.process_time() - start), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--config", type=Path, default=Path("configs/pos-reference.toml"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    data = Path(os.environ.get("EASYFIRST_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    train = data / "ud" / "UD_English-EWT" / "en_ewt-ud-train.conllu"
    workers = []
    for tree in args.trees:
        environment = {**os.environ, "PYTHONPATH": str(tree.resolve()), "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-c", WORKER, str(args.config.resolve()), str(train)]
        command += [str(args.sentences), str(args.batch_size)]
        worker = subprocess.Popen(
            command, cwd=tree, env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert worker.stdout.readline().strip() == "ready", tree
        workers.append(worker)
    rates: dict[str, list[float]] = {str(tree): [] for tree in args.trees}
    try:
        for round_ in range(args.rounds + 1):  # the first round warms up (caches, allocator): not counted
            for tree, worker in zip(args.trees, workers, strict=True):
                worker.stdin.write("go\n")
                worker.stdin.flush()
                rate = float(worker.stdout.readline())
                if round_:
                    rates[str(tree)].append(rate)
    finally:
        for worker in workers:
            worker.stdin.close()
            worker.wait(timeout=60)
    first = statistics.median(rates[str(args.trees[0])])
    print(f"{'tree':<40} {'words per CPU s':>16} {'×':>7}")
    for tree, found in rates.items():
        print(f"{tree:<40} {statistics.median(found):16,.0f} {statistics.median(found) / first:7.3f}")
    if args.json:
        meta = {"sentences": args.sentences, "batch_size": args.batch_size, "load": os.getloadavg()}
        args.json.write_text(json.dumps({"meta": meta, "rates": rates}, indent=2) + "\n")


if __name__ == "__main__":
    main()
