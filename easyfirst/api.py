"""The Python API: load a trained model and tag text or tokenized sentences.

>>> from easyfirst import Tagger
>>> tagger = Tagger.load()                      # the bundled English UPOS model
>>> [t.tags for t in tagger.tag([["She", "reads", "a", "book", "."]])]  # lists of tokens
[['PRON', 'VERB', 'DET', 'NOUN', 'PUNCT']]
>>> [list(t) for t in tagger.tag("She reads. It's late.")]  # text: split, tokenized
[[('She', 'PRON'), ('reads', 'VERB'), ('.', 'PUNCT')], [('It', 'PRON'), ("'s", 'AUX'), ('late', 'ADJ'), ('.', 'PUNCT')]]

``Tagger.tag`` returns one :class:`~easyfirst.tagging.tagged.Tagged` per sentence for every input, with
the attention, probabilities and QE heads' tags when asked, and tags in this process unless asked for a
pool of processes (``processes=``).
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
from easyfirst.resources import DEFAULT_MODEL, default_model_path, model_folder
from easyfirst.runs import load_model
from easyfirst.tagging.entities import locate, tags_entities
from easyfirst.tagging.pool import (
    NOTHING_ASKED,
    Follow,
    TaggingPool,
    make_jobs,
    processes_for,
    tag_batches,
    tag_job,
)
from easyfirst.tagging.tagged import Tagged
from easyfirst.tagging.threads import check_threads, held_threads

__all__ = ["DEFAULT_MODEL", "Tagged", "Tagger", "default_model_path", "input_kind"]


class Tagger:
    """A trained tagger, ready for inference (dropout off, no gradients). ``threads``: see :attr:`threads`."""

    def __init__(self, model, config, vocabs, device: str | torch.device = "cpu", threads: int | None = 1):
        self.model, self.config, self.vocabs, self.device = model, config, vocabs, torch.device(device)
        self.threads = threads
        # the scheme of the model's entity tags: BIOES predictions are read out as BIO (easyfirst.data.schemes)
        self.scheme = learned_scheme(vocabs.tags.itos)
        self.entity_scheme = "bio" if tags_entities(vocabs.tags.itos) else None  # each Tagged's .scheme
        # processes that tag a large call (easyfirst.tagging.pool) unless the call says: None or 1, this
        # one alone (the library's default); K, this one and K - 1 forked (the CLI sets one per core)
        self.processes: int | None = None
        self._pool: TaggingPool | None = None

    def _tagging_pool(self, count: int) -> TaggingPool | None:
        """The pool of ``count`` processes that tags a large call, forked at the first such call and
        kept for the next (None for one process); a pool that follows a read-ahead, while it does."""
        pool = self._pool
        if pool is not None and not pool.closed and (pool.follow is not None or pool.workers.count == count):
            return pool
        if count < 2:
            return None
        if pool is not None:
            pool.close()
        self._pool = TaggingPool(self.model, self.vocabs, self.device, count)
        weakref.finalize(self, self._pool.close)
        return self._pool

    def follow(
        self, pipes: list, *, batch_size: int = 256, max_tokens: int | None = INFERENCE_MAX_TOKENS
    ) -> bool:
        """Fork the processes that tag large calls now, each following the windows of sentences that a
        reading process sends it through its pipe of ``pipes`` (the copies of an
        easyfirst.tagging.readahead.ReadAhead, each item ``(sentences, batches)``): the calls that follow must be
        ``_tag_packed(sentences, batches, batch_size=batch_size)`` of those windows, in order
        (``easyfirst tag`` on a file read ahead; ``batches`` may be None). :attr:`processes` processes at
        most; returns whether it forked (not for one process, nor off the CPU)."""
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
        cls,
        path: str | Path | None = None,
        device: str | torch.device = "cpu",
        backend: str = "auto",
        threads: int | None = 1,
    ) -> Tagger:
        """Load a model folder written by ``easyfirst train``, or a bundled model by its name (``"en-upos"``,
        ``"en-ner"``); None loads the bundled default model (``"en-upos"``). ``backend``: see
        :attr:`backend`; ``threads``: see :attr:`threads`."""
        model, config, vocabs = load_model(model_folder(path), device)
        tagger = cls(model, config, vocabs, device, threads)
        tagger.backend = backend
        return tagger

    @property
    def threads(self) -> int | None:
        """The intra-op threads torch (and NumPy's BLAS) computes with during a call of this tagger: 1 by
        default, whatever the process uses elsewhere. One thread per process tags fastest per CPU second,
        and does not spin when other work shares the cores, as torch's default of one thread per core
        does (docs/api.md, "Threads"); for more speed on idle cores, a pool of processes
        (``processes=``) or a larger count. torch's setting is the process's, not a call's: it is set
        when a call starts and set back to what the call found when it ends, also when it raises
        (easyfirst.tagging.threads). None: the process's own settings, untouched (``easyfirst tag``,
        ``evaluate`` and ``serve`` set theirs)."""
        return self._threads

    @threads.setter
    def threads(self, count: int | None) -> None:
        self._threads = check_threads(count)

    @property
    def backend(self) -> str:
        """The backend asked for (:attr:`chosen_backend` is what runs): ``"auto"`` (the default) lets
        easyfirst.backends.chooser take the fastest that supports each batch; a name (``"numba"``,
        ``"reference"``) takes that one where it supports the batch and the reference
        elsewhere. The tags are the same. ``"numba"`` compiles its loops now (once after an install;
        easyfirst.backends.chooser.load_tagging_loops), which changes no other tagger's choice."""
        return self.model.backend

    @backend.setter
    def backend(self, name: str) -> None:
        check_backend(name)
        self.close()  # processes forked before tag with the backend they were forked with
        if name == "numba" and self.device.type == "cpu":  # its tagging loops, compiled once per install
            from easyfirst.backends.chooser import load_tagging_loops

            load_tagging_loops()  # BLAS is limited only while a compiled call runs: nothing to set back
        self.model.backend = name

    @property
    def chosen_backend(self) -> str:
        """What computes this tagger's batches on its device, in one line, as easyfirst.backends.chooser
        describes it: ``"numba (compiled CPU loops: BiLSTM and decoder)"``, and where a faster backend
        was passed over, the reason. What ``easyfirst tag``, ``evaluate`` and ``serve`` log. It changes
        when :attr:`backend` does, and no other tagger changes it."""
        from easyfirst.backends.chooser import backend_line

        return backend_line(self.model)

    @property
    def tags(self) -> list[str]:
        return list(self.vocabs.tags.itos)

    @property
    def title(self) -> str:
        """The model in a raindrop's title: its decoder, attention and sketch steps (``nef-f, csoftmax,
        N = L``)."""
        m = self.config.model
        return f"{m.model}, {m.decoder.attention}, " + (
            "N = L" if m.decoder.sketch_steps is None else f"N = {m.decoder.sketch_steps}"
        )

    def tag(
        self,
        sentences: str | Sequence[str] | Sequence[Sequence[str]],
        *,
        attention: bool = False,
        probabilities: bool = False,
        heads: bool = False,
        extras: Sequence[Mapping] | None = None,
        batch_size: int = 256,
        max_tokens: int | None = INFERENCE_MAX_TOKENS,
        processes: int | None = None,
    ) -> list[Tagged]:
        """Tag text or tokenized sentences: one :class:`~easyfirst.tagging.tagged.Tagged` per sentence,
        whatever the input.

        - **a list of token lists** ``[["The", "dog", "barks", "."], ...]``: one record per sentence, its
          ``tokens`` the given words (the model's own input: no tokenization happens).
        - **a list of strings** ``["The", "dog", "barks", "."]``: the tokens of *one* sentence, as Flair's
          ``Sentence(["The", "dog"])`` and a pretokenized Stanza sentence read it: one record. A string
          with whitespace in such a list is a ValueError (it is not a token: pass text as one string).
        - **a string**: plain text, split into sentences and tokenized as ``easyfirst tag`` does for a
          text file (segtok; see easyfirst.data.text); one record per sentence found, its ``tokens``
          the tokenizer's and its ``offsets`` their ``(start, end)`` characters in the string.

        For a model of entities (NER), each record's ``entities`` lists its entity spans (label, first and
        last token, start and end character for text, and the text).

        Anything else (bytes, numbers, a list of numbers) is a TypeError. A record reads as its
        ``(token, tag)`` pairs; ``.tags`` is its list of tags.

        ``attention``: each record's ``attention`` is its ``(N, L)`` tensor of αⁿ (rows: sketch steps,
        columns: words; ``(0, L)`` for a model without sketch steps). ``probabilities``: its ``(L, K)``
        output distribution over the tags ``self.tags`` (softmax, sparsemax or α-entmax of the scores, as
        trained, exact zeros for α > 1; or the CRF's per-word marginals). ``heads`` (quality estimation:
        a list of sentences with their ``extras``): its ``heads``, a dict of the tags of the model's QE
        heads (the extra outputs: easyfirst.data.outputs), ``gaps`` (N + 1) and/or ``source_tags`` (one per
        source word); empty for a model without heads. An empty MT sentence gets an ``OK`` gap and
        ``BAD`` source words. What is not asked for is None.

        ``extras[k]`` holds sentence k's inputs beside its words, for models that use them (quality
        estimation: ``{"source": words, "alignment": [(i, j), ...]}``). Sentences are sorted by length and
        tagged in batches of at most ``batch_size`` sentences and ``max_tokens`` padded tokens (None: no
        cap; on a GPU a larger cap may be faster).

        ``processes``: how many processes tag a large call (2,000 words or more, from the main thread,
        on the CPU): this one and ``processes`` − 1 forked, which hold the model as it is then and are
        kept for later calls (easyfirst.tagging.pool; :meth:`close` ends them). None takes
        :attr:`processes`, whose default None means this process alone: a library call never forks
        unless asked. ``easyfirst tag`` and ``evaluate`` ask for one per core (at most 8:
        easyfirst.parallel.cores.tagging_processes). The tags are the same either way.

        During the call, torch computes with :attr:`threads` intra-op threads (see there); afterwards,
        and when the call raises, the process's thread settings are those it found.
        """
        kind = input_kind(sentences)
        if heads and kind != "sentences":
            raise ValueError("heads: for a list of tokenized sentences with their extras (QE)")
        text = found = None
        if kind == "text":
            from easyfirst.data.text import split

            text, found = sentences, split(sentences)
            sentences = [s.words for s in found]
        elif kind == "tokens":
            sentences = [list(sentences)]
        tagged = self._tag_sentences(
            sentences,
            asked=(attention, probabilities, heads),
            extras=extras,
            batch_size=batch_size,
            max_tokens=max_tokens,
            processes=processes,
        )
        if found is not None:  # each token's characters in the text
            locate(tagged, [s.tokens for s in found], text)
        return tagged

    def _tag_packed(
        self,
        sentences: Sequence[Sequence[str]],
        batches: Sequence | None,
        *,
        batch_size: int = 256,
        max_tokens: int | None = INFERENCE_MAX_TOKENS,
    ) -> list[Tagged]:
        """:meth:`tag` (tags only) of sentences whose batches' ids were packed before by
        easyfirst.data.buckets.pack in this model's vocabularies (``easyfirst tag`` reads ahead:
        easyfirst.data.conllu.packed_windows), checked against them; None: packed by no one, as
        :meth:`tag`. For easyfirst.tagging.pipeline, the windows of a pool that follows (:meth:`follow`);
        not for a model with features beside its words and affixes."""
        if batches is not None and self.vocabs.features:
            raise ValueError("batches: for a list of tokenized sentences, of a model without features")
        return self._tag_sentences(
            sentences,
            asked=NOTHING_ASKED,
            extras=None,
            batch_size=batch_size,
            max_tokens=max_tokens,
            processes=None,
            packed=batches,
        )

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
        words, written = self._one_sentence(text_or_tokens, sentence)
        if extra is None and get_task(self.config.data.task).format.refuses_text is not None:
            raise ValueError("a QE model's raindrop needs the sentence's extra (source and alignment)")
        if gold is not None and len(gold) != len(words):
            raise ValueError(f"gold has {len(gold)} tags for {len(words)} tokens")
        tagged = self.tag([words], attention=True, extras=[extra] if extra else None)[0]
        title = self.title
        drop = Drop(
            words,
            tagged.tags,
            tagged.attention,
            None if gold is None else list(gold),
            f"{name}: {title}" if name else title,
            name or "",
            self.config.data.task,
            written,
        )
        return Raindrop([drop], self.tags)

    @staticmethod
    def _one_sentence(text_or_tokens: str | Sequence[str], sentence: int) -> tuple[list[str], str]:
        """The tokens of sentence ``sentence`` (from 1) of text and that sentence as written, or the
        given tokens and ``""`` (the text is not known)."""
        if sentence < 1:
            raise ValueError("sentence counts from 1")
        if input_kind(text_or_tokens) == "tokens":
            if sentence != 1:
                raise ValueError("sentence: a list of tokens is one sentence")
            return list(text_or_tokens), ""
        if input_kind(text_or_tokens) != "text":
            raise TypeError("Tagger.raindrop takes text or one sentence's tokens, not a list of sentences")
        from easyfirst.data.text import split

        sentences = split(text_or_tokens)
        if sentence > len(sentences):
            raise ValueError(f"the text has {len(sentences)} sentence(s), fewer than sentence={sentence}")
        return sentences[sentence - 1].words, sentences[sentence - 1].text

    def _tag_sentences(
        self,
        sentences: Sequence[Sequence[str]],
        *,
        asked: tuple[bool, bool, bool],
        extras: Sequence[Mapping] | None,
        batch_size: int,
        max_tokens: int | None,
        processes: int | None,
        packed: Sequence | None = None,
    ) -> list[Tagged]:
        """One :class:`Tagged` per sentence, with what ``asked`` names (attention, probabilities, QE
        heads), in batches of ``packed`` ids where given; through the pool of ``processes`` (None:
        :attr:`processes`) for a large call."""
        with_attention, with_probabilities, with_heads = asked
        itos, size = self.vocabs.tags.itos, len(self.tags)
        found = [
            Tagged(
                list(words),
                [],
                torch.zeros(0, 0) if with_attention else None,
                torch.zeros(0, size) if with_probabilities else None,
                {head.name: [] for head in self.model.outputs} if with_heads else None,
                scheme=self.entity_scheme,
            )
            for words in sentences
        ]
        keep, jobs = make_jobs(sentences, extras, packed, batch_size, max_tokens)
        if self._pool is not None and not self._pool.closed:
            self._pool.check_call(batch_size, max_tokens, extras)
        count = processes_for(self.processes if processes is None else processes, self.device)
        with held_threads(self.threads), torch.inference_mode():
            outputs = tag_batches(
                jobs,
                lambda job: tag_job(self.model, self.vocabs, job, self.device, asked),
                lambda: self._tagging_pool(count),
                sum(len(sentences[k]) for k in keep),
                asked,
                held=self.threads is not None,
            )
        for out in outputs:
            lengths, best = out["lengths"], out["best"].tolist()  # one call per batch, not per sentence
            for row, index in enumerate(out["order"]):
                k, n = keep[index], lengths[row]
                tagged = found[k]
                tagged.tags = to_bio([itos[t] for t in best[row][:n]], self.scheme)
                if with_attention:
                    alpha = out["attention"]
                    matrix = alpha[row, : out["steps"][row], :n] if alpha is not None else torch.zeros(0, n)
                    tagged.attention = matrix.clone()
                if with_probabilities:
                    tagged.probabilities = out["probabilities"][row, :n].clone()
                for name, rows in out.get("heads", {}).items():
                    tagged.heads[name] = rows[row]
        for k, tagged in enumerate(found):
            if not tagged.tokens and tagged.heads is not None:  # each extra output's fill-in
                for head in self.model.outputs:  # (QE: an OK gap and BAD source words)
                    tagged.heads[head.name] = head.filled(extras[k] if extras else None)
        return found


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
