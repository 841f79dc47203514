"""The options of tag, evaluate, plot, analyze and export (issue #29): a bad value, an unknown flag or a
missing argument is one line on stderr, exit 2, and nothing written. Each line is typed by hand. The
verbs run in this process on the bundled model (validation only: nothing is tagged)."""

from __future__ import annotations

import pytest
from test_config_validation import easyfirst

from conftest import SAMPLE

MISSING_MODEL = (
    "{tmp}/nope: model folder not found (a run folder written by `easyfirst train`, or a bundled model: "
    "en-upos, en-ner)"
)

REFUSED = [
    (["tag", SAMPLE, "--batch-size", "0"], "--batch-size must be an integer >= 1, not 0"),
    (["tag", SAMPLE, "--device", "banana"], "--device: not a device name: 'banana'"),
    (["tag", SAMPLE, "--format", "xml"], "--format must be auto, text or model, not 'xml'"),
    (["evaluate", SAMPLE, "--batch-size", "0"], "--batch-size must be an integer >= 1, not 0"),
    (["evaluate", SAMPLE, "--batch-size", "-3"], "--batch-size must be an integer >= 1, not -3"),
    (["evaluate", SAMPLE, "--device", "banana"], "--device: not a device name: 'banana'"),
    (
        ["evaluate", SAMPLE, "--encoding", "banana"],
        "--encoding must be a known text encoding (utf-8, latin-1, ...), not 'banana'",
    ),
    (["plot", "--text", "a b", "--sentence", "0", "--terminal"], "--sentence counts from 1"),
    (
        ["plot", "--text", "a b", "--output", "{tmp}/x.jpg"],
        "{tmp}/x.jpg: the figure file must end in .html, .png, .svg, .pdf",
    ),
    (
        ["plot", "--text", "a b", "--terminal", "--compare", "{tmp}/nope"],
        MISSING_MODEL,  # with the names -m takes: the bundled models
    ),
    (["analyze", "{tmp}/nope"], "{tmp}/nope: no such file"),
    (["analyze", SAMPLE, "--json", "--markdown"], "give --json or --markdown, not both"),
    (["export", "{tmp}/nope", "{tmp}/out"], MISSING_MODEL),
]


@pytest.mark.parametrize(
    ("args", "line"), REFUSED, ids=[" ".join(map(str, a[:1] + a[2:])) for a, _ in REFUSED]
)
def test_a_bad_option_is_one_line_and_writes_nothing(tmp_path, args, line):
    code, stderr = easyfirst(*(str(a).format(tmp=tmp_path) for a in args))
    assert (code, stderr.strip()) == (2, line.format(tmp=tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        (["tag", SAMPLE, "--batch-size", "many"], "--batch-size: "),
        (["tag", SAMPLE, "--colour"], "No such option: --colour"),
        (["export"], "Missing argument"),
    ],
)
def test_clicks_refusals_are_one_line(tmp_path, args, starts):
    """Click's wording (it differs between Typer versions) in our form: one line, and where to look."""
    code, stderr = easyfirst(*(str(a).format(tmp=tmp_path) for a in args))
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(starts) and stderr.strip().endswith(f"(see easyfirst {args[0]} --help)"), stderr
    assert list(tmp_path.iterdir()) == []
