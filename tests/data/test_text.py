"""Plain text in: sentence splitting, tokenization with offsets, CoNLL-U out, and Tagger.tag's inputs.

Expected tokens and CoNLL-U lines are written out by hand (UD English / Penn Treebank conventions).
"""

from __future__ import annotations

import io

import pytest

from easyfirst import Tagger
from easyfirst.api import input_kind
from easyfirst.data.conllu import read_conllu
from easyfirst.data.text import conllu_lines, detokenize, read_text, split, tag_text, whitespace_tokens
from easyfirst.tagging.tagged import Tagged

TRICKY = (
    'Mr. Smith didn\'t pay $3.50 in the U.S. today.  He said, "Fine."\r\n'
    "\r\n"
    "Visit https://example.org/a.b?c=1 now! The plan\n"
    "costs 1,000,000 dollars, i.e. a lot."
)


def test_splits_and_tokenizes_as_ud_english_does():
    sentences = split(TRICKY)
    assert [s.words for s in sentences] == [
        ["Mr.", "Smith", "did", "n't", "pay", "$", "3.50", "in", "the", "U.S.", "today", "."],
        ["He", "said", ",", '"', "Fine", ".", '"'],
        ["Visit", "https://example.org/a.b?c=1", "now", "!"],
        ["The", "plan", "costs", "1,000,000", "dollars", ",", "i.e.", "a", "lot", "."],
    ]
    assert [s.new_paragraph for s in sentences] == [True, False, True, False]


def test_text_is_rebuilt_from_the_tokens_and_their_spacing():
    sentences = split(TRICKY)
    assert [s.text for s in sentences] == [
        "Mr. Smith didn't pay $3.50 in the U.S. today.",
        'He said, "Fine."',
        "Visit https://example.org/a.b?c=1 now!",
        "The plan costs 1,000,000 dollars, i.e. a lot.",  # the line break inside reads as one space
    ]
    first = sentences[0]
    assert [t.space_after for t in first.tokens] == [
        True, True, False, True, True, False, True, True, True, True, False, True,
    ]  # fmt: skip
    # offsets point into the text as given (a CRLF counts two characters)
    assert all(TRICKY[t.start : t.end] == t.form for s in sentences for t in s.tokens)


def test_a_word_hyphenated_across_a_line_break_keeps_the_rest_aligned():
    (sentence,) = split("An inter-\nnational deal, done.")
    assert sentence.words == ["An", "inter-national", "deal", ",", "done", "."]
    assert sentence.text == "An inter-national deal, done."


def test_conllu_output_by_hand():
    sentences = split("She didn't go. Fine!")
    tags = [["PRON", "AUX", "PART", "VERB", "PUNCT"], ["ADJ", "PUNCT"]]
    assert "".join(conllu_lines(sentences, tags)) == (
        "# newpar\n"
        "# sent_id = 1\n"
        "# text = She didn't go.\n"
        "1\tShe\t_\tPRON\t_\t_\t_\t_\t_\t_\n"
        "2\tdid\t_\tAUX\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "3\tn't\t_\tPART\t_\t_\t_\t_\t_\t_\n"
        "4\tgo\t_\tVERB\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "5\t.\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n"
        "\n"
        "# sent_id = 2\n"
        "# text = Fine!\n"
        "1\tFine\t_\tADJ\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "2\t!\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n"
        "\n"
    )
    xpos = "".join(conllu_lines(sentences[1:], [["JJ", "."]], tag_column="xpos"))
    assert "1\tFine\t_\t_\tJJ\t_\t_\t_\t_\tSpaceAfter=No\n" in xpos


