"""Forward+backward time of the constrained transforms (csoftmax, and csparsemax where this version has
it) against torch.softmax and entmax's sparsemax, as ratios measured in one run.

    python benchmarks/speed/transforms.py [--repeats 100] [--rounds 7] [--distinct 1] [--threads 1] [--json out.json]

Time is the CPU time of the benchmarking thread (``time.thread_time``), so that other jobs on a shared
machine do not inflate it; the transforms take turns in each round and the best round counts. The
budgets u are the ones the decoder produces: 1 − β after a random number of csoftmax steps.
With ``--distinct 1`` (the default) every call sees the same scores, which lets the CPU (most likely
its branch predictor) learn each row's sort, and every transform here but softmax sorts: sorting looks
cheaper than in a decoder. ``--distinct N`` takes N different score tensors in turn, as a decoder does.
Target (issue 8): csoftmax ≤ 1.5 × sparsemax at (64, 50).
"""

from __future__ import annotations

import argparse
import json
import time

import entmax
import torch

from easyfirst.ops import constrained
from easyfirst.ops.constrained import csoftmax

SHAPES = [(32, 25), (64, 50), (64, 100), (16, 400)]


def budget_like_the_decoder(batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """u = 1 − β after a random number of csoftmax steps, as the decoder produces it."""
    beta = torch.zeros(batch, length)
    for _ in range(int(torch.randint(0, length, (1,), generator=generator))):
        beta = beta + csoftmax(torch.randn(batch, length, generator=generator), (1 - beta).clamp_min(0))
    return (1 - beta).clamp_min(0)


def transforms(u: torch.Tensor) -> dict:
    """name → z ↦ α; the constrained ones read the budgets u (csparsemax only once it exists)."""
    found = {
        "softmax": lambda z: torch.softmax(z, -1),
        "sparsemax": lambda z: entmax.sparsemax(z, -1),
        "csoftmax": lambda z: csoftmax(z, u),
    }
    if hasattr(constrained, "csparsemax"):
        found["csparsemax"] = lambda z: constrained.csparsemax(z, u)
    return found


def cpu_seconds(functions: dict, zs: list[torch.Tensor], repeats: int, rounds: int) -> dict[str, float]:
    """Best-of-``rounds`` CPU seconds per forward+backward call, the functions interleaved per round,
    each call on the next of the score tensors ``zs`` (all of one shape)."""
    grad = torch.randn_like(zs[0])
    best = dict.fromkeys(functions, float("inf"))
    for fn in functions.values():  # warm up
        for i in range(5):
            fn(zs[i % len(zs)]).backward(grad)
    for _ in range(rounds):
        for name, fn in functions.items():
            start = time.thread_time()
            for i in range(repeats):
                z = zs[i % len(zs)]
                z.grad = None
                fn(z).backward(grad)
            best[name] = min(best[name], (time.thread_time() - start) / repeats)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=100, help="calls per timed block")
    parser.add_argument("--rounds", type=int, default=7, help="timed blocks per transform (best counts)")
    parser.add_argument(
        "--distinct", type=int, default=1, help="different score tensors per shape, taken in turn"
    )
    parser.add_argument("--json", default=None, help="also write the rows here")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    names = list(transforms(torch.ones(1, 1)))
    constrained_names = [n for n in names if n.startswith("c")]
    rows = []
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.distinct} distinct score "
        "tensor(s) per shape; forward+backward, µs of CPU time per call (best of rounds)"
    )
    header = ["(batch, length)", *names] + [
        f"{c} / {b}" for c in constrained_names for b in ("softmax", "sparsemax")
    ]
    print("| " + " | ".join(header) + " |")
    print("|---|" + "---:|" * (len(header) - 1))
    for batch, length in SHAPES:
        zs = [torch.randn(batch, length, generator=generator).requires_grad_() for _ in range(args.distinct)]
        u = budget_like_the_decoder(batch, length, generator)
        times = cpu_seconds(transforms(u), zs, args.repeats, args.rounds)
        row = {"batch": batch, "length": length, "microseconds": {k: v * 1e6 for k, v in times.items()}}
        for c in constrained_names:
            for b in ("softmax", "sparsemax"):
                row[f"{c}_over_{b}"] = times[c] / times[b]
        rows.append(row)
        cells = [f"({batch}, {length})", *(f"{row['microseconds'][n]:.0f}" for n in names)]
        cells += [f"{row[f'{c}_over_{b}']:.2f}" for c in constrained_names for b in ("softmax", "sparsemax")]
        print("| " + " | ".join(cells) + " |")
    target = next(r for r in rows if (r["batch"], r["length"]) == (64, 50))["csoftmax_over_sparsemax"]
    print(
        f"target csoftmax <= 1.5 x sparsemax at (64, 50): {target:.2f} ({'met' if target <= 1.5 else 'NOT met'})"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {
                    "threads": torch.get_num_threads(),
                    "torch": torch.__version__,
                    "distinct": args.distinct,
                    "rows": rows,
                },
                out,
                indent=2,
            )


if __name__ == "__main__":
    main()
