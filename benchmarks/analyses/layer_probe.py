"""Where a transformer keeps a treebank's tags: a linear probe (softmax regression) on each hidden
state's frozen word vectors, for each sub-word pooling, scored on the dev set.

    python benchmarks/analyses/layer_probe.py                        # MiniLM on UD English EWT
    python benchmarks/analyses/layer_probe.py --transformer PATH --treebank DIR --train 3000 --json out.json
    python benchmarks/analyses/layer_probe.py --files eng.train eng.testa     # CoNLL-2003's BIO tags

The word vectors are made as ``easyfirst train --transformer`` makes them (easyfirst.model.transformer:
windows, then each word's pieces pooled), for every hidden state at once (0 = the embeddings' output)
and for the last four averaged (``last 4``, as ``--transformer-layers -4,-3,-2,-1`` gives the
tagger). With BIO tags (a CoNLL column file) most words are O: the words of entities are scored
apart as well. A probe sees the word's vector alone, no context beyond what the
transformer put into it and no other input: it says which states carry the tags linearly, not what a
tagger reaches from them. Each probe: the vectors standardised on the training words, L-BFGS on the
mean cross-entropy with a small L2 penalty, from zeros (deterministic). One torch thread.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from easyfirst.parallel.cores import processor

POOLINGS = ("mean", "first", "last")


def treebank_files(folder: Path) -> tuple[Path, Path]:
    """The ``*-ud-train.conllu`` and ``*-ud-dev.conllu`` of a UD treebank's folder."""
    found = [sorted(folder.glob(f"*-ud-{part}.conllu")) for part in ("train", "dev")]
    for part, paths in zip(("train", "dev"), found, strict=True):
        if len(paths) != 1:
            raise SystemExit(f"{folder}: expected one *-ud-{part}.conllu, found {len(paths)}")
    return found[0][0], found[1][0]


def read(path: Path):
    """A file's sentences: UPOS of a CoNLL-U file, else the BIO tags of a CoNLL column file."""
    from easyfirst.data.conll import read_conll
    from easyfirst.data.conllu import read_conllu

    return read_conllu(path) if path.suffix == ".conllu" else read_conll(path)


def word_vectors(embedder, sentences, batch: int = 32) -> dict[str, torch.Tensor]:
    """For each pooling, every word's vector from every hidden state ``(words, hidden states, D)``; the
    transformer runs once, sentences of similar length together."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    by_index: dict[int, dict[str, torch.Tensor]] = {}
    with torch.no_grad():
        for start in range(0, len(order), batch):
            chosen = order[start : start + batch]
            pieces = [embedder.pieces(sentences[i]) for i in chosen]
            states = embedder.piece_states([ids for ids, _ in pieces], "cpu")
            for i, (_, spans), hidden in zip(chosen, pieces, states, strict=True):
                by_index[i] = {}
                for pooling in POOLINGS:
                    embedder.pooling = pooling
                    by_index[i][pooling] = embedder.pool(hidden, spans)
    return {p: torch.cat([by_index[i][p] for i in range(len(sentences))]) for p in POOLINGS}


def probe(train_x, train_y, dev_x, dev_y, classes: int, iterations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax regression on standardised vectors: whether each training and each dev word is right."""
    mean, std = train_x.mean(0), train_x.std(0).clamp_min(1e-6)
    train_x, dev_x = (train_x - mean) / std, (dev_x - mean) / std
    weight = torch.zeros(train_x.shape[1], classes, requires_grad=True)
    bias = torch.zeros(classes, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=iterations, line_search_fn="strong_wolfe")

    def loss():
        optimizer.zero_grad()
        value = torch.nn.functional.cross_entropy(train_x @ weight + bias, train_y)
        value = value + 1e-4 * weight.square().sum()
        value.backward()
        return value

    optimizer.step(loss)
    with torch.no_grad():
        return tuple((x @ weight + bias).argmax(1) == y for x, y in ((train_x, train_y), (dev_x, dev_y)))


