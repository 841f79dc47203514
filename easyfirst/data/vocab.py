"""Vocabularies built from the training data: words, prefix and suffix n-grams, tags.

Index 0 is padding and index 1 is the unknown symbol in every input vocabulary; tag vocabularies have
neither. Vocabularies serialise to plain JSON (model files are data, not code).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

# a sentence's word ids, and its prefix and suffix ids (max_affix per word, in a row): Vocabularies.index
WordIds = tuple[list[int], list[int], list[int]]

PAD = "<pad>"
UNK = "<unk>"
IGNORE = -100  # a target id no tag has: the loss ignores it (padding, tags the vocabulary lacks)


class Vocab:
    """A bijection between symbols and contiguous integer ids."""

    def __init__(self, symbols: Sequence[str], specials: bool = True):
        self.specials = specials
        self.itos: list[str] = ([PAD, UNK] if specials else []) + [s for s in symbols if s not in (PAD, UNK)]
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("duplicate symbols in vocabulary")
        self.memo: dict = {}  # a word's ids of symbols derived from it (easyfirst.data.features.word_rows)

    @classmethod
    def build(cls, counts: Counter, min_freq: int = 1, specials: bool = True) -> Vocab:
        """Symbols seen at least ``min_freq`` times, most frequent first (ties alphabetically)."""
        kept = sorted((s for s, c in counts.items() if c >= min_freq), key=lambda s: (-counts[s], s))
        return cls(kept, specials)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, symbol: str) -> bool:
        return symbol in self.stoi

    def index(self, symbol: str) -> int:
        """The id of ``symbol``; UNK for unknown symbols (KeyError where there is no UNK)."""
        if self.specials:
            return self.stoi.get(symbol, 1)
        return self.stoi[symbol]

    def extended(self, symbols: Iterable[str]) -> Vocab:
        """This vocabulary with ``symbols`` it lacks appended (existing ids unchanged)."""
        known = set(self.itos)
        kept = self.itos[2:] if self.specials else list(self.itos)
        for symbol in symbols:
            if symbol not in known:
                known.add(symbol)
                kept.append(symbol)
        return Vocab(kept, self.specials)

    def to_json(self) -> dict:
        return {"symbols": self.itos[2:] if self.specials else self.itos, "specials": self.specials}

    @classmethod
    def from_json(cls, raw: dict) -> Vocab:
        return cls(raw["symbols"], raw["specials"])


MEMO_WORDS = 200_000  # distinct words whose ids Vocabularies.index remembers before it starts over
DEFAULT_PRETRAINED_WORDS = 50_000  # how many of a set of vectors' words join the vocabulary by default


def prefixes(word: str, max_n: int) -> list[str]:
    """The prefix n-grams of ``word`` for n = 1..max_n (those that fit)."""
    return [word[:n] for n in range(1, min(max_n, len(word)) + 1)]


def suffixes(word: str, max_n: int) -> list[str]:
    """The suffix n-grams of ``word`` for n = 1..max_n (those that fit)."""
    return [word[-n:] for n in range(1, min(max_n, len(word)) + 1)]


@dataclass
class Vocabularies:
    """Everything needed to turn words into ids and ids into tags."""

    words: Vocab
    prefixes: Vocab
    suffixes: Vocab
    tags: Vocab
    max_affix: int
    features: dict[str, Vocab] = field(default_factory=dict)  # see easyfirst.data.features
    lowercase: bool = False  # words are looked up lower-cased (affixes keep their case)
    # the first word id of the words that only pretrained vectors know (add_pretrained_words): training
    # never sees them, so the model keeps their vectors as read, outside its trained table; None: none
    vector_words_from: int | None = None
    # the ids of the words looked up so far (index), and the vocabularies they were looked up in
    _ids: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    _memo_of: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def word_index(self, word: str) -> int:
        return self.words.index(word.lower() if self.lowercase else word)

    def index(self, words: Sequence[str]) -> WordIds:
        """A sentence's word ids and its affix ids, ``max_affix`` per word (0 where an n-gram does not
        fit), each word's in a row; lists, for the tensors of easyfirst.data.batching.encode.

        Each distinct word is looked up once and remembered (:meth:`word_ids`): tagging EWT test looks
        up 25,094 words of 5,629 types, and the lookups were an eighth of ``Tagger.tag``'s time."""
        memo = self._memo()
        word_ids: list[int] = []
        prefix_ids: list[int] = []
        suffix_ids: list[int] = []
        for word in words:
            ids = memo.get(word)
            if ids is None:
                ids = self.word_ids(word)
                if len(memo) >= MEMO_WORDS:
                    memo.clear()
                memo[word] = ids
            word_ids.append(ids[0])
            prefix_ids += ids[1]
            suffix_ids += ids[2]
        return word_ids, prefix_ids, suffix_ids

    def word_ids(self, word: str) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """One word's id and its ``max_affix`` prefix and suffix ids (0 where an n-gram does not fit)."""
        k = self.max_affix

        def affix_ids(grams: list[str], vocab: Vocab) -> tuple[int, ...]:
            return (*(vocab.index(g) for g in grams), *[0] * (k - len(grams)))

        return (
            self.word_index(word),
            affix_ids(prefixes(word, k), self.prefixes),
            affix_ids(suffixes(word, k), self.suffixes),
        )

    def _memo(self) -> dict:
        """The ids of the words looked up so far, for the vocabularies as they are now (emptied when one
        is replaced: add_pretrained_words, or fields assigned)."""
        now = (self.words, self.prefixes, self.suffixes, self.max_affix, self.lowercase)
        if self._memo_of is None or any(a is not b for a, b in zip(now, self._memo_of, strict=True)):
            self._ids.clear()
            self._memo_of = now
        return self._ids

    @classmethod
    def build(
        cls,
        sentences: Iterable[tuple[Sequence[str], Sequence[str]]],
        *,
        word_min_freq: int = 2,
        max_affix: int = 4,
        lowercase: bool = False,
    ) -> Vocabularies:
        """Count words, affixes and tags over ``(words, tags)`` pairs of the training set."""
        words, pre, suf, tags = Counter(), Counter(), Counter(), Counter()
        for sentence_words, sentence_tags in sentences:
            words.update([w.lower() for w in sentence_words] if lowercase else sentence_words)
            tags.update(sentence_tags)
            for word in sentence_words:
                pre.update(prefixes(word, max_affix))
                suf.update(suffixes(word, max_affix))
        return cls(
            words=Vocab.build(words, word_min_freq),
            prefixes=Vocab.build(pre),
            suffixes=Vocab.build(suf),
            tags=Vocab.build(tags, specials=False),
            max_affix=max_affix,
            lowercase=lowercase,
        )

    def without_affixes(self) -> Vocabularies:
        """These vocabularies with empty prefix and suffix n-gram ones (padding and UNK only): for a model
        without affix embeddings (``affix_dim = 0``), whose vocab.json need not carry them."""
        return replace(self, prefixes=Vocab.build(Counter()), suffixes=Vocab.build(Counter()))

    def add_pretrained_words(self, words: Iterable[str]) -> int:
        """Add a set of vectors' first words (its most frequent ones: easyfirst.data.vectors) to the word
        vocabulary, lower-cased if lookups are, as Lample et al. (2016) and Flair do, so that words
        never seen in training but known to the vectors get their pretrained embedding instead of UNK.
        Returns how many words were new. Call it before the model is built: training never sees the words
        added, so the model keeps their vectors as read, in a table of their own beside the trained one
        (:attr:`vector_words_from`, easyfirst.model.embedder); the words are saved in vocab.json and their
        vectors in model.pt."""
        before = len(self.words)
        if self.vector_words_from is None:
            self.vector_words_from = before
        self.words = (
            self.words.extended(w.lower() for w in words) if self.lowercase else self.words.extended(words)
        )
        return len(self.words) - before

    def to_json(self) -> dict:
        return {
            "words": self.words.to_json(),
            "prefixes": self.prefixes.to_json(),
            "suffixes": self.suffixes.to_json(),
            "tags": self.tags.to_json(),
            "max_affix": self.max_affix,
            "features": {name: vocab.to_json() for name, vocab in self.features.items()},
            "lowercase": self.lowercase,
        } | ({"vector_words_from": self.vector_words_from} if self.vector_words_from is not None else {})

    @classmethod
    def from_json(cls, raw: dict) -> Vocabularies:
        return cls(
            words=Vocab.from_json(raw["words"]),
            prefixes=Vocab.from_json(raw["prefixes"]),
            suffixes=Vocab.from_json(raw["suffixes"]),
            tags=Vocab.from_json(raw["tags"]),
            max_affix=raw["max_affix"],
            features={name: Vocab.from_json(v) for name, v in raw.get("features", {}).items()},
            lowercase=raw.get("lowercase", False),
            vector_words_from=raw.get("vector_words_from"),
        )
