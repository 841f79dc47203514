"""Part-of-speech tagging on CoNLL-U files (UD English EWT by default): the CoNLL-U format scored by
per-word accuracy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from easyfirst.data.sentence import Sentence
from easyfirst.errors import InputError
from easyfirst.tasks import Task
from easyfirst.tasks.parts import Format, Predict, Scoring


class CoNLLU(Format[Sentence]):
    """CoNLL-U files, the tags in ``[data] tag_column`` (UPOS or XPOS); read ahead for ``easyfirst tag``."""

    input_kind = "CoNLL-U files"
    reads_ahead = True

    def read(self, path: str | Path | BinaryIO, data) -> list[Sentence]:
        from easyfirst.data.conllu import read_conllu

        return read_conllu(path, tag_column=data.tag_column)

    def stream(self, source: BinaryIO, data, name: str | None) -> Iterator[Sentence]:
        from easyfirst.data.conllu import iter_conllu

        return iter_conllu(source, tag_column=data.tag_column, name=name)

    def validate(self, data, source: str) -> None:
        if data.tag_column not in ("upos", "xpos"):
            raise InputError("tag_column must be upos or xpos", source)

    def text_column(self, data) -> str:
        return data.tag_column

    def tag_set(self, data) -> str:
        return data.tag_column.upper()

    def write(
        self, source, out: BinaryIO, predict: Predict, data, options, *, name: str, windows=None, **_
    ) -> int:
        """``windows``: the file's :func:`~easyfirst.data.conllu.packed_windows`, read ahead."""
        from easyfirst.data.conllu import tag_conllu

        return tag_conllu(source, out, predict, tag_column=data.tag_column, name=name, windows=windows)

    def read_ahead(
        self, source: BinaryIO, folder: Path, tag_column: str, name: str, batch_size: int
    ) -> Iterator:
        from easyfirst.atomic import read_json
        from easyfirst.data.conllu import conllu_windows, packed_windows
        from easyfirst.data.vocab import Vocabularies
        from easyfirst.resources import VOCAB_FILE

        vocabs = Vocabularies.from_json(read_json(folder / VOCAB_FILE))
        if vocabs.features:  # inputs beside the words and affixes: encoded by the tagger
            return conllu_windows(source, tag_column, name=name)
        return packed_windows(source, vocabs, batch_size, tag_column=tag_column, name=name)


POS = Task(
    name="pos",
    help="part-of-speech tagging on CoNLL-U files (UD English EWT by default)",
    summary="part-of-speech tagging (CoNLL-U)",
    dataset="ud-en-ewt",
    format=CoNLLU(),
    scoring=Scoring(),
    # the training regime of the paper's own code (one sentence per update, the loss summed over its
    # words, file order; docs/studies/results.md, "The paper's training regime") at half its learning rate (the
    # most accurate setting of the attention study of issue #15: dev 94.84 ± 0.03 against 94.67 ± 0.05 at
    # 16 sentences per update, three seeds), with attention temperature 0.35 so that every model attends
    # easy-first (issue #37; row ref-lr0.05-temp0.35, three seeds: largest α 0.630 ± 0.039, sharp on every
    # seed, against 0.365 ± 0.091 at temperature 1, for dev 94.77 ± 0.12 against 94.84 ± 0.03;
    # docs/studies/attention.md, "Easy-first by default")
    defaults={
        "model": {"attention_temperature": 0.35},
        "train": {"batch_size": 1, "reduction": "sum", "shuffle": False, "lr": 0.05},
    },
    # with word vectors (--pretrained), temperature 0.25: at 0.35 the attention was sharp on one seed of
    # three (largest α 0.553, 0.666, 0.507; dev 95.31 ± 0.13), at 0.25 on every seed (0.660, 0.731,
    # 0.694; dev 95.25 ± 0.09, test 95.58 ± 0.06 against 95.51 ± 0.14; rows pos-glove-t0.35 and
    # pos-glove-t0.25, GloVe 6B 50-d; docs/studies/attention.md, "Easy-first by default")
    with_vectors={"model": {"attention_temperature": 0.25}},
    # `--easy-first`: sharper still, for a little more accuracy (row ref-lr0.05-temp0.25, three seeds:
    # largest α 0.736 ± 0.012, dev 94.69 ± 0.03; docs/studies/attention.md, "Easy-first attention: the study");
    # with word vectors it is the default
    easy_first={"model": {"attention_temperature": 0.25}},
    easy_first_note=(
        ", at a cost of about 0.1 points of dev accuracy against the pos default's 0.35, which is "
        "easy-first already; with --pretrained, 0.25 is the pos default"
    ),
)
