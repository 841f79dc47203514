"""Training and tagging speed of the BiLSTM baseline and the easy-first decoders on UD English EWT, as
ratios to the BiLSTM measured in the same run; peak memory; time per token against sentence length.

    python benchmarks/speed/speed.py [--steps 240] [--rounds 4] [--threads 1] [--json speed.json]
    python benchmarks/speed/speed.py --steps 0        # tagging, scaling and memory only
    python benchmarks/speed/speed.py --generic-loop   # also NEF-F, N = L on the reference's step loop
    python benchmarks/speed/speed.py --chars 30,30    # also bilstm and NEF-F, N = L with a character CNN
    python benchmarks/speed/speed.py --chars 30,50 --char-encoders cnn bilstm   # ... and a character BiLSTM

Reads EWT through EASYFIRST_DATA (train sentences of <= 50 words, as `easyfirst train` does; the test set
for tagging). All models see the same batches, drawn with one seed from the training set.

- training: `--steps` updates per model (batch 16, Adagrad, clipping, as `easyfirst train`), from a
  fresh model; the models take turns in `--rounds` rounds so that a shared machine's load falls on all
  of them alike. Tokens/s = real tokens / seconds of those updates.
- tagging: EWT test through `Tagger.tag` (encoding included), in the order of the file.
- both are reported in wall-clock seconds and in CPU seconds of the process (`time.process_time`), which
  other jobs on a shared machine inflate less; the ratios use the same clock.
- memory: in a fresh child process per model and job, the peak resident set size (Linux VmHWM, reset
  just before the job through /proc/self/clear_refs) minus the resident size at that moment, i.e. what
  the job itself added (the process with torch, data and model held ~200-300 MiB before it); the
  absolute peak is in the JSON. Jobs: 4 updates on the 64 longest training sentences; tagging EWT test.
  On a GPU, `torch.cuda.max_memory_allocated` instead.
- scaling: tagging time per token of one batch of synthetic sentences of L words (words drawn from the
  vocabulary), L in {10, 50, 200, 1000}, with 2000 // L sentences; and the peak memory of tagging one
  1,000-word sentence with N = L (target: under 2 GiB).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from easyfirst.api import Tagger
from easyfirst.backends.chooser import plan_for
from easyfirst.config import Config
from easyfirst.data.batching import Batch, collate, encode, iterate_batches
from easyfirst.data.conllu import read_conllu
from easyfirst.data.datasets import resolve_split
from easyfirst.data.features import CHARS, build_feature_vocabs
from easyfirst.data.vocab import Vocabularies
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.parallel.cores import tagging_processes
from easyfirst.tasks import get_task
from easyfirst.training.epochs import backward_step
from easyfirst.training.optim import make_optimizer

MODELS = {  # name → (model, sketch steps)
    "bilstm": ("bilstm", 0),
    "NEF-S, N = L": ("nef-s", None),
    "NEF-F, N = 5": ("nef-f", 5),
    "NEF-F, N = L": ("nef-f", None),
}
# --generic-loop: NEF-F, N = L once more with the decoder's generic step loop (backend ``reference``
# forced) instead of the chooser's, in the same run: the compiled path's speed-up (until backend fused
# was removed, the chooser's was its batched csoftmax loop, in the results of that day)
GENERIC = "NEF-F, N = L, generic loop"
# --chars D,F: these rows once more with character features (D-d characters, encoders of output size F;
# issue #36), in the same run: their cost. Row name → (row, encoder), filled by main
CHAR_ROWS = ("bilstm", "NEF-F, N = L")
WITH_CHARS: dict[str, tuple[str, str]] = {}
LENGTHS = (10, 50, 200, 1000)
GiB = 2**30


def config_for(name: str, chars: tuple[int, int] = (0, 30)) -> Config:
    config = Config()
    base = "NEF-F, N = L" if name == GENERIC else WITH_CHARS.get(name, (name,))[0]
    config.model.model, config.model.decoder.sketch_steps = MODELS[base]
    if name in WITH_CHARS:
        config.model.embedder.char_dim, config.model.embedder.char_filters = chars
        config.model.embedder.char_encoder = WITH_CHARS[name][1]
    return config


def clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clocks()
    return wall - start[0], cpu - start[1]


def load_ewt(limit: int) -> tuple[list, list]:
    train = [
        s for s in read_conllu(resolve_split(get_task("pos").dataset, "train")) if 0 < len(s.words) <= limit
    ]
    test = read_conllu(resolve_split(get_task("pos").dataset, "test"))
    return train, test


def training_batches(
    train: list, steps: int, seed: int, chars: bool = False
) -> tuple[Vocabularies, list[Batch]]:
    """The vocabularies of ``train`` and its first ``steps`` batches as `easyfirst train` draws them in the
    batched regime (the default Config: 16 sentences per update, length-bucketed) with ``seed``; with
    ``chars``, each word's characters too (the same batches)."""
    vocabs = Vocabularies.build((s.words, s.tags) for s in train)
    if chars:
        vocabs.features = build_feature_vocabs([CHARS], train)
    items = [encode(vocabs, s.words, s.tags) for s in train]
    generator = torch.Generator().manual_seed(seed)
    return vocabs, list(iterate_batches(items, Config().train.batch_size, generator))[:steps]


