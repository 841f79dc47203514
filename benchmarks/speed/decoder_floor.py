"""Where the floor of the batched N = L decoder lies (issue #27, item 5): NEF-F, N = L at 16 sentences
per update against the BiLSTM, and the matrix products that the sketch loop cannot avoid, in one run.

    python benchmarks/speed/decoder_floor.py [--steps 120] [--rounds 3] [--threads 1] [--json FILE]
    python benchmarks/speed/decoder_floor.py --profile 70   # also torch.profiler's top operations of NEF-F

The same EWT training batches as `benchmarks/speed/speed.py` (16 sentences per update, length-bucketed, seed
1). In turns, for ``--rounds`` rounds: the BiLSTM's updates, NEF-F, N = L's updates, and the decoder's
**matrix products alone**: for each batch, the three products of every sketch step n ≥ 2 of
the batched csoftmax loop (backend `fused`, since removed) at the batch's shapes and memory layouts,
on random numbers (forward: 2a = fixed + windows(Sⁿ⁻¹) · 2W; backward: dSⁿ⁻¹ from daⁿ through the
flipped weight, and dW += daⁿᵀ · windows). Every other operation of the loop (tanh, csoftmax, its backward, the window copies) is left
out, so the products' time is a lower bound on what the decoder adds to the BiLSTM's update, and

    ratio ≤ t_BiLSTM / (t_BiLSTM + t_products)

bounds NEF-F, N = L's tokens/s against the BiLSTM's from above, however the rest of the loop is written.
Times are CPU seconds of this process (`time.process_time`), which a shared machine's other jobs
inflate less than wall-clock. Also printed: the products' arithmetic rate (GFLOP/s) beside that of
one large square product (about the most a core does), and the share of their rows × steps that
belong to a sentence within its own N_b = L_b steps (the rest is padding and the steps of a batch's
longest sentence).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from speed import config_for, load_ewt, train_step, training_batches

from easyfirst.config import Config
from easyfirst.data.batching import Batch
from easyfirst.model.tagger import EasyFirstTagger
from easyfirst.training.optim import make_optimizer

MODELS = ("bilstm", "NEF-F, N = L")


class Products:
    """The sketch loop's three matrix products per step n ≥ 2, for batches of one shape ``(B, L)``."""

    def __init__(self, size: int, length: int, sketch_dim: int, out: int, width: int) -> None:
        rows = size * length
        self.steps = length - 1  # N = L; step 1 reads S⁰ = 0 and has no product
        self.fixed = torch.randn(rows, out)
        self.cols = torch.randn(rows, width * sketch_dim)  # windows(Sⁿ⁻¹), contiguous as in the loop
        self.doubled = torch.randn(width * sketch_dim, out)  # 2W
        self.affine = torch.empty(rows, out)
        self.back = torch.randn(width * out, sketch_dim).t()  # the flipped weight, a transposed view
        self.d_cols = torch.randn(rows, width * out).t()  # d windows, a transposed view
        self.g_store = torch.empty(sketch_dim, rows)
        self.d_a = torch.randn(rows, out).t()
        self.d_flat = torch.zeros(out, width * sketch_dim)
        self.flops = 2 * self.steps * 3 * rows * width * sketch_dim * out  # three products, 2 per MAC

    def run(self) -> None:
        for _ in range(self.steps):
            torch.addmm(self.fixed, self.cols, self.doubled, out=self.affine)  # forward
            torch.mm(self.back, self.d_cols, out=self.g_store)  # dSⁿ⁻¹ (backward)
            self.d_flat.addmm_(self.d_a, self.cols)  # dW (backward)


def peak_gflop_s(size: int = 1536, repeats: int = 8) -> float:
    """The best rate of one large square product on this machine (the reference for the loop's)."""
    a, b, c = torch.randn(size, size), torch.randn(size, size), torch.empty(size, size)
    torch.mm(a, b, out=c)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        torch.mm(a, b, out=c)
        best = min(best, time.process_time() - start)
    return 2 * size**3 / best / 1e9


def useful_share(batch: Batch) -> tuple[int, int]:
    """(rows × steps within each sentence's own L_b words and N_b = L_b steps, rows × steps computed)."""
    lengths = batch.mask.sum(1).tolist()
    longest = batch.mask.shape[1]
    return sum(n * (n - 1) for n in lengths), len(lengths) * longest * (longest - 1)


