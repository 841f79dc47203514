"""JSON out (easyfirst.tagging.jsonl): ``easyfirst tag --output-format jsonl`` for --text, stdin, files
in the model's format and many inputs, the server's answer for the same sentence byte for byte, and the
goal on real data: every entity's text is the input's characters between its start and end."""

from __future__ import annotations

import json
import re

import pytest
from asgi import serving

from conftest import QE_GAPS, QE_SAMPLE, extra, run_cli
from easyfirst.api import Tagger
from easyfirst.tagging.jsonl import encode

TEXT = "Angela Merkel met Emmanuel Macron in Paris.\r\nThe U.S. Federal Reserve didn't move."


@pytest.fixture(scope="module")
def ner():
    return Tagger.load("en-ner")


def lines(done) -> list[dict]:
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def check_offsets(text: str, sentence: dict) -> None:
    """Each token and each entity is the text's characters between its start and end."""
    for token, (start, end) in zip(sentence["tokens"], sentence["offsets"], strict=True):
        assert text[start:end] == token
    for entity in sentence["entities"]:
        assert entity["text"] == text[entity["start"] : entity["end"]]
        assert (entity["start"], entity["end"]) == (
            sentence["offsets"][entity["first"]][0],
            sentence["offsets"][entity["last"]][1],
        )


def test_text_as_json_lines_with_offsets_and_entities(ner):
    found = lines(run_cli("tag", "-m", "en-ner", "--text", TEXT, "--output-format", "jsonl"))
    assert [s["tokens"] for s in found] == [
        ["Angela", "Merkel", "met", "Emmanuel", "Macron", "in", "Paris", "."],
        ["The", "U.S.", "Federal", "Reserve", "did", "n't", "move", "."],
    ]
    # offsets counted by hand, into the text as given (its CRLF two characters)
    assert found[0]["offsets"] == [
        [0, 6],
        [7, 13],
        [14, 17],
        [18, 26],
        [27, 33],
        [34, 36],
        [37, 42],
        [42, 43],
    ]
    assert found[1]["offsets"][:5] == [[45, 48], [49, 53], [54, 61], [62, 69], [70, 73]]
    assert [list(s) for s in found] == [["tokens", "offsets", "tags", "entities"]] * 2
    assert [s["tags"] for s in found] == [t.tags for t in ner.tag(TEXT)]
    assert [(e["label"], e["text"]) for e in found[0]["entities"]] == [
        ("PER", "Angela Merkel"), ("PER", "Emmanuel Macron"), ("LOC", "Paris"),
    ]  # fmt: skip
    for sentence in found:
        check_offsets(TEXT, sentence)


def test_stdin_text_a_column_file_and_a_pos_model(tmp_path):
    text = "She met Bo Li in Oslo.\n\nThen she left."
    found = lines(run_cli("tag", "-m", "en-ner", "--output-format", "jsonl", input=text.encode()))
    assert [s["offsets"][0] for s in found] == [[0, 3], [24, 28]]
    for sentence in found:
        check_offsets(text, sentence)
    columns = tmp_path / "a.conll"
    columns.write_text("-DOCSTART- -X- -X- O\n\nBo NNP B-NP O\nLi NNP I-NP O\nlaughed VBD B-VP O\n")
    (sentence,) = lines(run_cli("tag", "-m", "en-ner", str(columns), "--output-format", "jsonl"))
    assert "offsets" not in sentence and sentence["tokens"] == ["Bo", "Li", "laughed"]
    for entity in sentence["entities"]:  # no offsets: the tokens joined
        assert list(entity) == ["label", "first", "last", "text"]
        assert entity["text"] == " ".join(sentence["tokens"][entity["first"] : entity["last"] + 1])
    (pos,) = lines(run_cli("tag", "--text", "She reads.", "--output-format", "jsonl", "--attention"))
    assert list(pos) == ["tokens", "offsets", "tags", "attention"]
    columns = zip(*pos["attention"], strict=True)  # N = L: each word's attention sums to one
    assert len(pos["attention"]) == 3 and all(abs(sum(column) - 1) < 1e-5 for column in columns)


