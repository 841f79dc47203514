"""Plain text in: sentence splitting and tokenization, and tagged CoNLL-U out.

Sentences are split and tokenized with **segtok** (``split_multi``, then ``web_tokenizer`` and
``split_contractions``), the rule-based splitter and tokenizer that Flair uses. It was compared with
syntok (its successor, by the same author) on paragraphs with abbreviations, "U.S.", quotes, URLs,
numbers and contractions; segtok follows the conventions of the treebanks our models are trained on
(Penn Treebank / UD English): it keeps "Mr.", "U.S.", "D.C.", "i.e." and "e.g." whole where syntok
splits off their final period ("Mr" "."), it splits "don't" into "do" "n't" where syntok rewrites the
token to "not" (a word that is not in the text, which would break ``# text``), and it keeps "Jan. 5th"
in one sentence where syntok splits after "Jan.". Both keep URLs, decimals and "1,000,000" whole.

Every token keeps its character offsets in the text as given (a CRLF line ending counts two
characters, as it does in the caller's string), so the output is exact: ``SpaceAfter=No`` is
written where no whitespace follows a token, and ``# text`` is the tokens joined by exactly that
spacing (a run of whitespace, a line break inside a sentence included, reads as one space, as in UD).
Blank lines separate paragraphs (``# newpar``) and always end a sentence.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from easyfirst.data.files import TAG_WINDOW, decode_line, open_binary

_PARAGRAPH = re.compile(r"\n[^\S\n]*\n\s*")  # a blank line (maybe of spaces), and what follows it
_TOKEN = re.compile(r"\S+")


@dataclass
class Token:
    form: str
    start: int  # offsets into the text as given: text[start:end] is the token, unless segtok
    end: int  # joined a word hyphenated across a line break ("inter-\nnational": "inter-national")
    space_after: bool = True


@dataclass
class TextSentence:
    """One sentence of a plain text: its tokens, and whether it begins a paragraph."""

    tokens: list[Token]
    new_paragraph: bool = False

    @property
    def words(self) -> list[str]:
        return [t.form for t in self.tokens]

    @property
    def text(self) -> str:
        """The sentence as ``# text`` writes it: the tokens, with a space after those that had one."""
        return "".join(t.form + (" " if t.space_after else "") for t in self.tokens).rstrip(" ")


_NO_SPACE_BEFORE = re.compile(r"^(?:[.,;:!?%)\]}…]+|'(?:s|re|ve|ll|d|m)|n't|''|\.\.\.)$", re.I)
_NO_SPACE_AFTER = {"(", "[", "{", "$", "£", "€", "``", "#"}


def detokenize(words: Sequence[str]) -> str:
    """Tokens as text is written, for display where the text itself is not known (a title, a label):
    no space before closing punctuation and clitics (``Seattle .`` reads ``Seattle.``, ``did n't``
    ``didn't``), none after an opening bracket or a currency sign, and straight double quotes
    alternating between opening and closing. Where the text is known, show it instead
    (:attr:`TextSentence.text`, a CoNLL-U sentence's ``# text``)."""
    out: list[str] = []
    glue, quotes = True, 0  # glue: no space before the next token
    for word in words:
        closing_quote = word == '"' and quotes % 2 == 1
        if out and not glue and not _NO_SPACE_BEFORE.match(word) and not closing_quote:
            out.append(" ")
        out.append(word)
        if word == '"':
            quotes += 1
        glue = word in _NO_SPACE_AFTER or (word == '"' and not closing_quote)
    return "".join(out)


def _segtok_tokens(sentence: str) -> list[str]:
    from segtok.tokenizer import split_contractions, web_tokenizer

    return split_contractions(web_tokenizer(sentence))


def _align(text: str, forms: Sequence[str], start: int) -> list[Token] | None:
    """Each form's span in ``text`` from ``start`` on, in order; whitespace inside a token's span is
    allowed (segtok joins "inter-\\nnational"). None if a form is not in the text."""
    tokens, position = [], start
    for form in forms:
        while position < len(text) and text[position].isspace():
            position += 1
        begin, k = position, 0
        while k < len(form) and position < len(text):
            if text[position] == form[k]:
                k += 1
            elif not (text[position].isspace() and k > 0):
                return None
            position += 1
        if k < len(form):
            return None
        tokens.append(Token(form, begin, position))
    return tokens


