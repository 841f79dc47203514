"""Extra per-word inputs beside the word and its affixes, and word dropout.

A :class:`Feature` maps a sentence to a list of symbols per word (usually one; several are averaged).
Each active feature has its own vocabulary (``Vocabularies.features[name]``, index 0 = padding, 1 = UNK)
and embedding table, concatenated to the word representation (see easyfirst.model.embedder). A feature
is active when its dimension in ``[model]`` (``dim_key``) is positive; tasks switch theirs on in their
default config (easyfirst.tasks), so POS models, whose config lacks these keys, are unchanged.

Features read a sentence's words and its ``extra`` inputs (``Sentence.extra``: whatever a task's
reader provides beside the words, e.g. aligned source words for quality estimation).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import torch

from easyfirst.data.buckets import padded_rows, row_width
from easyfirst.data.vocab import MEMO_WORDS, Vocab

CASES = ("lower", "upper", "title", "mixed", "numeric", "has_digit", "other")
CHARS = "chars"  # each word's characters: the character CNN's input (easyfirst.model.embedder)


def case_pattern(word: str) -> str:
    """The capitalization pattern of a word (NER feature).

    ``lower`` (no upper-case letter), ``upper`` (all letters upper-case, at least two), ``title``
    (first character upper-case, no other: "Paris", "I"), ``mixed`` (other upper-case letters:
    "iPhone", "McDonald"), and for words without letters ``numeric`` (digits only), ``has_digit``
    ("1:2", "3.5") or ``other`` (punctuation).
    """
    if not any(c.isalpha() for c in word):
        if word.isdigit():
            return "numeric"
        return "has_digit" if any(c.isdigit() for c in word) else "other"
    if not any(c.isupper() for c in word):
        return "lower"
    if word.isupper() and sum(c.isalpha() for c in word) > 1:
        return "upper"
    if word[0].isupper() and not any(c.isupper() for c in word[1:]):
        return "title"
    return "mixed"


NULL = "<null>"  # the aligned-source symbol of an unaligned MT word: its embedding is the learned NULL vector
OUTSIDE = "<out>"  # a context position past the edge of the sentence


def aligned_source(words: Sequence[str], extra: dict, offset: int = 0) -> list[list[str]]:
    """Per MT word j, the source words at i + ``offset`` for each source word i aligned to j (their
    embeddings are averaged), or ``[NULL]`` when j is unaligned (paper §5.3; offsets ±1 are the WMT16
    baseline's source context)."""
    if "source" not in extra or "alignment" not in extra:
        raise ValueError(
            "quality estimation needs each MT sentence's source words and alignment: "
            "tag(..., extras=[{'source': [...], 'alignment': [(i, j), ...]}, ...])"
        )
    source = extra["source"]
    aligned: list[list[int]] = [[] for _ in words]
    for i, j in extra["alignment"]:
        aligned[j].append(i)
    return [
        [source[i + offset] if 0 <= i + offset < len(source) else OUTSIDE for i in indices] or [NULL]
        for indices in aligned
    ]


def neighbours(words: Sequence[str], offset: int) -> list[list[str]]:
    """Per MT word j, the MT word at j + ``offset`` (WMT16 baseline target context)."""
    return [[words[j + offset] if 0 <= j + offset < len(words) else OUTSIDE] for j in range(len(words))]


@dataclass(frozen=True)
class Feature:
    """An extra per-word input: ``symbols(words, extra)`` gives each word's list of symbols."""

    name: str
    dim_key: str  # the [model] key holding its embedding size, an embedder setting (0: off)
    symbols: Callable[[Sequence[str], Mapping], list[list[str]]]
    closed: tuple[str, ...] | None = None  # a fixed symbol set (no counting over the training data)
    min_freq: int = 1  # counted symbols seen fewer times map to UNK (so that UNK gets trained)
    # where a word's symbols depend on the word alone (its case, its characters): them, so that
    # encode_features looks each distinct word up once (tagging CoNLL-2003 test with en-ner spent a fifth
    # of its time on characters and case patterns, for 46,435 words of 9,489 types)
    of_word: Callable[[str], list[str]] | None = None


def word_feature(name: str, dim_key: str, of_word: Callable[[str], list[str]], **options) -> Feature:
    """A :class:`Feature` whose symbols for a word are ``of_word(word)``, whatever its sentence."""
    return Feature(
        name, dim_key, lambda words, extra: [of_word(w) for w in words], of_word=of_word, **options
    )


FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        word_feature("case", "case_dim", lambda word: [case_pattern(word)], closed=CASES),
        # the characters of each word, in order, as they are written (case kept): for the character CNN,
        # not averaged; a character seen once in training is UNK's (so that UNK gets trained)
        word_feature(CHARS, "char_dim", list, min_freq=2),
        # quality estimation (paper §5.3): the source words aligned to each MT word, averaged
        Feature("source", "source_dim", aligned_source, min_freq=2),
        # and the WMT16 baseline's context: the MT neighbours and the neighbours of the aligned source words
        Feature("mt_left", "qe_context_dim", lambda words, extra: neighbours(words, -1), min_freq=2),
        Feature("mt_right", "qe_context_dim", lambda words, extra: neighbours(words, 1), min_freq=2),
        Feature(
            "source_left", "qe_context_dim", lambda words, extra: aligned_source(words, extra, -1), min_freq=2
        ),
        Feature(
            "source_right", "qe_context_dim", lambda words, extra: aligned_source(words, extra, 1), min_freq=2
        ),
    )
}