def test_many_inputs_each_into_its_own_json_lines(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text("Oslo is cold.")
    (inputs / "b.txt").write_text("Bo Li left.\nHe came back.")
    done = run_cli("tag", "-m", "en-ner", str(inputs), "-o", tmp_path / "out", "--output-format", "jsonl")
    assert done.returncode == 0, done.stderr.decode()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.txt.jsonl", "b.txt.jsonl"]
    alone = run_cli("tag", "-m", "en-ner", str(inputs / "b.txt"), "--output-format", "jsonl")
    assert (tmp_path / "out" / "b.txt.jsonl").read_bytes() == alone.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--text", "a", "--attention"],
            "--attention goes with --output-format jsonl (a raindrop of it: easyfirst plot)",
        ),
        (["--text", "a", "--output-format", "json"], "--output-format must be auto or jsonl, not 'json'"),
        (
            ["a.txt", "b.txt", "-o", "out", "--attention"],  # many inputs: refused before they are looked at
            "--attention goes with --output-format jsonl (a raindrop of it: easyfirst plot)",
        ),
    ],
)
def test_what_cannot_be_written_is_refused_in_one_line(args, message):
    done = run_cli("tag", *args)
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().strip() == message


def test_one_writer_of_json_compact_and_unescaped_with_or_without_floats():
    content = {"tokens": ["é", "😀", 'a"b', "x\\y", "\x7f", "</p>", "a\u2028b", "\t"], "first": -2}
    written = '{"tokens":["é","😀","a\\"b","x\\\\y","\x7f","</p>","a\u2028b","\\t"],"first":-2}'
    assert encode(content) == encode(content, floats=True) == written.encode()
    assert encode({"p": [1e-05, 0.5]}, floats=True) == b'{"p":[1e-05,0.5]}'


def served(model: str | None, bodies: list[dict]) -> list[bytes]:
    """The server's answers to ``bodies`` (POST /tag), from the ASGI app in this process."""
    extra("starlette", "serve")
    from easyfirst.resources import model_folder
    from easyfirst.serve import Limits, create_app

    app = create_app(model and model_folder(model), limits=Limits(attention=10_000))
    json_body = [("content-type", "application/json")]
    answers = serving(app, [("POST", "/tag", json.dumps(body).encode(), json_body) for body in bodies])
    assert [status for status, _, _ in answers] == [200] * len(bodies)
    return [body for _, _, body in answers]


@pytest.mark.parametrize(
    ("model", "flags"), [("en-ner", []), ("en-ner", ["attention"]), (None, ["probabilities"])]
)
def test_the_server_answers_each_sentence_with_the_bytes_of_the_cli_line(model, flags):
    text = "Bo Li flew to Oslo on Monday. “Fine,” said the U.N.\n\nNew line."
    # the CLI and the server take the backend that the chooser alone picks: floats to the same bits
    options = ["-m", model] if model else []
    done = run_cli("tag", *options, "--text", text, "--output-format", "jsonl", *(f"--{f}" for f in flags))
    cli = done.stdout.splitlines()
    assert len(cli) == 3
    (answer,) = served(model, [{"text": text, **dict.fromkeys(flags, True)}])
    sentences = answer[answer.index(b'"sentences":[') + len(b'"sentences":[') :]
    assert sentences.startswith(b",".join(cli) + b"]")  # the same bytes, in order
    decoded = json.loads(answer)["sentences"]
    assert [s["offsets"][0][0] for s in decoded] == [0, 30, 53]
    if model:
        assert all("entities" in s for s in decoded)
        for sentence in decoded:
            check_offsets(text, sentence)


