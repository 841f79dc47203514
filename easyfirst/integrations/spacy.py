"""The ``easyfirst`` spaCy pipeline component: ``nlp.add_pipe("easyfirst", config={"model": PATH})``.

spaCy finds the factory through the ``spacy_factories`` entry point in pyproject.toml (installing the
extra ``spacy`` is enough; no import). The component tags each sentence of a Doc (``doc.sents`` when
something before it set sentence boundaries, else the whole Doc as one sentence) with the model's
:meth:`~easyfirst.api.Tagger.tag`, on the Doc's own tokens, and writes where the model's task says
(:meth:`easyfirst.tasks.parts.Format.text_column`): ``token.pos_`` for a UPOS model, ``token.tag_`` for an XPOS
model, ``doc.ents`` for a model of entities (``Tagged.entities``: easyfirst.tagging.entities). Whitespace
tokens (``token.is_space``, or any token with whitespace in it) are not words to the model: they get no
tag and no column of attention.

On the Doc (plain data, so that ``doc.to_bytes()`` and pickling keep it):

- ``doc._.easyfirst``: ``{"tokens", "tags", "attention", "title", "task", "tagset"}``, one item of
  ``tokens`` (token indices), ``tags`` (the model's own, BIO for entities) and ``attention`` (a NumPy
  ``(N, L)`` array of αⁿ: rows sketch steps, columns those tokens) per tagged sentence;
- ``doc._.easyfirst_attention``: that list of attention arrays;
- ``doc._.raindrop``: the sentences' raindrop (easyfirst.viz.web.Raindrop, one panel per sentence), shown
  inline by a notebook cell ending in it, ``.save("drop.html")`` as ``Tagger.raindrop`` does.

``nlp.pipe(texts, batch_size=…)`` tags each batch of Docs with one ``Tagger.tag`` call.
"""

from collections.abc import Iterable, Iterator

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from easyfirst.api import Tagger
from easyfirst.tasks import get_task

FACTORY = "easyfirst"
RECORD = "easyfirst"  # doc._.easyfirst
ATTENTION = "easyfirst_attention"  # doc._.easyfirst_attention
RAINDROP = "raindrop"  # doc._.raindrop


def _attention(doc: Doc) -> list | None:
    record = doc._.get(RECORD)
    return None if record is None else record["attention"]


def _raindrop(doc: Doc):
    """The raindrop of the Doc's tagged sentences, one panel each (None before the component ran)."""
    import torch

    from easyfirst.viz.plot import Drop
    from easyfirst.viz.web.raindrop import Raindrop

    record = doc._.get(RECORD)
    if record is None:
        return None
    if not record["tokens"]:
        raise ValueError("the Doc has no words to draw")
    if all(len(matrix) == 0 for matrix in record["attention"]):
        raise ValueError("this model has no sketch steps (N = 0): there is no attention to plot")
    drops = [
        Drop(
            [doc[i].text for i in tokens],
            tags,
            torch.tensor(matrix),
            None,
            record["title"],
            "",
            record["task"],
        )
        for tokens, tags, matrix in zip(record["tokens"], record["tags"], record["attention"], strict=True)
    ]
    return Raindrop(drops, record["tagset"])


def _extensions() -> None:
    """The Doc's attributes (once; again after a test removed them)."""
    if not Doc.has_extension(RECORD):
        Doc.set_extension(RECORD, default=None)
    if not Doc.has_extension(ATTENTION):
        Doc.set_extension(ATTENTION, getter=_attention)
    if not Doc.has_extension(RAINDROP):
        Doc.set_extension(RAINDROP, getter=_raindrop)


def is_word(token) -> bool:
    """Whether the model sees ``token``: a token with no whitespace in it (easyfirst.api.input_kind)."""
    return bool(token.text) and not any(c.isspace() for c in token.text)


