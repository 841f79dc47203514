"""Does dynamic INT8 quantization pay for tagging? (issue #46, item 2) en-upos on UD English EWT test, one
core, float32 against int8 variants, in turns, in one process.

    python benchmarks/speed/int8.py --rounds 5 --json benchmarks/results/int8-cpu-2core-shared.json

Every variant tags EWT test's gold tokens through ``Tagger.tag`` (one process, one torch thread, the
same batches); the int8 ones with the model's modules replaced by torch's dynamically quantized ones
(``torch.ao.quantization.quantize_dynamic``: int8 weights, activations quantized on the fly per call)
and the backends fixed per variant:

- ``float32``: the model as shipped, the chooser's backends (torch's LSTM; the ``fused`` csoftmax loop);
- ``int8 reference``: ``quantize_dynamic`` of every ``nn.LSTM`` and ``nn.Linear`` (the BiLSTM, v of
  Eq. 2, the output layer), every part on the reference (the decoder's window convolutions have no
  dynamic int8 version and stay float32);
- ``int8 BiLSTM + output, fused``: the BiLSTM and the output layer in int8, the decoder the float32
  fused loop (v stays float32: the loop reads its weight);
- ``... + int8 sketch products``: the same, and the fused loop's one product per sketch step, 2a =
  fixed + windows(Sⁿ⁻¹)·2W (the decoder's largest arithmetic), by a dynamically quantized linear map
  with per-channel int8 weights (an experiment: the loop's ``torch.addmm`` is replaced here, not in
  the package).

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

import easyfirst.backends.fused as fused_module  # noqa: E402
import easyfirst.tagging.pool as pool_module  # noqa: E402
from easyfirst import Tagger  # noqa: E402
from easyfirst.backends.chooser import REFERENCE, Plan  # noqa: E402
from easyfirst.backends.fused import FUSED  # noqa: E402
from easyfirst.data.conllu import read_conllu  # noqa: E402

TEST = "ud/UD_English-EWT/en_ewt-ud-test.conllu"
warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.ao.quantization's notice
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*")


class Int8Products:
    """``torch`` for easyfirst.backends.fused, except ``addmm``, the loop's sketch product, which runs
    as a dynamically quantized linear map of the weight it is given (prepared once per batch)."""

    def __init__(self) -> None:
        self.weight: torch.Tensor | None = None
        self.linear: nn.Module | None = None

    def __getattr__(self, name: str):
        return getattr(torch, name)

    def addmm(self, fixed: torch.Tensor, cols: torch.Tensor, weight: torch.Tensor, *, out: torch.Tensor):
        if weight is not self.weight:  # 2W of a new batch (the loop makes it once per call)
            linear = nn.Linear(weight.shape[0], weight.shape[1], bias=False)
            linear.weight.data = weight.t().contiguous()
            held = nn.Sequential(linear)
            self.linear = quantize_dynamic(held, {"0": per_channel_dynamic_qconfig})[0]
            self.weight = weight
        return torch.add(self.linear(cols), fixed, out=out)


@contextmanager
def running(plan: Plan | None, products: Int8Products | None):
    """Tagging with ``plan`` for every batch (None: the chooser's) and the fused loop's products."""
    chooser, maths = pool_module.plan_for, fused_module.torch
    if plan is not None:
        pool_module.plan_for = lambda model, mask, training: plan
    if products is not None:
        fused_module.torch = products
    try:
        yield
    finally:
        pool_module.plan_for, fused_module.torch = chooser, maths


def variants(model: str) -> list[tuple[str, Tagger, Plan | None, Int8Products | None]]:
    """(name, tagger, plan, products) of each variant."""

    def tagger(spec) -> Tagger:
        loaded = Tagger.load(model)
        loaded.processes = 1
        if spec is not None:
            loaded.model = quantize_dynamic(copy.deepcopy(loaded.model), spec, dtype=torch.qint8)
        return loaded

    some = {"encoder": per_channel_dynamic_qconfig, "output": per_channel_dynamic_qconfig}
    return [
        ("float32", tagger(None), None, None),
        ("int8 reference", tagger({nn.LSTM, nn.Linear}), Plan(REFERENCE, REFERENCE), None),
        ("int8 BiLSTM + output, fused", tagger(some), Plan(REFERENCE, FUSED), None),
        (
            "int8 BiLSTM + output, fused + int8 sketch products",
            tagger(some),
            Plan(REFERENCE, FUSED),
            Int8Products(),
        ),
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
        for name, tagger, plan, products in runs:  # warm-up, and the tags
            with running(plan, products):
                results[name]["tags"] = [t for tagged in tagger.tag(words) for t in tagged.tags]
    for r in range(args.rounds):
        for name, tagger, plan, products in runs if r % 2 == 0 else runs[::-1]:
            with running(plan, products):
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