def test_the_server_gives_offsets_for_pretokenized_text_and_none_for_sentences():
    answers = served(
        "en-ner",
        [{"text": "  Bo   Li\tleft ", "pretokenized": True}, {"sentences": [["Bo", "Li", "left"]]}],
    )
    with_text, with_tokens = (json.loads(a)["sentences"][0] for a in answers)
    assert with_text["offsets"] == [[2, 4], [7, 9], [10, 14]]
    assert "offsets" not in with_tokens and "entities" in with_tokens
    assert with_text["tags"] == with_tokens["tags"]


def test_qe_input_as_json_lines_is_the_servers_answer(tmp_path):
    """A QE model (2 epochs on the sample, seconds): each MT sentence's line, the tags that the plain
    output writes, and the server's answer to that sentence's three lines, byte for byte."""
    run = tmp_path / "qe"
    trained = run_cli(
        "train", "--task", "qe", "--train", QE_SAMPLE, "--dev", QE_SAMPLE, "--epochs", 2, "--seed", 1,
        "--threads", 1, "--output", run,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr.decode()
    given = [
        "--src",
        f"{QE_GAPS}.src",
        "--mt",
        f"{QE_GAPS}.mt",
        "--alignments",
        f"{QE_GAPS}.src-mt.alignments",
    ]
    plain = run_cli("tag", *given, "-m", run)
    as_json = run_cli("tag", *given, "-m", run, "--output-format", "jsonl")
    found = lines(as_json)
    mt = (QE_GAPS.parent / f"{QE_GAPS.name}.mt").read_text().splitlines()
    assert [s["tokens"] for s in found] == [line.split() for line in mt]
    assert [" ".join(s["tags"]) for s in found] == plain.stdout.decode().splitlines()
    assert all("offsets" not in s and "entities" not in s for s in found)
    src, alignments = (
        (QE_GAPS.parent / f"{QE_GAPS.name}.{end}").read_text().splitlines()
        for end in ("src", "src-mt.alignments")
    )
    (answer,) = served(str(run), [{"src": src[0], "mt": mt[0], "alignments": alignments[0]}])
    assert answer.endswith(b'"sentences":[' + as_json.stdout.splitlines()[0] + b"]}")


# ---------------------------------------------------------------------------- the goal, on real data

NO_SPACE_BEFORE = re.compile(r"^([.,;:!?%)\]}]|'s|'S|n't|'re|'ve|'ll|'d|'m)$")


def detokenize(tokens: list[str]) -> str:
    """A sentence's tokens as a reader would write them: no space before closing punctuation and
    clitics, none after an opening bracket or a currency sign."""
    out = ""
    for k, token in enumerate(tokens):
        glued = k == 0 or NO_SPACE_BEFORE.match(token) or tokens[k - 1] in ("(", "[", "{", "$")
        out += ("" if glued else " ") + token
    return out


@pytest.mark.realdata
def test_every_entity_of_conll_test_sentences_is_the_text_between_its_offsets(data_root):
    """CoNLL-2003's test set (eng.testb) detokenized, from its start: four calls of --text, a blank line
    between sentences, each under the 2,000 words that fork a pool (699 sentences; the whole file,
    25 such calls, took 19 s on the 2-core machine under load, against 3 s for these)."""
    sentences, current = [], []
    for line in (data_root / "ner" / "conll2003" / "eng.testb").read_text().splitlines():
        if not line.strip():
            if current:
                sentences.append(current)
            current = []
        elif not line.startswith("-DOCSTART-"):
            current.append(line.split(" ")[0])
    texts, chunk, words = [], [], 0
    for sentence in sentences:
        if words + len(sentence) >= 1_900:
            texts.append("\n\n".join(chunk))  # a paragraph each: a sentence ends there
            chunk, words = [], 0
        chunk.append(detokenize(sentence))
        words += len(sentence)
    entities = tagged = 0
    for text in texts[:4]:
        found = lines(run_cli("tag", "-m", "en-ner", "--text", text, "--output-format", "jsonl"))
        for sentence in found:
            check_offsets(text, sentence)
            entities += len(sentence["entities"])
        tagged += len(found)
    assert tagged >= 699 and entities > 1000  # segtok may split a sentence; about 1.6 entities each
