"""Does dynamic INT8 quantization pay for tagging? (issue #46, item 2) en-upos on UD English EWT test, one
core, float32 against int8 variants, in turns, in one process.

    python benchmarks/speed/int8.py --rounds 5 --json benchmarks/results/int8-cpu-2core-shared.json

Every variant tags EWT test's gold tokens through ``Tagger.tag`` (one process, one torch thread, the
same batches); the int8 ones with the model's modules replaced by torch's dynamically quantized ones
(``torch.ao.quantization.quantize_dynamic``: int8 weights, activations quantized on the fly per call)
and the backends fixed per variant:

- ``float32``: the model as shipped, the chooser's backends;
- ``int8 reference``: ``quantize_dynamic`` of every ``nn.LSTM`` and ``nn.Linear`` (the BiLSTM, v of
  Eq. 2, the output layer), every part on the reference (the decoder's window convolutions have no
  dynamic int8 version and stay float32);
- ``int8 BiLSTM + output, numba decoder``: the BiLSTM and the output layer in int8, the decoder the
  float32 compiled loops (v stays float32: the loops read its weight).

The measurements of docs/studies/speed.md (benchmarks/results/int8-cpu-2core-shared.json) were taken
with backend ``fused``'s decoder, since removed, and a row with its sketch product in int8.

Reported: UPOS on the gold tags, the share of words whose tag differs from float32's, and words per
CPU second (``time.process_time``, best and median of the rounds; each ratio to float32 within the run).
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import copy  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic  # noqa: E402

import easyfirst.tagging.pool as pool_module  # noqa: E402
from easyfirst import Tagger  # noqa: E402
from easyfirst.backends.chooser import REFERENCE, Plan  # noqa: E402
from easyfirst.backends.compiled import NUMBA  # noqa: E402
from easyfirst.data.conllu import read_conllu  # noqa: E402

TEST = "ud/UD_English-EWT/en_ewt-ud-test.conllu"
warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.ao.quantization's notice
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")


@contextmanager
def running(plan: Plan | None):
    """Tagging with ``plan`` for every batch (None: the chooser's)."""
    chooser = pool_module.plan_for
    if plan is not None:
        pool_module.plan_for = lambda model, mask, training: plan
    try:
        yield
    finally:
        pool_module.plan_for = chooser


def variants(model: str) -> list[tuple[str, Tagger, Plan | None]]:
    """(name, tagger, plan) of each variant."""

    def tagger(spec) -> Tagger:
        loaded = Tagger.load(model)
        loaded.processes = 1
        if spec is not None:
            loaded.model = quantize_dynamic(copy.deepcopy(loaded.model), spec, dtype=torch.qint8)
        return loaded

    some = {"encoder": per_channel_dynamic_qconfig, "output": per_channel_dynamic_qconfig}
    return [
        ("float32", tagger(None), None),
        ("int8 reference", tagger({nn.LSTM, nn.Linear}), Plan(REFERENCE, REFERENCE)),
        ("int8 BiLSTM + output, numba decoder", tagger(some), Plan(REFERENCE, NUMBA)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-m", "--model", default="en-upos", help="model name or folder (default en-upos)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = Path(os.environ.get("EASYFIRST_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    sentences = read_conllu(data / TEST)
    words, gold = [s.words for s in sentences], [t for s in sentences for t in s.tags]
    count = len(gold)
    runs = variants(args.model)
    results: dict[str, dict] = {name: {"cpu": []} for name, *_ in runs}
    with torch.inference_mode():
        for name, tagger, plan in runs:  # warm-up, and the tags
            with running(plan):
                results[name]["tags"] = [t for tagged in tagger.tag(words) for t in tagged.tags]
    for r in range(args.rounds):
        for name, tagger, plan in runs if r % 2 == 0 else runs[::-1]:
            with running(plan):
                start = time.process_time()
                tagger.tag(words)
                results[name]["cpu"].append(time.process_time() - start)
    base = results["float32"]
    print(f"EWT test, {count:,} gold tokens; {args.rounds} rounds, one core (words per CPU second)")
    print(f"{'variant':<52} {'UPOS':>7} {'≠ float32':>9} {'best':>8} {'median':>8} {'× float32':>9}")
    tagged = {name: r.pop("tags") for name, r in results.items()}
    for name, r in results.items():
        tags = tagged[name]
        r["upos"] = sum(t == g for t, g in zip(tags, gold, strict=True)) / count
        r["differ_from_float32"] = sum(t != b for t, b in zip(tags, tagged["float32"], strict=True)) / count
        r["words_per_cpu_second"] = count / min(r["cpu"])
        r["median_words_per_cpu_second"] = count / statistics.median(r["cpu"])
    for name, r in results.items():
        r["ratio_to_float32"] = r["median_words_per_cpu_second"] / base["median_words_per_cpu_second"]
        print(
            f"{name:<52} {100 * r['upos']:7.2f} {100 * r['differ_from_float32']:8.2f}% "
            f"{r['words_per_cpu_second']:8,.0f} {r['median_words_per_cpu_second']:8,.0f} {r['ratio_to_float32']:9.2f}"
        )
    if args.json:
        meta = {
            "words": count,
            "rounds": args.rounds,
            "model": args.model,
            "load": os.getloadavg(),
            "torch": torch.__version__,
            "quantized_engine": torch.backends.quantized.engine,
            "machine": platform.processor() or platform.machine(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        args.json.write_text(json.dumps({"meta": meta, "variants": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