def tokenize(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """The tokens of ``text[start:end]`` (one sentence), with their offsets in ``text``."""
    end = len(text) if end is None else end
    piece = text[start:end]
    tokens = _align(text, _segtok_tokens(piece), start)
    if tokens is None:  # segtok changed a character: fall back to whitespace tokens for this sentence
        tokens = [Token(m.group(), start + m.start(), start + m.end()) for m in _TOKEN.finditer(piece)]
    for token, following in zip(tokens, tokens[1:], strict=False):
        token.space_after = following.start > token.end
    return tokens


def whitespace_tokens(text: str) -> list[Token]:
    """The whitespace-separated tokens of ``text`` (``--pretokenized``): one sentence, no splitting."""
    return [Token(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def normalise_newlines(text: str) -> str:
    """CRLF and CR line endings as LF (segtok splits at LF line breaks only)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split(text: str) -> list[TextSentence]:
    """The sentences of a plain text, tokenized; a blank line starts a new paragraph. Each token's
    ``start`` and ``end`` index ``text`` itself (line endings are read as LF, but counted as given)."""
    given, text = text, normalise_newlines(text)
    sentences = _split_normalised(text)
    if len(text) != len(given):  # CRLF read as LF: each LF of one stands one character further on
        _restore_offsets(sentences, [m.start() - k for k, m in enumerate(re.finditer("\r\n", given))])
    return sentences


def _restore_offsets(sentences: list[TextSentence], joined: list[int]) -> None:
    """Offsets into the normalised text → offsets into the text given, ``joined`` being the positions
    (in the normalised text, ascending) of the LFs that were CRLFs there."""
    for sentence in sentences:
        for token in sentence.tokens:
            token.start += bisect_left(joined, token.start)
            token.end += bisect_left(joined, token.end)


def _split_normalised(text: str) -> list[TextSentence]:
    from segtok.segmenter import split_multi

    sentences: list[TextSentence] = []
    position = 0
    for paragraph_end in [m.start() for m in _PARAGRAPH.finditer(text)] + [len(text)]:
        paragraph = text[position:paragraph_end]
        cursor, first = position, True
        for piece in split_multi(paragraph):
            if not piece.strip():
                continue
            begin = text.find(piece, cursor, paragraph_end)
            if begin < 0:  # segtok returned text that is not in the input: tokenize the rest in one
                begin, piece = cursor, text[cursor:paragraph_end]
            tokens = tokenize(text, begin, begin + len(piece))
            cursor = begin + len(piece)
            if tokens:
                sentences.append(TextSentence(tokens, new_paragraph=first))
                first = False
            if cursor >= paragraph_end:
                break
        match = _PARAGRAPH.match(text, paragraph_end)
        position = match.end() if match else len(text)
    return sentences


def read_text(source: str | Path | BinaryIO, name: str | None = None) -> list[TextSentence]:
    """The sentences of a UTF-8 plain-text file (a path or a binary stream); a BOM is dropped."""
    return split(read_plain(source, name))


def read_plain(source: str | Path | BinaryIO, name: str | None = None) -> str:
    """The text of a UTF-8 plain-text file (a path or a binary stream), without its BOM if it has one
    (as Python's ``utf-8-sig`` reads it: the offsets of :func:`split` count from the character after)."""
    if isinstance(source, str | Path):
        stream, name, close = open_binary(source), name or str(source), True
    else:
        stream, name, close = source, name or getattr(source, "name", "<stream>"), False
    try:
        text = "".join(decode_line(raw, name, number, "plain text") for number, raw in enumerate(stream, 1))
    finally:
        if close:
            stream.close()
    return text.removeprefix("\ufeff")


def conllu_lines(
    sentences: Iterable[TextSentence],
    tags: Iterable[Sequence[str]],
    tag_column: str = "upos",
    first_id: int = 1,
) -> Iterable[str]:
    """CoNLL-U lines (with ``\\n``) for tagged sentences: ``# sent_id``, ``# text``, and per token
    ID, FORM, the tag in the UPOS (or XPOS) column, ``SpaceAfter=No`` in MISC where no space follows,
    ``_`` elsewhere; a blank line after each sentence. ``tag_column`` ``misc:KEY`` puts the tag in MISC
    as ``KEY=tag`` instead (entity tags: ``misc:NER``), since CoNLL-U has no column for them."""
    misc_key = tag_column.removeprefix("misc:") if tag_column.startswith("misc:") else None
    column = None if misc_key else {"upos": 3, "xpos": 4}[tag_column]
    for number, (sentence, predicted) in enumerate(zip(sentences, tags, strict=True), first_id):
        if sentence.new_paragraph:
            yield "# newpar\n"
        yield f"# sent_id = {number}\n"
        yield f"# text = {sentence.text}\n"
        for index, (token, tag) in enumerate(zip(sentence.tokens, predicted, strict=True), 1):
            fields = [str(index), token.form] + ["_"] * 8
            misc = [f"{misc_key}={tag}"] if misc_key else []
            if column is not None:
                fields[column] = tag
            if not token.space_after and index < len(sentence.tokens):
                misc.append("SpaceAfter=No")
            fields[9] = "|".join(misc) or "_"
            yield "\t".join(fields) + "\n"
        yield "\n"


def tag_text(
    source: str | Path | BinaryIO,
    out: BinaryIO,
    predict: Callable[[list[list[str]]], Sequence[Sequence[str]]],
    tag_column: str = "upos",
    window: int = TAG_WINDOW,
    name: str | None = None,
) -> int:
    """Split and tokenize a plain-text file, tag it with ``predict`` (``window`` sentences at a time)
    and write CoNLL-U to ``out``. Returns the number of sentences."""
    sentences = read_text(source, name)
    for start in range(0, len(sentences), window):
        part = sentences[start : start + window]
        lines = conllu_lines(part, predict([s.words for s in part]), tag_column, first_id=start + 1)
        out.write("".join(lines).encode("utf-8"))
    return len(sentences)