def test_tag_text_writes_conllu_that_reads_back_with_the_same_text(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(("\ufeff" + TRICKY).encode("utf-8"))
    out = io.BytesIO()
    count = tag_text(path, out, lambda batch: [["X"] * len(w) for w in batch], window=3)
    assert count == 4
    written = tmp_path / "notes.conllu"
    written.write_bytes(out.getvalue())
    back = read_conllu(written)
    assert [s.words for s in back] == [s.words for s in read_text(path)]
    texts = [
        line[len("# text = ") :] for line in out.getvalue().decode().splitlines() if line.startswith("# text")
    ]
    assert texts[0] == "Mr. Smith didn't pay $3.50 in the U.S. today."
    ids = [line for line in out.getvalue().decode().splitlines() if line.startswith("# sent_id")]
    assert ids == ["# sent_id = 1", "# sent_id = 2", "# sent_id = 3", "# sent_id = 4"]  # across batches


def test_empty_text_has_no_sentences():
    assert split("") == [] and split(" \n\n \n") == []


def test_whitespace_tokens_keep_punctuation_attached():
    assert [t.form for t in whitespace_tokens("She reads a book.")] == ["She", "reads", "a", "book."]


@pytest.fixture(scope="module")
def tagger():
    return Tagger.load()


def test_tag_a_string_returns_a_tagged_sentence_of_token_tag_pairs_per_sentence(tagger):
    result = tagger.tag("She reads a book. He sleeps.")
    assert [s.tokens for s in result] == [["She", "reads", "a", "book", "."], ["He", "sleeps", "."]]
    assert [[w for w, _ in s] for s in result] == [s.tokens for s in result]
    assert all(tag in tagger.tags for s in result for _, tag in s)
    assert result[0][3] == ("book", "NOUN") and result[0][4] == (".", "PUNCT")  # issue #17: not "book."


def test_tag_a_list_of_strings_is_one_sentence(tagger):
    tokens = ["She", "reads", "a", "book", "."]
    (one,) = tagger.tag(tokens, attention=True)
    assert one.tokens == tokens and one.tags == ["PRON", "VERB", "DET", "NOUN", "PUNCT"]  # by hand (UD)
    assert tuple(one.attention.shape) == (5, 5)
    assert tagger.tag(tokens) == [Tagged(tokens, one.tags)]  # the same record, without the attention


def test_tag_a_string_with_attention(tagger):
    tagged = tagger.tag("Hi there. Go!", attention=True, probabilities=True)
    assert [len(s) for s in tagged] == [3, 2]
    assert [s.attention.shape[1] for s in tagged] == [3, 2]
    assert [tuple(s.probabilities.shape) for s in tagged] == [(3, len(tagger.tags)), (2, len(tagger.tags))]


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (b"She reads.", TypeError, "decode bytes"),
        ([1, 2, 3], TypeError, "item 0 is of type int"),
        (5, TypeError, "not int"),
        ([["a"], "b"], TypeError, "not a mixture"),
        ([["a", 3]], TypeError, "holds 3 of type int"),
        (["She reads.", "He runs."], ValueError, "one sentence's tokens"),
        (["a", ""], ValueError, "not a token"),
    ],
)
def test_tag_rejects_other_inputs_clearly(value, error, words):
    with pytest.raises(error, match=words):
        input_kind(value)


def test_input_kinds():
    assert input_kind("text") == "text"
    assert input_kind(["a", "b"]) == "tokens"
    assert input_kind([["a"], []]) == "sentences"
    assert input_kind([]) == "sentences"
    assert input_kind((("a",),)) == "sentences"


# the command line: `easyfirst tag FILE.txt`, --format, --text, --pretokenized, plot --text


def test_tag_a_plain_text_file_detected_from_its_content(tmp_path):
    from conftest import run_cli

    notes = tmp_path / "notes"  # no .txt: the content decides
    notes.write_text("She reads a book. He doesn't.\n", encoding="utf-8")
    result = run_cli("tag", notes)
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert lines[:3] == ["# newpar", "# sent_id = 1", "# text = She reads a book."]
    rows = [line.split("\t") for line in lines if line and not line.startswith("#")]
    assert [r[1] for r in rows] == ["She", "reads", "a", "book", ".", "He", "does", "n't", "."]
    assert [r[0] for r in rows] == ["1", "2", "3", "4", "5", "1", "2", "3", "4"]
    assert rows[3][3] == "NOUN" and rows[3][9] == "SpaceAfter=No"  # issue #17: not "book." as one token
    assert "# text = He doesn't." in lines
    stdin = run_cli("tag", "-", input=notes.read_bytes())
    assert stdin.stdout == result.stdout
    forced = run_cli("tag", notes, "--format", "model", process=True)  # read as CoNLL-U: the cause is named
    assert forced.returncode == 2
    assert "this looks like plain text; this is a pos model, which reads CoNLL-U" in forced.stderr.decode()


def test_format_text_reads_any_file_as_text_and_conllu_is_not_mistaken_for_text(tmp_path):
    from conftest import SAMPLE, run_cli

    # auto: CoNLL-U stays CoNLL-U, byte for byte apart from the tags
    tagged = run_cli("tag", SAMPLE, process=True)
    assert tagged.returncode == 0 and tagged.stdout.count(b"\n") == SAMPLE.read_bytes().count(b"\n")
    columns = tmp_path / "tokens.conll"
    columns.write_text("The DT\ndog NN\n", encoding="utf-8")
    as_text = run_cli("tag", columns, "--format", "text")
    assert "# text = The DT dog NN" in as_text.stdout.decode()


def test_tag_text_splits_sentences_and_pretokenized_keeps_whitespace(tmp_path):
    from conftest import run_cli

    result = run_cli("tag", "--text", "She reads a book. He sleeps.")
    assert result.returncode == 0, result.stderr.decode()
    blocks = [b.splitlines() for b in result.stdout.decode().split("\n\n")]
    assert [[row.split("\t")[0] for row in block] for block in blocks] == [
        ["She", "reads", "a", "book", "."],
        ["He", "sleeps", "."],
    ]
    raw = run_cli("tag", "--text", "She reads a book.", "--pretokenized")
    assert [row.split("\t")[0] for row in raw.stdout.decode().splitlines()] == ["She", "reads", "a", "book."]
    wrong = run_cli("tag", tmp_path / "x.txt", "--pretokenized")
    assert wrong.returncode == 2 and b"--pretokenized goes with --text" in wrong.stderr
    bad = run_cli("tag", "--text", "a", "--format", "txt")
    assert bad.returncode == 2 and b"--format must be auto, text or model" in bad.stderr