def table(rows: dict[str, dict[str, float]], what: str) -> None:
    print(f"\n{'hidden state':<14}" + "".join(f"{p:>8}" for p in POOLINGS) + f"   ({what}, %)")
    for name, scores in rows.items():
        print(f"{name:<14}" + "".join(f"{100 * scores[p]:>8.2f}" for p in POOLINGS))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = Path(os.environ.get("EASYFIRST_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
    parser.add_argument("--transformer", default="all-minilm-l6-v2", help="a registry name, folder or hub id")
    parser.add_argument(
        "--treebank", type=Path, default=data / "ud" / "UD_English-EWT", help="a UD treebank's folder"
    )
    parser.add_argument(
        "--files",
        type=Path,
        nargs=2,
        metavar=("TRAIN", "DEV"),
        help="a training and a dev file instead (CoNLL-U: UPOS; else a CoNLL column file: BIO tags)",
    )
    parser.add_argument("--train", type=int, default=3000, help="training sentences (the first ones)")
    parser.add_argument("--iterations", type=int, default=100, help="L-BFGS iterations per probe")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from easyfirst.data.transformer_models import load_transformer
    from easyfirst.model.transformer import TransformerEmbedder

    train_path, dev_path = args.files or treebank_files(args.treebank)
    train, dev = read(train_path)[: args.train], read(dev_path)
    tags = sorted({t for s in train for t in s.tags})
    index = {t: i for i, t in enumerate(tags)}
    train_y = torch.tensor([index[t] for s in train for t in s.tags])
    dev_y = torch.tensor([index.get(t, -1) for s in dev for t in s.tags])
    # BIO tags: most words are O, so the words of entities are scored apart too
    entities = dev_y != index["O"] if "O" in index else None
    net, tokenizer, digest = load_transformer(args.transformer)
    depth = net.config.num_hidden_layers + 1
    embedder = TransformerEmbedder(net, tokenizer, layers=range(depth), mix=True)
    started = time.process_time()
    train_vectors = word_vectors(embedder, [s.words for s in train])
    dev_vectors = word_vectors(embedder, [s.words for s in dev])
    rows: dict[str, dict[str, float]] = {}
    entity_rows: dict[str, dict[str, float]] = {}
    choices = {str(k): (k,) for k in range(depth)} | {"last 4": tuple(range(max(0, depth - 4), depth))}
    for pooling in POOLINGS:
        train_x, dev_x = train_vectors[pooling], dev_vectors[pooling]
        for name, layers in choices.items():
            on_train, on_dev = probe(
                train_x[:, layers].mean(1),
                train_y,
                dev_x[:, layers].mean(1),
                dev_y,
                len(tags),
                args.iterations,
            )
            rows.setdefault(name, {})[pooling] = float(on_dev.float().mean())
            line = f"state {name:>6}  {pooling:<5}  train {100 * float(on_train.float().mean()):6.2f}"
            line += f"  dev {100 * rows[name][pooling]:6.2f}"
            if entities is not None:
                entity_rows.setdefault(name, {})[pooling] = float(on_dev[entities].float().mean())
                line += f"  dev words not O {100 * entity_rows[name][pooling]:6.2f}"
            print(line, flush=True)
    table(rows, "dev accuracy")
    if entities is not None:
        table(entity_rows, "dev accuracy on the words whose tag is not O")
    if args.json:
        result = {
            "transformer": args.transformer,
            "sha256": digest,
            "train": str(train_path.name),
            "dev": str(dev_path.name),
            "train_sentences": len(train),
            "train_words": len(train_y),
            "dev_words": len(dev_y),
            "iterations": args.iterations,
            "dev_accuracy": rows,
            "cpu_seconds": time.process_time() - started,
            "machine": processor(),
        }
        if entities is not None:
            result["dev_accuracy_not_o"] = entity_rows
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