class EasyFirst:
    """The pipeline component: one Tagger, the annotation its task asks for, ``batch_size`` sentences
    per batch of the model (``Tagger.tag``'s; ``nlp.pipe``'s ``batch_size`` counts Docs)."""

    def __init__(self, nlp: Language, name: str, model: str | None, batch_size: int):
        self.name, self.batch_size = name, batch_size
        self.tagger = Tagger.load(model)
        task, data = get_task(self.tagger.config.data.task), self.tagger.config.data
        column = task.format.text_column(data)
        if task.scoring.outside is not None:
            self.sets = "ents"
        elif column in ("upos", "xpos"):
            self.sets = {"upos": "pos", "xpos": "tag"}[column]
        else:  # QE: sentence pairs, not the tokens of one Doc
            raise ValueError(
                f"easyfirst: {model or 'the model'} is a {task.name} model, which tags {task.format.input_kind}, "
                "not a Doc's tokens: a spaCy component needs a pos or ner model"
            )
        self.task = task.name
        _extensions()

    def __call__(self, doc: Doc) -> Doc:
        self.annotate([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], batch_size: int = 128) -> Iterator[Doc]:
        """The Docs of ``stream``, tagged ``batch_size`` Docs per ``Tagger.tag`` call."""
        for docs in minibatch(stream, size=batch_size):
            self.annotate(docs)
            yield from docs

    def annotate(self, docs: list[Doc]) -> None:
        """Tag the sentences of ``docs`` in one ``Tagger.tag`` call and write the annotation on them."""
        found = [
            [self.words(sent) for sent in doc.sents]
            if doc.has_annotation("SENT_START")
            else [self.words(doc[:])]
            for doc in docs
        ]
        tokens = [[s for s in sentences if s] for sentences in found]
        words = [
            [doc[i].text for i in s] for doc, sentences in zip(docs, tokens, strict=True) for s in sentences
        ]
        tagged = self.tagger.tag(words, attention=True, batch_size=self.batch_size)
        tags, attention = [t.tags for t in tagged], [t.attention for t in tagged]
        start = 0
        for doc, sentences in zip(docs, tokens, strict=True):
            end = start + len(sentences)
            self.write(doc, sentences, tagged[start:end])
            doc._.set(
                RECORD,
                {
                    "tokens": sentences,
                    "tags": tags[start:end],
                    "attention": [a.numpy().astype(numpy.float32) for a in attention[start:end]],
                    "title": self.tagger.title,
                    "task": self.task,
                    "tagset": self.tagger.tags,
                },
            )
            start = end

    @staticmethod
    def words(span: Span) -> list[int]:
        return [token.i for token in span if is_word(token)]

    def write(self, doc: Doc, sentences: list[list[int]], tagged: list) -> None:
        """Write each sentence's tags (``tagged``: easyfirst.tagging.tagged.Tagged, one per list of token
        indices in ``sentences``) on ``doc``: its entities (``Tagged.entities``, the one decoding of
        spans that the API, the CLI and the server give too) or each token's tag."""
        if self.sets == "ents":
            doc.ents = [
                Span(doc, indices[entity.first], indices[entity.last] + 1, label=entity.label)
                for indices, sentence in zip(sentences, tagged, strict=True)
                for entity in sentence.entities or ()
            ]
            return
        for indices, sentence in zip(sentences, tagged, strict=True):
            for i, tag in zip(indices, sentence.tags, strict=True):
                setattr(doc[i], f"{self.sets}_", tag)


@Language.factory(
    FACTORY,
    default_config={"model": None, "batch_size": 256},
    assigns=["token.pos", "token.tag", "doc.ents", f"doc._.{RECORD}"],
)
def make_easyfirst(nlp: Language, name: str, model: str | None, batch_size: int) -> EasyFirst:
    """``model``: a model folder written by ``easyfirst train`` (None: the bundled English UPOS model)."""
    return EasyFirst(nlp, name, model, batch_size)
