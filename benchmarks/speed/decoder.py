"""The sketch decoder alone: the compiled step loop (backend ``numba``) against the generic one (the
reference, SketchDecoder.forward), in one run. (Until backend ``fused`` was removed, this compared its
batched csoftmax loop with the generic one: docs/studies/speed.md's table of that day.)

    python benchmarks/speed/decoder.py [--lengths 17 25 50] [--batch 16] [--rounds 7] [--threads 1]

SketchDecoder(100) as in the tagger (D_s = D_z = 50, w = 2, csoftmax), B sentences of L words, N = L
steps, random encoder states. Per configuration (NEF-F / NEF-S; training = forward + backward of
sum(S) + sum(history); tagging = forward under torch.inference_mode), the two loops take turns for
``--rounds`` rounds of ``--repeats`` calls each; the best round of each counts (CPU time of this process,
`time.process_time`). Prints µs per sketch step and the generic / numba ratio.
"""

from __future__ import annotations

import argparse
import functools
import time

import torch

from easyfirst.backends.chooser import REFERENCE
from easyfirst.backends.compiled import NUMBA
from easyfirst.model.sketch import SketchDecoder


def best_time(function, rounds: int, repeats: int) -> list[float]:
    """CPU seconds per call of each round (after one warm-up call)."""
    times = []
    for _ in range(rounds):
        function()
        start = time.process_time()
        for _ in range(repeats):
            function()
        times.append((time.process_time() - start) / repeats)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=[17, 25, 50])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); µs of CPU time per sketch step\n")
    print("| model | L | job | numba | generic | generic / numba |")
    print("|---|---:|---|---:|---:|---:|")
    for full_state in (True, False):
        for length in args.lengths:
            torch.manual_seed(0)
            decoder = SketchDecoder(100, full_state=full_state)
            states = torch.randn(args.batch, length, 100, requires_grad=True)
            mask = torch.ones(args.batch, length, dtype=torch.bool)

            def train(backend, decoder=decoder, states=states, mask=mask) -> None:
                sketch, history = backend.decoder(decoder, states, mask, None, None, True)
                (sketch.sum() + history.sum()).backward()

            def tag(backend, decoder=decoder, states=states, mask=mask) -> None:
                with torch.inference_mode():
                    backend.decoder(decoder, states, mask, None, None, True)

            for job, function in (("train", train), ("tag", tag)):
                best = {True: float("inf"), False: float("inf")}
                for _ in range(args.rounds):  # the two loops take turns
                    for compiled, backend in ((True, NUMBA), (False, REFERENCE)):
                        run = functools.partial(function, backend)
                        best[compiled] = min(best[compiled], *best_time(run, 1, args.repeats))
                per_step = {compiled: 1e6 * t / length for compiled, t in best.items()}
                print(
                    f"| {'NEF-F' if full_state else 'NEF-S'} | {length} | {job} | {per_step[True]:.0f} | "
                    f"{per_step[False]:.0f} | {per_step[False] / per_step[True]:.2f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
