"""Training speed at one sentence per update (the paper's own regime, configs/pos-reference.toml), with
and without the compiled CPU path (easyfirst.backends.compiled), and how close the two train.

    python benchmarks/speed/reference_speed.py [--sentences 600] [--rounds 3] [--threads 1] [--json out.json]

Reads UD English EWT training sentences of <= 50 words through EASYFIRST_DATA and draws `--sentences`
of them at random (seed 0), so that their lengths are those of an epoch. Each configuration trains a
fresh model (seed 1) on the same sentences, one per update, as `easyfirst train` does (Adagrad lr 0.1,
the loss summed over the sentence's words, the gradient norm clipped at 5 per update, embedding tables
with sparse gradients); the configurations take turns in `--rounds` rounds, so that a shared machine's
load falls on all of them alike. Reported: training words per second of wall-clock time and of this
process's CPU time, and each configuration's speed as a ratio to the BiLSTM at one sentence per update
in the same run:

- NEF-F, N = L, one sentence per update (the compiled path, backend ``numba``: the BiLSTM and csoftmax
  step loops compiled by Numba, easyfirst.backends.kernels);
- the same with the compiled path switched off (backend ``reference`` forced: torch's LSTM and the
  generic step loop; until backend ``fused`` was removed, its batched csoftmax loop ran here for
  csoftmax, in the results of that day);
- the same with dense embedding gradients too: how one sentence per update trained before;
- BiLSTM (N = 0), one sentence per update;
- NEF-F, N = L, 16 sentences per update (the default regime: batches of similar length, the chooser's
  backends), for scale;
- NEF-F with sparsemax attention, one sentence per update, on the lean path and off it;
- NEF-F with a prescribed order (left-to-right, a row of the paper's Table 4) and vanilla easy-first
  (hard attention, Tables 1 and 4), likewise.

``--only TEXT …`` keeps the configurations whose name contains one of the texts (and the BiLSTM, the
unit of the ratios).

Each configuration first trains a copy of its model for three updates, untimed: Numba loads (or
compiles) its kernels then, and torch makes its first calls.

Exactness: the lean path computes the same function and gradients as the batched one, only the floating
point rounding differs. ``--check K`` trains NEF-F for K updates on the lean path and, before each
update, computes the gradients both ways at the same parameters with the same dropout masks: it prints
the largest difference relative to the largest gradient entry (float32 and float64). (Comparing the
parameters of two trainings instead would measure Adagrad, not the paths: its first update of an entry is
±lr·sign(g), so an entry whose gradient is a rounding error away from 0 moves by lr either way.)
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time
from pathlib import Path
from typing import NamedTuple

import torch

from easyfirst.backends import compiled
from easyfirst.backends.chooser import run_plan
from easyfirst.config import Config
from easyfirst.data.batching import batches_in_order, collate, encode, iterate_batches
from easyfirst.data.conllu import read_conllu
from easyfirst.data.datasets import resolve_split
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.tasks import get_task
from easyfirst.training.epochs import backward_step
from easyfirst.training.loop import build_vocabularies
from easyfirst.training.optim import make_optimizer


class Setup(NamedTuple):
    model: str
    batch_size: int  # sentences per update
    # the backend forced (easyfirst.backends): numba (the compiled CPU path, easyfirst.backends.compiled
    # on the loops of easyfirst.backends.kernels), reference (the compiled path off: nn.LSTM and the
    # generic step loop), auto (the chooser's)
    backend: str
    sparse: bool = True  # sparse embedding gradients
    attention: str = "csoftmax"


CONFIGS = {
    "NEF-F, N = L, 1 sentence/update": Setup("nef-f", 1, "numba"),
    "NEF-F, N = L, 1 sentence/update, lean path off": Setup("nef-f", 1, "reference"),
    "NEF-F, N = L, 1 sentence/update, lean path off, dense embedding gradients": Setup(
        "nef-f", 1, "reference", sparse=False
    ),
    "BiLSTM, 1 sentence/update": Setup("bilstm", 1, "numba"),
    "NEF-F, N = L, 16 sentences/update": Setup("nef-f", 16, "auto"),
    "NEF-F sparsemax, N = L, 1 sentence/update": Setup("nef-f", 1, "numba", attention="sparsemax"),
    "NEF-F sparsemax, N = L, 1 sentence/update, lean path off": Setup(
        "nef-f", 1, "reference", attention="sparsemax"
    ),
    "NEF-F left-to-right, N = L, 1 sentence/update": Setup("nef-f", 1, "numba", attention="left-to-right"),
    "NEF-F left-to-right, N = L, 1 sentence/update, lean path off": Setup(
        "nef-f", 1, "reference", attention="left-to-right"
    ),
    "vanilla easy-first (hard), N = L, 1 sentence/update": Setup("nef-f", 1, "numba", attention="hard"),
    "vanilla easy-first (hard), N = L, 1 sentence/update, lean path off": Setup(
        "nef-f", 1, "reference", attention="hard"
    ),
}
BASE = "BiLSTM, 1 sentence/update"


def reference_config(model: str, batch_size: int, attention: str = "csoftmax") -> Config:
    config = Config.load(Path(__file__).parents[2] / "configs" / "pos-reference.toml")
    config.model.model, config.model.decoder.attention = model, attention
    config.model.decoder.sketch_steps = 0 if model == "bilstm" else None
    config.train.batch_size = batch_size
    if batch_size > 1:  # the default regime
        config.train.reduction, config.train.shuffle = "mean", True
    return config


def train_on(model: EasyFirstTagger, optimizer, batches: list, config: Config) -> None:
    """One update per batch, as `easyfirst train` makes them."""
    parameters = list(model.parameters())
    for batch in batches:
        backward_step(model, model, optimizer, parameters, batch, config.train)
        optimizer.step()


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def check(items: list, vocabs, updates: int, dtype: torch.dtype) -> float:
    """Along K updates of NEF-F (lean path), the largest difference between the gradients of the two paths
    (backends numba and reference) at the same parameters, relative to the largest gradient entry (same
    dropout masks on both)."""
    config = reference_config("nef-f", 1)
    torch.manual_seed(1)
    model = EasyFirstTagger(config.model, config.loss, vocabs).to(dtype)
    optimizer = make_optimizer("adagrad", 0.1, model)
    parameters = list(model.parameters())
    model.train()
    worst = 0.0
    for k, item in enumerate(items[:updates]):
        batch = collate([item], [0])
        found = []
        for backend in ("reference", "numba"):  # the lean path last: its gradients make the update
            model.backend = backend
            torch.manual_seed(100 + k)
            backward_step(model, model, optimizer, parameters, batch, config.train)
            found.append([p.grad.to_dense() for p in parameters if p.grad is not None])
        scale = max(g.abs().max().item() for g in found[1])
        worst = max(worst, max((a - b).abs().max().item() for a, b in zip(*found, strict=True)) / scale)
        optimizer.step()
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--check", type=int, default=0, metavar="K")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="+", metavar="TEXT", help="configurations whose name contains TEXT")
    args = parser.parse_args()
    chosen_configs = {
        name: setup
        for name, setup in CONFIGS.items()
        if name == BASE or not args.only or any(text in name for text in args.only)
    }
    torch.set_num_threads(args.threads)

    train = [
        s for s in read_conllu(resolve_split(get_task("pos").dataset, "train")) if 0 < len(s.words) <= 50
    ]
    vocabs = build_vocabularies(Config(), train)
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(0)).tolist()
    chosen = [train[i] for i in order[: args.sentences]]
    items = [encode(vocabs, s.words, s.tags) for s in chosen]
    words = sum(len(s.words) for s in chosen)
    print(
        f"{len(chosen)} EWT training sentences ({words:,} words, {words / len(chosen):.1f} per sentence), "
        f"{args.rounds} rounds, {torch.get_num_threads()} torch thread(s)"
    )

    states = {}
    if compiled.kernels() is None:
        raise SystemExit("numba is not installed: pip install -e '.[fast]' (the compiled loops are measured)")
    for name, setup in chosen_configs.items():
        model_name, batch_size, backend, sparse, attention = setup
        config = reference_config(model_name, batch_size, attention)
        torch.manual_seed(1)
        model = EasyFirstTagger(config.model, config.loss, vocabs)
        model.backend = backend  # forced (easyfirst.backends.chooser): backward_step runs its plan
        plan = run_plan(config.model, batch_size, "cpu", True, backend)
        print(f"{name}: {plan.describe()}")
        model.train()
        optimizer = make_optimizer(config.train.optimizer, config.train.lr, model, sparse=sparse)
        if batch_size == 1:  # file order, as the reference regime
            batches = list(batches_in_order(items, 1))
        else:  # grouped by length and shuffled, as the default regime
            batches = list(iterate_batches(items, batch_size, torch.Generator().manual_seed(1)))
        # warm-up, untimed, on a copy: loading the compiled kernels (from Numba's cache, or compiling
        # them) and torch's first calls would otherwise count as the first configuration's training time
        warm = copy.deepcopy(model)
        warm_optimizer = make_optimizer(config.train.optimizer, config.train.lr, warm, sparse=sparse)
        train_on(warm, warm_optimizer, batches[:3], config)
        states[name] = dict(
            config=config,
            model=model,
            optimizer=optimizer,
            batches=batches,
            wall=0.0,
            cpu=0.0,
            words=0,
        )
    for r in range(args.rounds):
        for state in states.values():
            batches = state["batches"]
            share = batches[r * len(batches) // args.rounds : (r + 1) * len(batches) // args.rounds]
            start = clocks()
            train_on(state["model"], state["optimizer"], share, state["config"])
            wall, cpu = clocks()
            state["wall"] += wall - start[0]
            state["cpu"] += cpu - start[1]
            state["words"] += sum(int(b.mask.sum()) for b in share)

    base = states[BASE]
    results = {
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
        "sentences": len(chosen),
        "words": words,
        "rounds": args.rounds,
        "configs": {},
    }
    print(f"\n| configuration | words/s (wall) | words/s (CPU) | ratio to {BASE} (CPU) |")
    print("|---|---:|---:|---:|")
    for name, state in states.items():
        wall_speed, cpu_speed = state["words"] / state["wall"], state["words"] / state["cpu"]
        ratio = cpu_speed / (base["words"] / base["cpu"])
        results["configs"][name] = {
            "words_per_second_wall": wall_speed,
            "words_per_second_cpu": cpu_speed,
            "ratio_to_bilstm_cpu": ratio,
            "seconds_wall": state["wall"],
        }
        print(f"| {name} | {wall_speed:,.0f} | {cpu_speed:,.0f} | {ratio:.2f} |")
    if all(name in states for name in list(CONFIGS)[:3]):  # the lean path, off, and off with dense gradients
        on, off, before = (results["configs"][name]["words_per_second_cpu"] for name in list(CONFIGS)[:3])
        results["lean_speedup_cpu"], results["speedup_over_before_cpu"] = on / off, on / before
        print(
            f"\nlean path: {on / off:.2f}× the reference at one sentence per update, {on / before:.2f}× the "
            "reference with dense embedding gradients (CPU time)"
        )
    if args.check:
        for dtype in (torch.float32, torch.float64):
            difference = check(items, vocabs, args.check, dtype)
            results[f"check_{str(dtype).split('.')[-1]}"] = {
                "updates": args.check,
                "max_difference": difference,
            }
            print(
                f"{dtype}, {args.check} updates: largest gradient difference lean vs batched, relative to the "
                f"largest gradient entry: {difference:.1e}"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
