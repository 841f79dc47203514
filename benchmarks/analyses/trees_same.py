"""Do two checkouts compute the same thing? Model folders written by the old code, tagged by each tree,
byte for byte; and a training at ``--workers 1`` on the bundled EWT sample, bit for bit (issue #45's
acceptance: "model files written before the change load and tag byte-identically after it; training at
`--workers 1` repeats bit for bit as before on the EWT sample").

    python benchmarks/analyses/trees_same.py OLD_TREE NEW_TREE [--model RUN ...] [--out DIR]

Each tree runs its own code (PYTHONPATH, one torch thread) as a fresh ``python -m easyfirst`` process:

- the old tree trains a small QE model (the bundled sample with gap tags, 2 epochs), then both trees tag
  UD English EWT test with the bundled en-upos model (the old tree's own copy, so both read the same
  folder), the QE sample with that QE model, and each ``--model RUN`` (a model folder of yours, on the
  test file its config.json names); the outputs are compared byte for byte;
- each tree trains POS on the bundled sample for 3 epochs, ``--workers 1 --seed 1``: the epochs' losses
  and every tensor of model.pt must be equal.

Prints one line per comparison and exits 1 if any differs. Reads EWT through EASYFIRST_DATA.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch


def easyfirst(tree: Path, *arguments: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "easyfirst", *map(str, arguments)], cwd=tree, env=env, capture_output=True
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{tree}: easyfirst {' '.join(map(str, arguments))} failed:\n{done.stderr.decode()[-2000:]}"
        )


def tagged(tree: Path, model: Path, source: Path, out: Path) -> list[Path]:
    """The files ``easyfirst tag`` wrote for ``source`` (QE writes a second file beside the first)."""
    out.parent.mkdir(parents=True)
    easyfirst(tree, "tag", source, "-m", model, "-o", out)
    return sorted(out.parent.glob(out.name + "*"))


def same_training(old: Path, new: Path, sample: Path, scratch: Path) -> bool:
    runs = []
    for tree in (old, new):
        run = scratch / f"train-{len(runs)}"
        easyfirst(
            tree,
            "train",
            "--task",
            "pos",
            "--train",
            sample,
            "--dev",
            sample,
            "--epochs",
            3,
            "--workers",
            1,
            "--seed",
            1,
            "-o",
            run,
        )
        metrics = json.loads((run / "metrics.json").read_text())
        runs.append(([e["loss"] for e in metrics["epochs"]], torch.load(run / "model.pt", weights_only=True)))
    (losses_a, state_a), (losses_b, state_b) = runs
    same = losses_a == losses_b and state_a.keys() == state_b.keys()
    return same and all(torch.equal(state_a[k], state_b[k]) for k in state_a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument(
        "--model", type=Path, action="append", default=[], help="a model folder written by the old code"
    )
    parser.add_argument("--out", type=Path, help="keep the outputs here (default: a temporary folder)")
    args = parser.parse_args()
    old, new = args.old.resolve(), args.new.resolve()
    data = Path(os.environ.get("EASYFIRST_DATA", "../shared/data")).resolve()
    with tempfile.TemporaryDirectory() as temporary:
        scratch = args.out or Path(temporary)
        scratch.mkdir(parents=True, exist_ok=True)
        qe_sample = old / "data" / "samples" / "qe-en-de-gaps"
        qe_run = scratch / "qe-old"
        easyfirst(
            old,
            "train",
            "--task",
            "qe",
            "--train",
            qe_sample,
            "--dev",
            qe_sample,
            "--epochs",
            2,
            "--workers",
            1,
            "-o",
            qe_run,
        )
        cases = [
            (
                "en-upos on EWT test",
                old / "easyfirst" / "resources" / "en_ewt_upos",
                data / "ud" / "UD_English-EWT" / "en_ewt-ud-test.conllu",
            ),
            ("QE (gaps, source tags) on the sample", qe_run, qe_sample),
        ]
        for model in args.model:
            config = json.loads((model / "config.json").read_text())
            cases.append((f"{model.name} on its test file", model, Path(config["data"]["test"])))
        differ = False
        for k, (name, model, source) in enumerate(cases):
            outputs = [
                tagged(tree, model, source, scratch / f"{side}-{k}" / "out")
                for side, tree in (("old", old), ("new", new))
            ]
            same = [p.name for p in outputs[0]] == [p.name for p in outputs[1]] and all(
                filecmp.cmp(a, b, shallow=False) for a, b in zip(*outputs, strict=True)
            )
            differ |= not same
            print(
                f"{'same bytes' if same else 'DIFFERENT'}: {name} ({', '.join(p.name for p in outputs[0])})"
            )
        same = same_training(old, new, old / "data" / "samples" / "en-sample.conllu", scratch)
        differ |= not same
        print(
            f"{'bit for bit' if same else 'DIFFERENT'}: POS training at --workers 1 on the sample (losses, model.pt)"
        )
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
