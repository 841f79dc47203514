"""A tiny randomly initialised BERT that a test builds and saves (no download): 2 layers of 16 units and a
WordPiece vocabulary of a few dozen pieces, written by :func:`tiny_bert`."""

from __future__ import annotations

from pathlib import Path

PIECES = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] the a cat dog sat on mat ran . , and ##s ##ed ##ing "
    "b ##a ##t ##o ##g c d e f g h i j k l m n o p q r s t u v w x y z ##e ##r ##n ##l"
).split()


def tiny_bert(folder: Path, positions: int = 64, seed: int = 0, cased: bool = False) -> Path:
    """Save a random BertModel (2 layers, hidden 16, ``positions`` positions) and its fast WordPiece
    tokenizer (uncased unless ``cased``) in ``folder``; returns it."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast(vocab={piece: i for i, piece in enumerate(PIECES)}, do_lower_case=not cased)
    config = BertConfig(
        vocab_size=len(PIECES),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=positions,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