def test_plot_text_picks_a_sentence(tmp_path):
    from conftest import run_cli

    result = run_cli("plot", "--text", "She reads. Microsoft bought it.", "--sentence", "2", "--terminal")
    assert result.returncode == 0, result.stderr.decode()
    assert "1:Microsoft/" in result.stdout.decode() and "She" not in result.stdout.decode()
    over = run_cli("plot", "--text", "She reads.", "--sentence", "2", "--terminal")
    assert over.returncode == 2 and b"--text has 1 sentence(s), fewer than --sentence 2" in over.stderr


def test_plot_titles_its_page_with_the_sentence_as_written(tmp_path):
    """The page's title said "in Seattle ." (tokens joined by spaces): from --text it is the text, from
    a CoNLL-U file the sentence's ``# text``, and from a column file its words detokenized."""
    from conftest import run_cli

    conllu = tmp_path / "s.conllu"
    conllu.write_text(
        "# sent_id = 1\n# text = It's   here.\n1\tIt\t_\tX\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "2\t's\t_\tX\t_\t_\t_\t_\t_\t_\n3\there\t_\tX\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "4\t.\t_\tX\t_\t_\t_\t_\t_\t_\n\n"
    )
    columns = tmp_path / "s.conll"
    columns.write_text("Microsoft B-ORG\nbought O\nit O\nin O\nSeattle B-LOC\n. O\n")
    for args, title in [
        (
            ["--text", "She reads. Microsoft bought it in  Seattle.", "--sentence", "2"],
            "Microsoft bought it in Seattle.",
        ),
        (["-i", conllu], "It's   here."),
        (["-m", "en-ner", "-i", columns], "Microsoft bought it in Seattle."),
    ]:
        out = tmp_path / "r.html"
        result = run_cli("plot", *args, "-o", out)
        assert result.returncode == 0, result.stderr.decode()
        assert f"<title>easyfirst raindrop: {title}</title>" in out.read_text().replace("&#x27;", "'")


@pytest.mark.parametrize(
    ("words", "written"),
    [
        (
            "Microsoft bought a small company in Seattle .".split(),
            "Microsoft bought a small company in Seattle.",
        ),
        ("We do n't know , do we ?".split(), "We don't know, do we?"),
        ("It 's John 's ( not mine ) : $ 3.50 , 10 % !".split(), "It's John's (not mine): $3.50, 10%!"),
        ('He said " go " and " stay " .'.split(), 'He said "go" and "stay".'),
        ("`` Yes , '' she said ...".split(), "``Yes,'' she said..."),
        ([], ""),
        (["."], "."),
    ],
)
def test_detokenize_writes_tokens_as_text_is_written(words, written):
    assert detokenize(words) == written


def test_detokenize_gives_back_the_text_that_split_tokenized():
    """Where segtok's tokens had single spaces in the text, detokenizing them gives that text back."""
    text = 'Mr. Smith didn\'t pay $3.50 in the U.S. today. She said: "Fine, (really) fine!"'
    for sentence in split(text):
        assert detokenize(sentence.words) == sentence.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('He said "hi."', [("He", 0), ("said", 3), ('"', 8), ("hi", 9), (".", 11), ('"', 12)]),
        ("“Ok,” she didn't say.", [("“", 0), ("Ok", 1), (",”", 3), ("she", 6), ("did", 10),
                                   ("n't", 13), ("say", 17), (".", 20)]),
        ("``Yes'' -- U.S. $3.50...", [("``", 0), ("Yes", 2), ("''", 5), ("--", 8), ("U.S.", 11),
                                      ("$", 16), ("3.50", 17), ("...", 21)]),
        ("We can't.\r\nThey won't!\n\nNew\tpara.", [("We", 0), ("ca", 3), ("n't", 5), (".", 8),
                                                   ("They", 11), ("wo", 16), ("n't", 18), ("!", 21),
                                                   ("New", 24), ("para", 28), (".", 32)]),
        ("A\u00a0b.\rC.", [("A", 0), ("b", 2), (".", 3), ("C", 5), (".", 6)]),
    ],
)  # fmt: skip
def test_offsets_of_the_hard_cases_by_hand(text, expected):
    """Where segtok splits a word ("did" "n't", "ca" "n't"), keeps one whole ("U.S.", "3.50"), splits
    quotes off, and across sentences, paragraphs and line endings (a CRLF counts two)."""
    tokens = [t for s in split(text) for t in s.tokens]
    assert [(t.form, t.start) for t in tokens] == expected
    assert all(t.end == t.start + len(t.form) and text[t.start : t.end] == t.form for t in tokens)


def test_a_hyphenated_word_spans_its_line_break_as_given():
    text = "An inter-\r\nnational deal."
    (sentence,) = split(text)
    token = sentence.tokens[1]
    assert (token.form, token.start, token.end) == ("inter-national", 3, 19)
    assert text[token.start : token.end] == "inter-\r\nnational"
