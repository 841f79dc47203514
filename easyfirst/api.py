"""The Python API: load a trained model and tag text or tokenized sentences.

>>> from easyfirst import Tagger
>>> tagger = Tagger.load()                      # the bundled English UPOS model
>>> tagger.tag([["She", "reads", "a", "book", "."]])  # a list of sentences, each a list of tokens
[['PRON', 'VERB', 'DET', 'NOUN', 'PUNCT']]
>>> tagger.tag(["She", "reads", "."])                # one sentence's tokens
['PRON', 'VERB', 'PUNCT']
>>> tagger.tag("She reads. It's late.")              # text: split into sentences and tokenized
[[('She', 'PRON'), ('reads', 'VERB'), ('.', 'PUNCT')], [('It', 'PRON'), ("'s", 'AUX'), ('late', 'ADJ'), ('.', 'PUNCT')]]
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from itertools import repeat
from pathlib import Path

import torch

from easyfirst.backends import check_backend
from easyfirst.data.buckets import INFERENCE_MAX_TOKENS
from easyfirst.data.schemes import learned_scheme, to_bio
from easyfirst.model.qe_heads import HEADS
from easyfirst.resources import DEFAULT_MODEL, default_model_path, model_folder
from easyfirst.runs import load_model
from easyfirst.tagging.pool import Follow, TaggingPool, make_jobs, processes_for, tag_batches, tag_job

__all__ = ["DEFAULT_MODEL", "Tagger", "default_model_path", "input_kind"]


class Tagger:
    """A trained tagger, ready for inference (dropout off, no gradients)."""

    def __init__(self, model, config, vocabs, device: str | torch.device = "cpu"):
        self.model, self.config, self.vocabs, self.device = model, config, vocabs, torch.device(device)
        # the scheme of the model's entity tags: BIOES predictions are read out as BIO (easyfirst.data.schemes)
        self.scheme = learned_scheme(vocabs.tags.itos)
        # processes that tag a large call (easyfirst.tagging.pool); None: one per core, 1: this one alone
        self.processes: int | None = None
        self._pool: TaggingPool | None = None

    def _tagging_pool(self) -> TaggingPool | None:
        """The processes that tag large calls, forked at the first (None: one process)."""
        if self._pool is None or self._pool.closed:
            count = processes_for(self.processes, self.device)
            if count < 2:
                return None
            self._pool = TaggingPool(self.model, self.vocabs, self.device, count)
            weakref.finalize(self, self._pool.close)
        return self._pool

    def follow(
        self, pipes: list, *, batch_size: int = 256, max_tokens: int | None = INFERENCE_MAX_TOKENS
    ) -> bool:
        """Fork the processes that tag large calls now, each following the windows of sentences that a
        reading process sends it through its pipe of ``pipes`` (the copies of an
        easyfirst.tagging.readahead.ReadAhead, each item ``(sentences, batches)``): the calls that follow must be
        ``tag(sentences, batches=batches, batch_size=batch_size)`` of those windows, in order
        (``easyfirst tag`` on a file read ahead; ``batches`` may be None). Returns whether it forked (not
        with one core or off the CPU)."""
        count = min(processes_for(self.processes, self.device), len(pipes) + 1)
        if count < 2:
            return False
        if self._pool is not None:
            self._pool.close()
        self._pool = TaggingPool(
            self.model, self.vocabs, self.device, count, Follow(pipes[: count - 1], batch_size, max_tokens)
        )
        weakref.finalize(self, self._pool.close)
        return True

    def close(self) -> None:
        """End the processes that tag large calls, if any were forked (a later large call forks them
        again): after the windows they followed (``easyfirst tag`` on many files, one after another)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @classmethod
    def load(
        cls, path: str | Path | None = None, device: str | torch.device = "cpu", backend: str = "auto"
    ) -> Tagger:
        """Load a model folder written by ``easyfirst train``, or a bundled model by its name (``"en-upos"``,
        ``"en-ner"``); None loads the bundled default model (``"en-upos"``). ``backend``: see
        :attr:`backend`."""
        model, config, vocabs = load_model(model_folder(path), device)
        tagger = cls(model, config, vocabs, device)
        tagger.backend = backend
        return tagger

    @property
    def backend(self) -> str:
        """The backend forced for tagging: ``"auto"`` (the default) lets easyfirst.backends.chooser take
        the fastest that supports each batch; a name (``"numpy"``, ``"fused"``, ``"reference"``, ...)
        takes that one where it supports the batch and the reference elsewhere. The tags are the same."""
        return self.model.backend

    @backend.setter
    def backend(self, name: str) -> None:
        check_backend(name)
        self.close()  # processes forked before tag with the backend they were forked with
        self.model.backend = name

    @property
    def tags(self) -> list[str]:
        return list(self.vocabs.tags.itos)

    @property
    def title(self) -> str:
        """The model in a raindrop's title: its decoder, attention and sketch steps (``nef-f, csoftmax,
        N = L``)."""
        m = self.config.model
        return f"{m.model}, {m.attention}, " + (
            "N = L" if m.sketch_steps is None else f"N = {m.sketch_steps}"
        )

    def tag(
        self,
        sentences: str | Sequence[str] | Sequence[Sequence[str]],
        *,
        return_attention: bool = False,
        return_probabilities: bool = False,
        batch_size: int = 256,
        max_tokens: int | None = INFERENCE_MAX_TOKENS,
        extras: Sequence[Mapping] | None = None,
        return_heads: bool = False,
        batches: Sequence | None = None,
    ):
        """Tag text, one tokenized sentence, or a list of tokenized sentences.

        - **a list of token lists** ``[["The", "dog", "barks", "."], ...]``: returns a list of tag lists,
          one per sentence (the model's own input: no tokenization happens).
        - **a list of strings** ``["The", "dog", "barks", "."]``: the tokens of *one* sentence, as Flair's
          ``Sentence(["The", "dog"])`` and a pretokenized Stanza sentence read it; returns one list of
          tags. A string with whitespace in such a list is a ValueError (it is not a token: pass text as
          one string, or tag each text in turn).
        - **a string**: plain text, split into sentences and tokenized as ``easyfirst tag`` does for a
          text file (segtok; see easyfirst.data.text); returns one list per sentence of
          ``(token, tag)`` pairs, since the tokens are the tokenizer's, not the caller's.

        Anything else (bytes, numbers, a list of numbers) is a TypeError.

        ``extras[k]`` holds sentence k's inputs beside its words, for models that use them (quality
        estimation: ``{"source": words, "alignment": [(i, j), ...]}``). Sentences are sorted by length and
        tagged in batches of at most ``batch_size`` sentences and ``max_tokens`` padded tokens (None: no
        cap; on a GPU a larger cap may be faster). ``batches``: those batches' ids, padded by
        easyfirst.data.buckets.pack in this model's vocabularies, when they were made before
        (``easyfirst tag`` reads ahead, easyfirst.data.conllu.packed_windows); not for a model with
        features beside its words and affixes.

        With ``return_attention`` and/or ``return_probabilities``, returns a tuple ``(tags, attention,
        probabilities)`` of those asked for, in that order, each per sentence as ``tags`` is (for one
        sentence's tokens: that sentence's). ``attention[k]`` is sentence k's ``(N, L)`` tensor of αⁿ
        (rows: sketch steps, columns: words; ``(0, L)`` for a model without sketch steps).
        ``probabilities[k]`` is its ``(L, K)`` output distribution over the tags ``self.tags``: softmax,
        sparsemax or α-entmax of the scores, as trained (exact zeros for α > 1), or the CRF's per-word
        marginals. With ``return_heads`` (quality estimation: a list of sentences with their ``extras``),
        the last item is a dict of the tags of the model's QE heads (easyfirst.model.qe_heads): ``gaps``
        (N + 1 per sentence) and/or ``source_tags`` (one per source word); empty for a model without
        heads. An empty MT sentence gets an ``OK`` gap and ``BAD`` source words (nothing translates them).
        """
        options = dict(
            return_attention=return_attention,
            return_probabilities=return_probabilities,
            batch_size=batch_size,
            max_tokens=max_tokens,
        )
        kind = input_kind(sentences)
        if batches is not None:
            if kind != "sentences" or extras is not None or self.vocabs.features:
                raise ValueError("batches: for a list of tokenized sentences, of a model without features")
            return self._tag_sentences(
                sentences, extras=None, return_heads=return_heads, batches=batches, **options
            )
        if return_heads:
            if kind != "sentences":
                raise ValueError("return_heads: for a list of tokenized sentences with their extras (QE)")
            return self._tag_sentences(sentences, extras=extras, return_heads=True, **options)
        if kind == "text":
            from easyfirst.data.text import split

            split_sentences = split(sentences)
            words = [s.words for s in split_sentences]
            result = self._tag_sentences(words, extras=extras, **options)
            tags = result[0] if isinstance(result, tuple) else result
            pairs = [list(zip(w, t, strict=True)) for w, t in zip(words, tags, strict=True)]
            return (pairs, *result[1:]) if isinstance(result, tuple) else pairs
        if kind == "tokens":
            result = self._tag_sentences([list(sentences)], extras=extras, **options)
            return tuple(part[0] for part in result) if isinstance(result, tuple) else result[0]
        return self._tag_sentences(sentences, extras=extras, **options)

    def raindrop(
        self,
        text_or_tokens: str | Sequence[str],
        *,
        sentence: int = 1,
        gold: Sequence[str] | None = None,
        extra: Mapping | None = None,
        name: str | None = None,
    ):
        """The raindrop of one sentence (easyfirst.viz.web.Raindrop): shown inline in a notebook (the
        interactive component) and saved by ``.save(path)`` as .html, .png, .svg or .pdf.

        ``text_or_tokens`` is text (split and tokenized as :meth:`tag` does; ``sentence`` picks which
        sentence, from 1) or one sentence's tokens. ``gold`` tags are shown beside the predicted ones,
        ``extra`` holds a QE sentence's source and alignment, ``name`` names the model in the title.
        In a notebook, a cell ending in ``tagger.raindrop("She reads a book.")`` shows the raindrop.
        """
        from easyfirst.tasks import get_task
        from easyfirst.viz.plot import Drop
        from easyfirst.viz.web.raindrop import Raindrop

        if self.model.decoder is None:
            raise ValueError("this model has no sketch steps (N = 0): there is no attention to plot")
        words = self._one_sentence(text_or_tokens, sentence)
        if extra is None and get_task(self.config.data.task).refuses_text is not None:
            raise ValueError("a QE model's raindrop needs the sentence's extra (source and alignment)")
        if gold is not None and len(gold) != len(words):
            raise ValueError(f"gold has {len(gold)} tags for {len(words)} tokens")
        tags, attention = self.tag([words], return_attention=True, extras=[extra] if extra else None)
        title = self.title
        drop = Drop(
            words,
            tags[0],
            attention[0],
            None if gold is None else list(gold),
            f"{name}: {title}" if name else title,
            name or "",
            self.config.data.task,
        )
        return Raindrop([drop], self.tags)

    @staticmethod
    def _one_sentence(text_or_tokens: str | Sequence[str], sentence: int) -> list[str]:
        """The tokens of sentence ``sentence`` (from 1) of text, or the given tokens."""
        if sentence < 1:
            raise ValueError("sentence counts from 1")
        if input_kind(text_or_tokens) == "tokens":
            if sentence != 1:
                raise ValueError("sentence: a list of tokens is one sentence")
            return list(text_or_tokens)
        if input_kind(text_or_tokens) != "text":
            raise TypeError("Tagger.raindrop takes text or one sentence's tokens, not a list of sentences")
        from easyfirst.data.text import split

        sentences = [s.words for s in split(text_or_tokens)]
        if sentence > len(sentences):
            raise ValueError(f"the text has {len(sentences)} sentence(s), fewer than sentence={sentence}")
        return sentences[sentence - 1]

    def _tag_sentences(
        self,
        sentences: Sequence[Sequence[str]],
        *,
        return_attention: bool,
        return_probabilities: bool,
        batch_size: int,
        max_tokens: int | None,
        extras: Sequence[Mapping] | None,
        return_heads: bool = False,
        batches: Sequence | None = None,
    ):
        tags: list[list[str]] = [[] for _ in sentences]
        # what an empty sentence gets; made only when asked for (two tensors per sentence: 2% of tagging)
        attention = [torch.zeros(0, 0) for _ in sentences] if return_attention else []
        probabilities = [torch.zeros(0, len(self.tags)) for _ in sentences] if return_probabilities else []
        keep, jobs = make_jobs(sentences, extras, batches, batch_size, max_tokens)
        itos = self.vocabs.tags.itos
        heads = {
            name: [[] for _ in sentences]
            for name in HEADS
            if return_heads and getattr(self.config.model, name)
        }
        asked = (return_attention, return_probabilities, return_heads)
        if self._pool is not None and not self._pool.closed:
            self._pool.check_call(batch_size, max_tokens, extras)
        with torch.inference_mode():
            outputs = tag_batches(
                jobs,
                lambda job: tag_job(self.model, self.vocabs, job, self.device, asked),
                self._tagging_pool,
                sum(len(sentences[k]) for k in keep),
                asked,
            )
        for out in outputs:
            lengths, best = out["lengths"], out["best"].tolist()  # one call per batch, not per sentence
            for row, index in enumerate(out["order"]):
                k, n = keep[index], lengths[row]
                tags[k] = to_bio([itos[t] for t in best[row][:n]], self.scheme)
                if return_attention:
                    alpha = out["attention"]
                    matrix = alpha[row, : out["steps"][row], :n] if alpha is not None else torch.zeros(0, n)
                    attention[k] = matrix.clone()
                if return_probabilities:
                    probabilities[k] = out["probabilities"][row, :n].clone()
                for name, rows in out.get("heads", {}).items():
                    heads[name][k] = rows[row]
        for k, sentence in enumerate(sentences):  # an empty sentence's heads (its attention is (0, 0))
            if not sentence and "gaps" in heads:
                heads["gaps"][k] = ["OK"]
            if not sentence and "source_tags" in heads:
                heads["source_tags"][k] = ["BAD"] * len(extras[k]["source"])
        extra = [
            x
            for x, asked in (
                (attention, return_attention),
                (probabilities, return_probabilities),
                (heads, return_heads),
            )
            if asked
        ]
        return (tags, *extra) if extra else tags