def train_step(
    model: EasyFirstTagger, optimizer: torch.optim.Optimizer, batch: Batch, config: Config
) -> None:
    """One update as `easyfirst train` makes it."""
    backward_step(model, model, optimizer, list(model.parameters()), batch, config.train)
    optimizer.step()


def rss_bytes(field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (peak since the last reset) of this process, from /proc/self/status."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak_rss() -> None:
    """Make VmHWM start again from the current resident size (Linux ≥ 4.0: write 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def memory_child(args: argparse.Namespace) -> None:
    """Child process: one model, one job; prints {"peak": bytes, "before": bytes} as JSON.

    Jobs: ``train`` (four updates on the 64 longest training sentences, after one on the 16 shortest
    so that the optimizer state exists), ``tag`` (EWT test), ``long`` (one sentence of ``--length``
    words). The peak is measured from just before the job: the data loading's own peak is not counted.
    """
    torch.set_num_threads(args.threads)
    inputs = json.loads(Path(args.inputs).read_text())
    vocabs = Vocabularies.from_json(inputs["vocab"])
    config = config_for(args.model)
    torch.manual_seed(0)
    model = EasyFirstTagger(config.model, config.loss, vocabs).to(args.device)
    cuda = torch.device(args.device).type == "cuda"
    if args.job == "train":
        longest = [encode(vocabs, w, t) for w, t in inputs["longest"]]
        batches = [collate(longest[k : k + 16], []) for k in range(0, len(longest), 16)]
        optimizer = make_optimizer(config.train.optimizer, config.train.lr, model)
        shortest = collate([encode(vocabs, w, t) for w, t in inputs["shortest"]], [])
        train_step(model, optimizer, shortest.to(args.device), config)
    elif args.job == "tag":
        sentences = inputs["test"]
    else:
        sentences = [synthetic(vocabs, args.length, 0)]
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        reset_peak_rss()
        before = rss_bytes("VmRSS")
    if args.job == "train":
        for batch in batches:
            train_step(model, optimizer, batch.to(args.device), config)
    else:
        model.eval()
        # every core, as before issue #45 made one process the library's default
        Tagger(model, config, vocabs, args.device).tag(sentences, processes=tagging_processes())
    peak = torch.cuda.max_memory_allocated() if cuda else rss_bytes("VmHWM")
    print(json.dumps({"peak": peak, "before": before}))


def synthetic(vocabs: Vocabularies, length: int, k: int) -> list[str]:
    """Sentence k of ``length`` words drawn deterministically from the word vocabulary."""
    words = vocabs.words.itos[2:]
    return [words[(k * 7919 + i * 104729) % len(words)] for i in range(length)]


def measure_memory(args: argparse.Namespace, inputs: Path, model: str, job: str, length: int = 0) -> dict:
    command = [sys.executable, __file__, "--child", job, "--model", model, "--inputs", str(inputs)]
    command += ["--length", str(length), "--threads", str(args.threads), "--device", args.device]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    found = json.loads(result.stdout.strip().splitlines()[-1])
    return {
        "peak_bytes": found["peak"],
        "before_bytes": found["before"],
        "used_bytes": found["peak"] - found["before"],
    }


def mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=240, help="training updates per model (0: no training)")
    parser.add_argument("--rounds", type=int, default=4, help="turns the models take (the steps are split)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    parser.add_argument(
        "--generic-loop", action="store_true", help=f"add a row '{GENERIC}' (training and tagging)"
    )
    parser.add_argument(
        "--chars",
        default=None,
        metavar="D,F",
        help=f"add rows {', '.join(CHAR_ROWS)} with character features: D-d characters, output size F",
    )
    parser.add_argument(
        "--char-encoders", nargs="+", default=["cnn"], help="with --chars: a row each (cnn, bilstm)"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--model", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--inputs", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.job = args.child
        return memory_child(args)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    train, test = load_ewt(Config().data.max_train_length)
    vocabs, batches = training_batches(train, args.steps, args.seed)
    chars = tuple(int(n) for n in args.chars.split(",")) if args.chars else None
    inputs_of = {name: (vocabs, batches) for name in MODELS}  # each model's vocabularies and batches
    if chars:
        for encoder in args.char_encoders:
            WITH_CHARS.update({f"{row} + {encoder} chars": (row, encoder) for row in CHAR_ROWS})
        with_chars = training_batches(train, args.steps, args.seed, chars=True)
        inputs_of.update({name: with_chars for name in WITH_CHARS})
    test_sentences = [s.words for s in test]
    test_tokens = sum(len(s) for s in test_sentences)
    print(
        f"{platform.node() or 'machine'}: {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s), device {device}; EWT: {len(batches)} training batches "
        f"({sum(int(b.mask.sum()) for b in batches):,} tokens), test {test_tokens:,} tokens",
        flush=True,
    )

    results: dict = {"models": {}, "scaling": {}, "threads": torch.get_num_threads(), "device": str(device)}
    if chars:
        results["chars"] = {"dim": chars[0], "size": chars[1], "encoders": args.char_encoders}
    states = {}
    names = [*MODELS, *[GENERIC] * args.generic_loop, *(WITH_CHARS if chars else ())]
    inputs_of[GENERIC] = (vocabs, batches)
    for name in names:
        config = config_for(name, chars or (0, 30))
        torch.manual_seed(args.seed)
        model = EasyFirstTagger(config.model, config.loss, inputs_of[name][0]).to(device)
        if name == GENERIC:
            model.backend = "reference"  # the model's own modules (easyfirst.backends.chooser)
        states[name] = (config, model, make_optimizer(config.train.optimizer, config.train.lr, model))
        results["models"][name] = {"train_tokens": 0, "train_wall": 0.0, "train_cpu": 0.0}
    # training: the models take turns, each round a share of the same batches
    if batches:
        for r in range(args.rounds):
            for name, (config, model, optimizer) in states.items():
                own = inputs_of[name][1]  # the same batches, with characters for the char rows
                share = own[r * len(own) // args.rounds : (r + 1) * len(own) // args.rounds]
                model.train()
                moved = [b.to(device) for b in share]
                sync()
                start = clocks()
                for batch in moved:
                    train_step(model, optimizer, batch, config)
                sync()
                wall, cpu = since(start)
                row = results["models"][name]
                row["train_tokens"] += sum(int(b.mask.sum()) for b in share)
                row["train_wall"] += wall
                row["train_cpu"] += cpu
    # tagging EWT test, twice each, taking turns; the faster pass counts
    for name in states:
        results["models"][name].update(tag_wall=float("inf"), tag_cpu=float("inf"))
    for _ in range(2):
        for name, (config, model, _) in states.items():
            model.eval()
            tagger = Tagger(model, config, inputs_of[name][0], device)
            sync()
            start = clocks()
            tagger.tag(test_sentences, processes=tagging_processes())  # every core, as before #45
            sync()
            wall, cpu = since(start)
            row = results["models"][name]
            row["tag_wall"], row["tag_cpu"] = min(row["tag_wall"], wall), min(row["tag_cpu"], cpu)
    base = results["models"]["bilstm"]
    for row in results["models"].values():
        for clock in ("wall", "cpu"):
            if row["train_tokens"]:
                row[f"train_tok_s_{clock}"] = row["train_tokens"] / row[f"train_{clock}"]
            row[f"tag_tok_s_{clock}"] = test_tokens / row[f"tag_{clock}"]
    for row in results["models"].values():
        for key in [k for k in row if k.endswith(("_tok_s_wall", "_tok_s_cpu"))]:
            row[key.replace("_tok_s_", "_ratio_")] = row[key] / base[key]

    # scaling: time per token against sentence length (tagging)
    for name in ("bilstm", "NEF-F, N = 5", "NEF-F, N = L"):
        config, model, _ = states[name]
        model.eval()
        per_length = {}
        with torch.inference_mode():
            warm = collate([encode(vocabs, synthetic(vocabs, 10, 0))], [0]).to(device)
            model(warm, plan=plan_for(model, warm.mask, training=False))  # warm up
            for length in LENGTHS:
                count = max(1, 2000 // length)
                sentences = [synthetic(vocabs, length, k) for k in range(count)]
                batch = collate([encode(vocabs, s) for s in sentences], list(range(count))).to(device)
                sync()
                plan = plan_for(model, batch.mask, training=False)  # the backends tagging takes
                start = clocks()
                model(batch, plan=plan)
                sync()
                wall, cpu = since(start)
                per_length[str(length)] = {
                    "sentences": count,
                    "us_per_token_wall": 1e6 * wall / (count * length),
                    "us_per_token_cpu": 1e6 * cpu / (count * length),
                }
        results["scaling"][name] = per_length

    # memory, each in a fresh process
    if not args.no_memory:
        inputs = Path(os.environ.get("TMPDIR", "/tmp")) / f"easyfirst-speed-{os.getpid()}.json"
        by_length = sorted(train, key=lambda s: len(s.words))
        inputs.write_text(
            json.dumps(
                {
                    "vocab": vocabs.to_json(),
                    "longest": [(s.words, s.tags) for s in by_length[-64:]],
                    "shortest": [(s.words, s.tags) for s in by_length[:16]],
                    "test": test_sentences,
                }
            )
        )
        try:
            for name in MODELS:
                row = results["models"][name]
                if args.steps:
                    row["train_memory"] = measure_memory(args, inputs, name, "train")
                row["tag_memory"] = measure_memory(args, inputs, name, "tag")
            long = measure_memory(args, inputs, "NEF-F, N = L", "long", 1000)
            long["under_2_gib"] = long["peak_bytes"] < 2 * GiB
            results["one_1000_word_sentence"] = long
        finally:
            inputs.unlink(missing_ok=True)

    report(results, args)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


def report(results: dict, args: argparse.Namespace) -> None:
    clock = "cpu"
    memory = "GPU MiB allocated" if results["device"].startswith("cuda") else "MiB RSS"
    print(
        f"\nthroughput, tokens per second of {clock.upper()} time (wall-clock in brackets); ratios to bilstm\n"
    )
    print(
        f"| model | train tok/s | × bilstm | tag tok/s (EWT test) | × bilstm | peak train {memory} | peak tag {memory} |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, row in results["models"].items():
        train = (
            f"{row[f'train_tok_s_{clock}']:,.0f} ({row['train_tok_s_wall']:,.0f}) | {row[f'train_ratio_{clock}']:.2f} ({row['train_ratio_wall']:.2f})"
            if row["train_tokens"]
            else "- | -"
        )
        mem_train = mib(row["train_memory"]["used_bytes"]) if "train_memory" in row else "-"
        mem_tag = mib(row["tag_memory"]["used_bytes"]) if "tag_memory" in row else "-"
        print(
            f"| {name} | {train} | {row[f'tag_tok_s_{clock}']:,.0f} ({row['tag_tok_s_wall']:,.0f}) | "
            f"{row[f'tag_ratio_{clock}']:.2f} ({row['tag_ratio_wall']:.2f}) | {mem_train} | {mem_tag} |"
        )
    print("\ntagging time per token (µs of CPU time, wall-clock in brackets) against sentence length L\n")
    print("| model | " + " | ".join(f"L = {n}" for n in LENGTHS) + " |")
    print("|---|" + "---:|" * len(LENGTHS))
    for name, per in results["scaling"].items():
        cells = [
            f"{per[str(n)]['us_per_token_cpu']:.1f} ({per[str(n)]['us_per_token_wall']:.1f})" for n in LENGTHS
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if "one_1000_word_sentence" in results:
        long = results["one_1000_word_sentence"]
        print(
            f"\none 1,000-word sentence, NEF-F N = L: peak {memory} {mib(long['peak_bytes'])} "
            f"({mib(long['used_bytes'])} for tagging it), under 2 GiB: {long['under_2_gib']}"
        )
    f = results["models"]["NEF-F, N = L"]
    if "train_ratio_cpu" in f:
        print(
            f"target NEF-F N = L training >= 0.4 x bilstm: {f['train_ratio_cpu']:.2f} (CPU time), {f['train_ratio_wall']:.2f} (wall)"
        )
    print(
        f"target NEF-F N = L tagging >= 10,000 tok/s: {f['tag_tok_s_cpu']:,.0f} (CPU time), {f['tag_tok_s_wall']:,.0f} (wall)"
    )


if __name__ == "__main__":
    main()
