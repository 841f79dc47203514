"""README's Quickstart, run as a user would paste it: every command but the long trainings (those that
read the real data sets), each in a shell in a fresh folder beside the repository's data/, and the
server it starts asked once over the loopback, as the curl line after it does."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from serving import Server

ROOT = Path(__file__).resolve().parents[2]


def quickstart() -> list[str]:
    """The Quickstart's commands, continuation lines joined and comments dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Quickstart\n\n```bash\n", 1)[1].split("\n```", 1)[0]
    commands = [line.split(" #", 1)[0].strip() for line in block.replace("\\\n", " ").splitlines()]
    return [c for c in commands if c and not c.startswith("#")]


def is_long_training(command: str) -> bool:
    return command.startswith("easyfirst train") and "--train" not in command


def test_the_quickstart_is_what_this_test_runs():
    commands = quickstart()
    assert commands[0] == "mkdir -p runs"
    assert [c for c in commands if c.startswith("easyfirst serve")] == ["easyfirst serve"]
    assert sum(c.startswith("curl") for c in commands) == 1
    assert sum(map(is_long_training, commands)) == 2  # POS and NER on the real data: the README times them
    verbs = {c.split()[1] for c in commands if c.startswith("easyfirst ")}
    assert verbs >= {"tag", "evaluate", "plot", "train", "export", "serve"}


@pytest.mark.slow
def test_the_quickstart_runs(tmp_path):
    (tmp_path / "data").symlink_to(ROOT / "data")
    python = f"{shlex.quote(sys.executable)} -m easyfirst"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "80", "HOME": str(tmp_path)}
    curl = None
    for command in quickstart():
        if is_long_training(command):
            continue
        if command == "easyfirst serve":
            continue  # started below, on a free port, for the curl line
        if command.startswith("curl"):
            curl = command
            continue
        shell = re.sub(r"^easyfirst\b", python, command)
        done = subprocess.run(["bash", "-c", shell], cwd=tmp_path, env=env, capture_output=True, timeout=600)
        assert done.returncode == 0, (command, done.stderr.decode()[-2000:])
        assert b"Traceback" not in done.stderr, command
        if command.startswith("easyfirst tag -m en-ner --text") and "jsonl" not in command:
            assert b"Angela\tB-PER" in done.stdout and b"Paris\tB-LOC" in done.stdout
        elif command.startswith("easyfirst tag -m en-ner --text"):  # the JSON lines: Paris where it is
            (line,) = done.stdout.decode().splitlines()
            assert {"label": "LOC", "first": 4, "last": 4, "start": 21, "end": 26, "text": "Paris"} in (
                json.loads(line)["entities"]
            )
    for written in ("tagged.conllu", "notes.conllu", "raindrop.png", "raindrop.html", "tiny/model.pt"):
        assert (tmp_path / "runs" / written).stat().st_size > 0, written
    assert (tmp_path / "runs" / "exported" / "tiny" / "README.md").is_file()
    # the curl line's request, sent to the server the Quickstart starts (here on a free port)
    body = json.loads(re.search(r"-d '([^']*)'", curl).group(1))
    with Server() as server:
        status, answer = server.post(body)
    assert status == 200
    assert answer["sentences"][0]["tags"] == ["PRON", "VERB", "DET", "NOUN", "PUNCT"]