def input_kind(value) -> str:
    """What :meth:`Tagger.tag` was given: ``"text"`` (a string), ``"tokens"`` (a list of strings: one
    sentence) or ``"sentences"`` (a list of lists of strings); a TypeError or ValueError otherwise."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, bytes | bytearray) or not isinstance(value, Sequence):
        raise TypeError(
            f"Tagger.tag takes a string (text), a list of strings (one sentence's tokens) or a list of "
            f"lists of strings (sentences), not {type(value).__name__}"
            + (
                ": decode bytes first, e.g. data.decode('utf-8')"
                if isinstance(value, bytes | bytearray)
                else ""
            )
        )
    if value and all(isinstance(item, str) for item in value):
        for item in value:
            if not item or any(c.isspace() for c in item):
                raise ValueError(
                    f"Tagger.tag read a list of strings as one sentence's tokens, and {item!r} is not a token "
                    "(empty or with whitespace): pass text as one string, or tag each text in turn"
                )
        return "tokens"
    for k, sentence in enumerate(value):
        if isinstance(sentence, str | bytes | bytearray) or not isinstance(sentence, Sequence):
            raise TypeError(
                f"Tagger.tag: item {k} is of type {type(sentence).__name__}; in a list, give either strings (one "
                "sentence's tokens) or lists of strings (sentences), not a mixture or other types"
            )
        if all(map(isinstance, sentence, repeat(str))):  # the loop below only finds the culprit
            continue
        for token in sentence:
            if not isinstance(token, str):
                raise TypeError(
                    f"Tagger.tag: sentence {k} holds {token!r} of type {type(token).__name__}; tokens are strings"
                )
    return "sentences"