def profile(job: tuple, batches: list[Batch]) -> None:
    """torch.profiler's operations of NEF-F, N = L's updates by self CPU time, and the products' share."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    config, model, optimizer = job
    with torch_profile(activities=[ProfilerActivity.CPU]) as trace:
        for batch in batches:
            train_step(model, optimizer, batch, config)
    events = trace.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    products = sum(
        e.self_cpu_time_total for e in events if e.key in ("aten::mm", "aten::addmm", "aten::addmm_")
    )
    print(events.table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=40))
    print(f"matrix products (aten::mm, addmm, addmm_): {100 * products / total:.0f}% of the self CPU time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=120, help="training updates per model")
    parser.add_argument("--rounds", type=int, default=3, help="turns the three jobs take")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--profile", type=int, default=0, help="profile NEF-F over this many more updates")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    defaults = Config()
    train, _ = load_ewt(defaults.data.max_train_length)
    vocabs, batches = training_batches(train, args.steps, args.seed)
    tokens = sum(int(b.mask.sum()) for b in batches)
    m = defaults.model.decoder
    out, width = m.attention_dim + m.sketch_dim, 2 * m.window + 1  # D_z + D_s, K
    products = [Products(*b.mask.shape, m.sketch_dim, out, width) for b in batches]
    models = {}
    for name in MODELS:
        config = config_for(name)
        torch.manual_seed(args.seed)
        model = EasyFirstTagger(config.model, config.loss, vocabs).train()
        models[name] = (config, model, make_optimizer(config.train.optimizer, config.train.lr, model))
        train_step(model, models[name][2], batches[0], config)  # warm-up (allocations, optimizer state)
    seconds = dict.fromkeys([*MODELS, "products"], 0.0)
    for r in range(args.rounds):
        share = slice(r * len(batches) // args.rounds, (r + 1) * len(batches) // args.rounds)
        for name, (config, model, optimizer) in models.items():
            start = time.process_time()
            for batch in batches[share]:
                train_step(model, optimizer, batch, config)
            seconds[name] += time.process_time() - start
        start = time.process_time()
        for job in products[share]:
            job.run()
        seconds["products"] += time.process_time() - start
    useful, computed = map(sum, zip(*(useful_share(b) for b in batches), strict=True))
    bilstm, nef, floor = seconds["bilstm"], seconds["NEF-F, N = L"], seconds["products"]
    result = {
        "machine": f"{platform.machine()}, {platform.node() or 'machine'}",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "updates": len(batches),
        "tokens": tokens,
        "cpu_seconds": seconds,
        "tok_s": {name: tokens / seconds[name] for name in MODELS},
        "ratio": bilstm / nef,
        "products_share_of_nef": floor / nef,
        "products_gflop_s": sum(p.flops for p in products) / floor / 1e9,
        "large_product_gflop_s": peak_gflop_s(),
        "bound": bilstm / (bilstm + floor),
        "useful_share": useful / computed,
        "bound_without_padding": bilstm / (bilstm + floor * useful / computed),
    }
    print(
        f"{len(batches)} updates of 16 sentences ({tokens:,} tokens), {result['threads']} thread(s), CPU seconds\n"
        f"  BiLSTM          {bilstm:7.2f} s  {result['tok_s']['bilstm']:8,.0f} tok/s\n"
        f"  NEF-F, N = L    {nef:7.2f} s  {result['tok_s']['NEF-F, N = L']:8,.0f} tok/s  "
        f"{result['ratio']:.2f}× the BiLSTM\n"
        f"  its products    {floor:7.2f} s  {100 * result['products_share_of_nef']:.0f}% of NEF-F's time, "
        f"{result['products_gflop_s']:.0f} GFLOP/s "
        f"(a 1536 × 1536 product: {result['large_product_gflop_s']:.0f} GFLOP/s)\n"
        f"  bound on NEF-F / BiLSTM from the products alone: {result['bound']:.2f}× "
        f"({result['bound_without_padding']:.2f}× if the {100 * (1 - result['useful_share']):.0f}% of rows × "
        f"steps outside a sentence's own words and steps were skipped)"
    )
    if args.profile:
        profile(models["NEF-F, N = L"], batches[: args.profile])
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
