"""Locating data sets (EASYFIRST_DATA, cache) and downloading them with checksums, against a local
HTTP server on 127.0.0.1 that serves a copy laid out like the upstream repository."""

from __future__ import annotations

import hashlib
import http.server
import threading
from functools import partial

import pytest

from conftest import SAMPLE
from easyfirst.data import datasets
from easyfirst.data.datasets import DATASETS, fetch, resolve_split
from easyfirst.errors import InputError


@pytest.fixture
def server(tmp_path):
    """Serves ``tmp_path/upstream`` on an ephemeral port; yields (base_url, folder, request log)."""
    folder = tmp_path / "upstream"
    folder.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            requests.append(self.path)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", folder, requests, httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    monkeypatch.delenv("EASYFIRST_DATA", raising=False)
    monkeypatch.setenv("EASYFIRST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_fetch_verifies_and_renames_into_place(server, tmp_path):
    base, folder, _, _ = server
    (folder / "x.conllu").write_bytes(SAMPLE.read_bytes())
    dest = tmp_path / "got" / "x.conllu"
    dest.parent.mkdir()
    fetch(f"{base}/x.conllu", dest, hashlib.sha256(SAMPLE.read_bytes()).hexdigest(), progress=False)
    assert dest.read_bytes() == SAMPLE.read_bytes()
    assert [p.name for p in dest.parent.iterdir()] == ["x.conllu"]


def test_checksum_mismatch_leaves_nothing(server, tmp_path):
    base, folder, _, _ = server
    (folder / "x.conllu").write_bytes(b"tampered\n")
    dest = tmp_path / "got" / "x.conllu"
    dest.parent.mkdir()
    with pytest.raises(InputError, match="checksum mismatch: expected sha256 0+, got"):
        fetch(f"{base}/x.conllu", dest, "0" * 64, progress=False)
    assert list(dest.parent.iterdir()) == []


def test_http_error_leaves_nothing(server, tmp_path):
    base, _, _, _ = server
    dest = tmp_path / "x.conllu"
    with pytest.raises(InputError, match="HTTP 404"):
        fetch(f"{base}/missing.conllu", dest, None, progress=False)
    assert list(tmp_path.iterdir()) == [tmp_path / "upstream"]


def test_resolve_downloads_into_the_cache_then_reuses_it(server, isolated, monkeypatch):
    base, folder, requests, httpd = server
    (folder / "en_ewt-ud-dev.conllu").write_bytes(SAMPLE.read_bytes())
    monkeypatch.setenv("EASYFIRST_UD_BASE_URL", base)
    entry = DATASETS["ud-en-ewt"]
    monkeypatch.setitem(entry.sha256, "dev", hashlib.sha256(SAMPLE.read_bytes()).hexdigest())
    path = resolve_split("ud-en-ewt", "dev", progress=False)
    assert path == isolated / "ud/UD_English-EWT/en_ewt-ud-dev.conllu"
    assert path.read_bytes() == SAMPLE.read_bytes() and requests == ["/en_ewt-ud-dev.conllu"]
    httpd.shutdown()  # the second call must not need the server
    assert resolve_split("ud-en-ewt", "dev", progress=False) == path


def test_resolve_prefers_easyfirst_data_then_cache(isolated, monkeypatch, tmp_path):
    relative = "ud/UD_English-EWT/en_ewt-ud-test.conllu"
    cached = isolated / relative
    cached.parent.mkdir(parents=True)
    cached.write_text("cache")
    assert resolve_split("ud-en-ewt", "test", download=False) == cached
    data = tmp_path / "data"
    (data / relative).parent.mkdir(parents=True)
    (data / relative).write_text("data")
    monkeypatch.setenv("EASYFIRST_DATA", str(data))
    assert resolve_split("ud-en-ewt", "test", download=False) == data / relative


def test_missing_everywhere_says_where_it_looked(isolated, monkeypatch, tmp_path):
    with pytest.raises(InputError, match="EASYFIRST_DATA"):
        resolve_split("ud-en-ewt", "train", download=False)
    monkeypatch.setenv("EASYFIRST_DATA", str(tmp_path))
    with pytest.raises(InputError, match="missing there"):
        resolve_split("conll2003-en", "train")


@pytest.mark.realdata
def test_real_sets_resolve_and_ewt_matches_its_checksums(data_root, monkeypatch, tmp_path):
    monkeypatch.setenv("EASYFIRST_CACHE", str(tmp_path))  # nothing may come from a cache
    for name, dataset in DATASETS.items():
        for split in dataset.splits:
            path = resolve_split(name, split, download=False)
            assert str(path).startswith(str(data_root))
    for split, digest in DATASETS["ud-en-ewt"].sha256.items():
        path = resolve_split("ud-en-ewt", split, download=False)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    assert datasets.describe()[0]["splits"]["train"].startswith(str(data_root))


def test_describe_says_where_it_looked_and_how_to_get_a_missing_set(isolated, monkeypatch, tmp_path):
    monkeypatch.setenv("EASYFIRST_DATA", str(tmp_path / "shared"))
    monkeypatch.setenv("EASYFIRST_CACHE", str(tmp_path / "cache"))
    assert (
        "(EASYFIRST_DATA=" + str(tmp_path / "shared") + ": no such folder)"
        in datasets.looked_at("ud-en-ewt", "dev")[0]
    )
    (tmp_path / "shared").mkdir()
    rows = {row["name"]: row for row in datasets.describe()}
    ewt, ner = rows["ud-en-ewt"], rows["conll2003-en"]
    assert ewt["looked"]["dev"] == [
        f"$EASYFIRST_DATA/ud/UD_English-EWT/en_ewt-ud-dev.conllu (EASYFIRST_DATA={tmp_path / 'shared'}: missing there)",
        str(tmp_path / "cache" / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu"),
    ]
    assert ewt["get"].startswith(
        f"downloaded into {tmp_path / 'cache' / 'ud' / 'UD_English-EWT'} on first use"
    )
    assert ner["get"] == (
        "not downloadable: put eng.train, eng.testa, eng.testb under $EASYFIRST_DATA/ner/conll2003/ "
        "(or pass --train/--dev/--test)"
    )
    found = tmp_path / "cache" / "ner" / "conll2003" / "eng.train"
    found.parent.mkdir(parents=True)
    found.write_text("EU B-ORG\n")
    ner = {row["name"]: row for row in datasets.describe()}["conll2003-en"]
    assert ner["splits"]["train"] == str(found) and set(ner["looked"]) == {"dev", "test"}


def test_data_command_says_where_it_looked_and_how_to_get_a_missing_set(tmp_path):
    from conftest import run_cli

    env = {"EASYFIRST_DATA": str(tmp_path / "shared"), "EASYFIRST_CACHE": str(tmp_path / "cache")}
    (tmp_path / "shared").mkdir()
    result = run_cli("data", env=env)
    assert result.returncode == 0, result.stderr.decode()
    text = result.stdout.decode()
    assert (
        "conll2003-en: not downloadable: put eng.train, eng.testa, eng.testb under $EASYFIRST_DATA/ner/conll2003/"
        in text
    )
    assert (
        f"  dev: looked at $EASYFIRST_DATA/ud/UD_English-EWT/en_ewt-ud-dev.conllu (EASYFIRST_DATA={tmp_path / 'shared'}: missing there); {tmp_path / 'cache'}/ud/UD_English-EWT/en_ewt-ud-dev.conllu"
        in text
    )


def test_a_verb_that_needs_a_missing_set_says_what_easyfirst_data_says(
    server, isolated, monkeypatch, tmp_path
):
    """With a wrong EASYFIRST_DATA, `train` said only "download failed": the error now names the
    missing splits, where they were looked for and how to get them, on one line."""
    base, _, _, _ = server  # serves nothing: every download is a 404
    monkeypatch.setenv("EASYFIRST_UD_BASE_URL", base)
    monkeypatch.setenv("EASYFIRST_DATA", str(tmp_path))  # a folder without the sets
    with pytest.raises(InputError) as caught:
        resolve_split("ud-en-ewt", "train")
    said = str(caught.value)
    assert said.startswith(
        "data set ud-en-ewt (UD English EWT r2.16, CC BY-SA 4.0): train, dev, test missing; "
    )
    assert (
        f"looked in $EASYFIRST_DATA/ud/UD_English-EWT (EASYFIRST_DATA={tmp_path}: missing there) and " in said
    )
    assert "; downloading train failed (" in said and "HTTP 404" in said
    assert said.endswith("/ud/UD_English-EWT/; `easyfirst data` lists every set") and "\n" not in said
    assert not (isolated / "ud" / "UD_English-EWT" / "en_ewt-ud-train.conllu").exists()


def test_train_with_easyfirst_data_naming_no_folder_fails_at_once_saying_so(tmp_path):
    from conftest import run_cli

    env = {"EASYFIRST_DATA": str(tmp_path / "nowhere"), "EASYFIRST_CACHE": str(tmp_path / "cache")}
    result = run_cli("train", "--task", "pos", "-o", tmp_path / "run", env=env)
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0]
    assert f"(EASYFIRST_DATA={tmp_path / 'nowhere'}: no such folder)" in lines[0]
    assert "names no folder, so nothing was downloaded" in lines[0]
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("path", "hinted"),
    [
        ("/ud/UD_English-EWT/en_ewt-ud-test.conllu", True),
        ("/qe/wmt16-en-de/dev", True),
        ("/nowhere/x.conllu", False),
    ],
)
def test_a_path_that_begins_where_an_unset_easyfirst_data_leaves_it_gets_a_hint(path, hinted):
    """README's `easyfirst evaluate $EASYFIRST_DATA/ud/...` with the variable unset gave a path beginning
    /ud/ and a bare "no such file"."""
    from conftest import run_cli

    result = run_cli("evaluate", path, env={"EASYFIRST_DATA": ""})
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: no such file")
    assert ("(EASYFIRST_DATA looks unset: was this $EASYFIRST_DATA/" in lines[0]) == hinted