def active_features(embedder_settings) -> dict[str, int]:
    """Name → embedding size of the features the model's embedder settings (``[model]``) switch on."""
    return {
        name: getattr(embedder_settings, f.dim_key)
        for name, f in FEATURES.items()
        if getattr(embedder_settings, f.dim_key, 0) > 0
    }


def build_feature_vocabs(names: Iterable[str], sentences: Iterable) -> dict[str, Vocab]:
    """One vocabulary per feature, from the training sentences (``.words`` and ``.extra``)."""
    features = [FEATURES[name] for name in names]
    counts = {f.name: Counter() for f in features if f.closed is None}
    if counts:
        for sentence in sentences:
            for f in features:
                if f.closed is None:
                    for symbols in f.symbols(sentence.words, sentence.extra):
                        counts[f.name].update(symbols)
    return {
        f.name: Vocab(f.closed) if f.closed is not None else Vocab.build(counts[f.name], f.min_freq)
        for f in features
    }


def encode_features(
    vocabs: Mapping[str, Vocab], words: Sequence[str], extra: Mapping | None
) -> dict[str, torch.Tensor]:
    """Each feature's symbol ids for one sentence: ``(n, k)``, k the most symbols of a word (0-padded)."""
    encoded = {}
    for name, rows in feature_rows(vocabs, words, extra).items():
        width = row_width(rows)
        encoded[name] = torch.tensor(padded_rows(rows, width), dtype=torch.long).view(len(words), width)
    return encoded


def feature_rows(
    vocabs: Mapping[str, Vocab], words: Sequence[str], extra: Mapping | None = None
) -> dict[str, list[tuple[int, ...]]]:
    """Each feature's symbol ids for one sentence, a tuple per word (unpadded)."""
    rows = {}
    for name, vocab in vocabs.items():
        feature = FEATURES[name]
        if feature.of_word is not None:
            rows[name] = word_rows(vocab, feature.of_word, words)
        else:
            rows[name] = [tuple(map(vocab.index, symbols)) for symbols in feature.symbols(words, extra or {})]
    return rows


def of_words_alone(vocabs: Mapping[str, Vocab]) -> bool:
    """Whether every feature's symbols depend on the word alone (not on its sentence or extra inputs)."""
    return all(FEATURES[name].of_word is not None for name in vocabs)


def word_rows(
    vocab: Vocab, of_word: Callable[[str], list[str]], words: Sequence[str]
) -> list[tuple[int, ...]]:
    """The ids of ``of_word(w)`` in ``vocab`` for each word, each distinct word's looked up once and
    remembered in the vocabulary (``Vocab.memo``, emptied after MEMO_WORDS words)."""
    memo, rows = vocab.memo, []
    for word in words:
        row = memo.get(word)
        if row is None:
            row = tuple(map(vocab.index, of_word(word)))
            if len(memo) >= MEMO_WORDS:
                memo.clear()
            memo[word] = row
        rows.append(row)
    return rows


def word_dropout_probabilities(counts: Counter, vocab: Vocab, alpha: float) -> torch.Tensor:
    """``(V,)``: the chance that word id v is replaced by UNK in training, α / (α + count(v)).

    Rare words are dropped most (α = 0.25: a word seen once 20% of the time, ten times 2.4%), so the
    UNK embedding is trained on words like those that will be unknown at test time (Kiperwasser and
    Goldberg 2016). Padding and UNK are never replaced.
    """
    probabilities = torch.zeros(len(vocab))
    for word, index in vocab.stoi.items():
        if index > 1:
            probabilities[index] = alpha / (alpha + counts.get(word, 0)) if alpha > 0 else 0.0
    return probabilities


def drop_words(words: torch.Tensor, probabilities: torch.Tensor) -> torch.Tensor:
    """``words`` ``(B, L)`` with each id v replaced by UNK (1) with probability ``probabilities[v]``."""
    drop = torch.rand(words.shape, device=words.device) < probabilities.to(words.device)[words]
    return words.masked_fill(drop, 1)
