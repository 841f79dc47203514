"""Why WMT19 QE models overfit after one epoch, and which training setting helps: a study on a held-out
part of the WMT19 en-de *train* set, so that dev stays the evaluation set and is never tuned on.

    python benchmarks/analyses/qe19_heldout.py --split /tmp/qe19-heldout                       # make the split
    python benchmarks/analyses/qe19_heldout.py --name lr0.1 --model bilstm --epochs 4          # one setting
    python benchmarks/analyses/qe19_heldout.py --name lr0.02 --model bilstm --epochs 4 --set train.lr=0.02
    python benchmarks/analyses/qe19_heldout.py --report benchmarks/results/qe19-heldout       # the tables

The split (``--split DIR``, never inside the repo) is the last ``--heldout`` sentences (default 1,000) of
``$EASYFIRST_DATA/qe/wmt19-en-de/train`` as ``DIR/heldout.*`` and the others as ``DIR/train.*``, every
file of the prefix cut at the same lines. A setting is `easyfirst train --task qe`'s defaults (one torch
thread) with ``--model``, ``--seed`` and ``--set SECTION.KEY=VALUE`` changes, trained on DIR/train with
DIR/heldout as its dev set. After every epoch it records, besides the training loss (the weighted loss
the optimizer sees, dropout on):

- the same weighted loss on the held-out sentences (dropout off), and on a sample of the training
  sentences (every 12th, about 1,000) for the fit;
- the held-out and training-sample scores: F1-MULT of MT words, gaps, target (words and gaps pooled, the
  WMT19 score) and source words, with BAD precision, recall and the share of tags predicted BAD against
  the share that is BAD, to see whether the BAD class weights make the model over-predict BAD as it fits;
- with ``--every K``, also the held-out loss and target scores every K updates within the epochs (where
  the run would write its checkpoint: none is written), to see where within an epoch the peak lies.

Each setting's records go to ``OUT/NAME.json`` (default OUT ``benchmarks/results/qe19-heldout``), written
after every epoch; ``--report OUT`` prints the summary and per-epoch tables from them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

PARTS = ("words", "gaps", "target", "source")
SUFFIXES = (".src", ".mt", ".tags", ".source_tags", ".src-mt.alignments", ".pe", ".hter")
TRAIN_SAMPLE_EVERY = 12


def make_split(folder: Path, heldout: int) -> None:
    """DIR/train.* and DIR/heldout.*: the WMT19 train files cut before their last ``heldout`` lines."""
    source = Path(os.environ.get("EASYFIRST_DATA", "/work/shared/data")) / "qe" / "wmt19-en-de" / "train"
    folder.mkdir(parents=True, exist_ok=True)
    for suffix in SUFFIXES:
        lines = Path(f"{source}{suffix}").read_bytes().splitlines(keepends=True)
        (folder / f"train{suffix}").write_bytes(b"".join(lines[:-heldout]))
        (folder / f"heldout{suffix}").write_bytes(b"".join(lines[-heldout:]))
    print(f"{folder}/train.* ({len(lines) - heldout} sentences) and {folder}/heldout.* ({heldout})")


def bad_counts(gold: list[list[str]], predicted: list[list[str]]) -> dict:
    """BAD precision, recall and F1, the F1-MULT, and the shares of tags predicted and gold BAD."""
    pairs = [(g, p) for gs, ps in zip(gold, predicted, strict=True) for g, p in zip(gs, ps, strict=True)]
    tp = sum(g == p == "BAD" for g, p in pairs)
    predicted_bad = sum(p == "BAD" for _, p in pairs)
    gold_bad = sum(g == "BAD" for g, _ in pairs)
    tn = len(pairs) - predicted_bad - gold_bad + tp
    f1_bad = 2 * tp / (predicted_bad + gold_bad) if tp else 0.0
    f1_ok = 2 * tn / (2 * len(pairs) - predicted_bad - gold_bad) if tn else 0.0
    return {
        "f1_mult": f1_ok * f1_bad,
        "precision_bad": tp / predicted_bad if predicted_bad else 0.0,
        "recall_bad": tp / gold_bad if gold_bad else 0.0,
        "predicted_bad": predicted_bad / len(pairs),
        "gold_bad": gold_bad / len(pairs),
    }


def scores(run, items, sentences) -> dict:
    """Per part, :func:`bad_counts` of the model's tags for ``sentences``; and ``loss``, the training
    loss (class weights included) with dropout off."""
    import torch

    from easyfirst.data.batching import iterate_batches
    from easyfirst.training.reporting import evaluate_sentences

    kept: dict = {}

    def score_words(gold, predicted):
        kept["words"] = (gold, predicted)
        return {"accuracy": 0.0, "tokens": 0}

    def score_heads(gold, predicted, heads):
        kept["gaps"] = ([s.gaps for s in gold], heads["gaps"])
        kept["source"] = ([s.source_tags for s in gold], heads["source_tags"])
        return {}

    model = run.model
    evaluate_sentences(model, run.vocabs, items, sentences, 256, run.device, score_words, score_heads)
    words, gaps = kept["words"], kept["gaps"]
    kept["target"] = tuple(
        [[*w, *g] for w, g in zip(*pair, strict=True)] for pair in zip(words, gaps, strict=True)
    )
    report = {part: bad_counts(*kept[part]) for part in PARTS}
    total, seen = 0.0, 0
    with torch.inference_mode():
        for batch in iterate_batches(items, 64):
            batch = batch.to(run.device)
            out, _, head_scores = model(batch, heads=True)
            n = int(batch.mask.sum())
            total += (
                model.loss(out, batch.tags, batch.mask) + model.head_loss(head_scores, batch)
            ).item() * n
            seen += n
    report["loss"] = total / seen
    return report


def study(args: argparse.Namespace) -> None:
    """Train one setting on SPLIT/train, recording the held-out and training-sample scores per epoch."""
    from rich.console import Console

    import easyfirst.training.loop
    from easyfirst.config import Config
    from easyfirst.data.batching import encode
    from easyfirst.training import distributed
    from easyfirst.training.epochs import train_epoch
    from easyfirst.training.loop import prepare_run
    from easyfirst.training.reporting import RunLog

    config = Config.for_task("qe")
    config.data.train, config.data.dev = str(args.split / "train"), str(args.split / "heldout")
    config.model.model = args.model  # bilstm: no sketch steps (Config.resolved)
    config.train.epochs, config.train.seed, config.train.threads = args.epochs, args.seed, 1
    config.train.checkpoint_every = args.every
    for assignment in args.set:
        config.set_dotted(assignment)
    config = config.resolved("command line")
    run_dir = args.runs / args.name
    run_dir.mkdir(parents=True, exist_ok=True)
    group, device = distributed.start("cpu")
    log = RunLog(Console(stderr=True), run_dir / "train.log")
    run = prepare_run(config, run_dir, __import__("torch").device(device), log, False, group)
    heldout = [
        encode(run.vocabs, s.words, s.tags, s.extra, run.task.targets(s), heads=run.model.outputs)
        for s in run.splits.dev
    ]
    sample = list(range(0, len(run.train_items), TRAIN_SAMPLE_EVERY))
    record = {
        "name": args.name,
        "model": args.model,
        "set": args.set,
        "seed": args.seed,
        "train_sentences": len(run.train_items),
        "heldout_sentences": len(heldout),
        "train_sample_sentences": len(sample),
        "epochs": [],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    within: list[dict] = []

    def evaluate_within(run, epoch, step, *_):  # in place of the checkpoint every --every updates
        held = scores(run, heldout, run.splits.dev)
        within.append({"step": step, "loss": held["loss"], "target": held["target"]})
        run.model.train()

    easyfirst.training.loop.save_checkpoint = evaluate_within
    for epoch in range(1, args.epochs + 1):
        within.clear()
        seconds = train_epoch(run, epoch)
        row = {
            "epoch": epoch,
            "within": list(within),
            "train_loss": run.progress.loss_sum / run.progress.seen,
            "seconds": seconds,
            "heldout": scores(run, heldout, run.splits.dev),
            "train_sample": scores(
                run, [run.train_items[i] for i in sample], [run.train_sents[i] for i in sample]
            ),
        }
        run.progress.loss_sum, run.progress.seen = 0.0, 0
        record["epochs"].append(row)
        (args.out / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
        h, f = row["heldout"], row["train_sample"]
        print(
            f"{time.strftime('%H:%M:%S')} {args.name} epoch {epoch}: train loss {row['train_loss']:.3f}, "
            f"held-out loss {h['loss']:.3f}, held-out target F1-MULT {100 * h['target']['f1_mult']:.2f} "
            f"(train sample {100 * f['target']['f1_mult']:.2f}), {seconds:.0f} s",
            flush=True,
        )


def report(folder: Path) -> str:
    """Markdown: per setting its best held-out epoch and lowest held-out loss; per setting and epoch the
    curves; and, for settings run with ``--every``, the held-out loss within the epochs."""
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    lines = [
        "| setting | model | --set | seed | held-out target F1-MULT: epoch 1 | best (epoch) | last | lowest "
        "held-out loss (epoch) | train-sample target F1-MULT, last epoch | best epoch's words / gaps / source "
        "F1-MULT |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in records:
        curve = [e["heldout"]["target"]["f1_mult"] for e in r["epochs"]]
        losses = [e["heldout"]["loss"] for e in r["epochs"]]
        best = max(range(len(curve)), key=curve.__getitem__)
        low = min(range(len(losses)), key=losses.__getitem__)
        h = r["epochs"][best]["heldout"]
        lines.append(
            f"| {r['name']} | {r['model']} | {' '.join(r['set']) or '(defaults)'} | {r['seed']} | "
            f"{100 * curve[0]:.2f} | {100 * curve[best]:.2f} ({best + 1}/{len(curve)}) | {100 * curve[-1]:.2f} | "
            f"{losses[low]:.3f} ({low + 1}) | {100 * r['epochs'][-1]['train_sample']['target']['f1_mult']:.2f} | "
            + " / ".join(f"{100 * h[part]['f1_mult']:.2f}" for part in ("words", "gaps", "source"))
            + " |"
        )
    lines += [
        "",
        "| setting | epoch | train loss | held-out loss | train-sample target F1-MULT | held-out target "
        "F1-MULT | held-out BAD predicted / gold (target) | BAD precision | BAD recall | gaps P / R |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        for e in r["epochs"]:
            h, t, g = e["heldout"], e["heldout"]["target"], e["heldout"]["gaps"]
            lines.append(
                f"| {r['name']} | {e['epoch']} | {e['train_loss']:.3f} | {h['loss']:.3f} | "
                f"{100 * e['train_sample']['target']['f1_mult']:.2f} | {100 * t['f1_mult']:.2f} | "
                f"{100 * t['predicted_bad']:.1f}% / {100 * t['gold_bad']:.1f}% | {100 * t['precision_bad']:.1f} | "
                f"{100 * t['recall_bad']:.1f} | {100 * g['precision_bad']:.1f} / {100 * g['recall_bad']:.1f} |"
            )
    within = [r for r in records if any(e.get("within") for e in r["epochs"])]
    if within:
        lines += [
            "",
            "| setting | held-out loss (target F1-MULT) at epoch:update, within the epochs (epoch ends in the table above) |",
            "|---|---|",
        ]
        for r in within:
            points = [
                f"{e['epoch']}:{w['step']}: {w['loss']:.3f} ({100 * w['target']['f1_mult']:.1f})"
                for e in r["epochs"]
                for w in e.get("within", [])
            ]
            lines.append(f"| {r['name']} | " + ", ".join(points) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", type=Path, default=Path("/tmp/qe19-heldout"), help="the split's folder")
    parser.add_argument("--heldout", type=int, default=1000, help="held-out sentences (with --split alone)")
    parser.add_argument("--name", help="the setting's name: trains it (OUT/NAME.json)")
    parser.add_argument("--model", default="bilstm", choices=["bilstm", "nef-s", "nef-f"])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument(
        "--every", type=int, default=0, metavar="K", help="also score the held-out set every K updates"
    )
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/qe19-heldout"))
    parser.add_argument("--runs", type=Path, default=Path("runs/qe19-heldout"), help="run folders")
    parser.add_argument("--report", type=Path, metavar="OUT", help="print the tables from OUT/*.json")
    args = parser.parse_args()
    if args.report:
        print(report(args.report))
    elif args.name:
        if not (args.split / "train.mt").is_file():
            make_split(args.split, args.heldout)
        study(args)
    else:
        make_split(args.split, args.heldout)


if __name__ == "__main__":
    main()
