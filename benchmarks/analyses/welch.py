"""Two rows of the attention study side by side: their seeds' dev and test scores, the difference of the
means and Welch's t (unequal variances), read from the JSON that attention_study.py keeps.

    python benchmarks/analyses/welch.py pos-minilm pos-bilstm-minilm
    python benchmarks/analyses/welch.py ner-minilm ner-bilstm-crf-minilm --results DIR

A row's runs are ``ROW.json`` (seed 1) and ``ROW-seedK.json``. A difference claimed in the docs needs
five seeds a row (seed-to-seed spread on CoNLL-2003 is about 0.4 F1): the script says how many it found.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "paper"))
from attention_study import SCORES, task_of_result  # noqa: E402  (the study's own names for its scores)

RESULTS = Path(__file__).resolve().parents[1] / "results" / "attention-study"


def seeds(row: str, folder: Path) -> list[dict]:
    """The kept runs of ``row``, seed 1 first (``ROW.json``, then ``ROW-seedK.json`` by K)."""
    found = [folder / f"{row}.json"] if (folder / f"{row}.json").exists() else []
    found += sorted(folder.glob(f"{row}-seed*.json"), key=lambda p: int(p.stem.rsplit("seed", 1)[1]))
    return [json.loads(path.read_text(encoding="utf-8")) for path in found]


def welch(a: list[float], b: list[float]) -> tuple[float, float]:
    """Welch's t of mean(a) − mean(b) and its Welch–Satterthwaite degrees of freedom (two seeds a row at
    least)."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    t = (statistics.mean(a) - statistics.mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    return t, df


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("rows", nargs=2, help="two rows of the study (ROW, as in ROW.json)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the folder of the rows' JSON")
    args = parser.parse_args()
    runs = [seeds(row, args.results) for row in args.rows]
    for row, found in zip(args.rows, runs, strict=True):
        if len(found) < 2:
            raise SystemExit(f"{row}: {len(found)} run(s) in {args.results}; Welch's t needs two seeds a row")
    task = task_of_result(runs[0][0])
    print(f"{'':<26}" + "".join(f"{row:>29}" for row in args.rows) + f"{'difference':>12}{'t':>7}{'df':>6}")
    for key in (f"dev_{SCORES[task]}", f"test_{SCORES[task]}"):
        values = [[100 * run[key] for run in found] for found in runs]
        cells = "".join(
            f"{statistics.mean(v):>12.2f} ± {statistics.stdev(v):.2f} ({len(v)} seeds)" for v in values
        )
        t, df = welch(*values)
        difference = statistics.mean(values[0]) - statistics.mean(values[1])
        print(f"{key:<26}{cells}{difference:>+12.2f}{t:>7.2f}{df:>6.1f}")
    if min(map(len, runs)) < 5:
        print("fewer than five seeds in a row: no difference may be claimed from this")


if __name__ == "__main__":
    main()
