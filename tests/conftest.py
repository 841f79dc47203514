"""Shared fixtures.

Real-data tests (marker ``realdata``) read the sets under ``$EASYFIRST_DATA``. They skip only when the
variable is unset on a developer's machine; under CI (``CI`` set) a missing data folder is a failure.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "samples" / "en-sample.conllu"
NER_SAMPLE = ROOT / "data" / "samples" / "en-ner-sample.conll"
QE_SAMPLE = ROOT / "data" / "samples" / "qe-en-de"  # a prefix: .src, .mt, .src-mt.alignments, .tags, .pe
QE_GAPS = ROOT / "data" / "samples" / "qe-en-de-gaps"  # the same in the 2N+1 (gap) tags format

# The tests live in rooms, one per unit of the package (tests/model, tests/cli, ...), beside the helpers
# here (processes.py, serving.py, ...). A few import another room's test module by its basename (unique
# across rooms): every room is on the path, as pytest puts the room of the module it collects.
for room in sorted(Path(__file__).resolve().parent.iterdir()):
    if room.is_dir() and any(room.glob("test_*.py")) and str(room) not in sys.path:
        sys.path.append(str(room))


def pytest_configure(config):
    """Compile the CPU loops once before any test process starts, where Numba's cache does not hold them
    yet (a fresh clone, or a change to the loops): else the first compile's note reaches the stderr of
    whichever command a test runs first, and the tests that read a command's exact messages fail."""
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller has compiled them
        return
    from easyfirst.backends import compiled

    compiled.kernels()


# IOB1 as in the original CoNLL-2003 release: entities start with I-, B- only between two adjacent
# entities of one type. Latin-1 words, a document line, trailing spaces, several blank lines, CRLF.
IOB1_LATIN1 = (
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "José NNP I-NP I-PER\n"
    "Müller NNP I-NP I-PER\n"
    "met VBD I-VP O  \n"
    "Zoë NNP I-NP I-PER\n"
    "Ström NNP I-NP B-PER\n"
    "in IN I-PP O\n"
    "Zürich NNP I-NP I-LOC\r\n"
    "Köln NNP I-NP I-ORG\n"
    ". . O O\n"
    "\n"
    "   \n"
    "\n"
    "Größe NN I-NP O\n"
    "zählt VBZ I-VP O\n"
).encode("latin-1")


def extra(module: str, name: str):
    """The module of the optional extra ``name``: skipped where it is not installed, a failure under CI
    (``CI`` set), where the dev extra brings every extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail(
                f"{module} is not installed under CI (pip install -e '.[dev]' brings the extra {name})"
            )
        pytest.skip(f"{module} is not installed (pip install 'easyfirst[{name}]')", allow_module_level=True)


def real_data_root() -> Path:
    value = os.environ.get("EASYFIRST_DATA")
    if not value:
        if os.environ.get("CI"):
            pytest.fail("EASYFIRST_DATA is not set under CI: real-data tests must not skip")
        pytest.skip("EASYFIRST_DATA is not set")
    root = Path(value)
    if not root.is_dir():
        pytest.fail(f"EASYFIRST_DATA={value} is not a folder")
    return root


@pytest.fixture
def data_root() -> Path:
    return real_data_root()


@pytest.fixture
def ewt(data_root) -> dict[str, Path]:
    folder = data_root / "ud" / "UD_English-EWT"
    paths = {s: folder / f"en_ewt-ud-{s}.conllu" for s in ("train", "dev", "test")}
    for path in paths.values():
        assert path.is_file(), f"missing {path}"
    return paths


def said(stderr: bytes | str) -> str:
    """What a verb said on stderr, less the line naming its backend (``backend: …``), which ``tag``,
    ``evaluate`` and ``serve`` log first and which depends on what this process has loaded."""
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("backend: "))


def run_cli(
    *args: str,
    input: bytes | None = None,
    cwd: Path | None = None,
    timeout: float = 600,
    env: dict | None = None,
    process: bool = False,
):
    """``easyfirst ARGS`` as a user would run it (``env``: extra variables); returns a CompletedProcess
    (bytes). In the test's process (tests/verbs.py), unless ``process``: then ``python -m easyfirst
    ARGS`` in a process of its own (``timeout`` applies to it alone), for what only a process shows
    (its signals, its exit, what its workers leave behind, torchrun, a server, variables read at its
    start such as PYTHONPATH) and for a command that forks (a tagging pool, Hogwild's workers, the
    reader of a CoNLL-U file), which fails in the test's process."""
    if process:
        return subprocess.run(
            [sys.executable, "-m", "easyfirst", *map(str, args)],
            input=input,
            capture_output=True,
            cwd=cwd,
            timeout=timeout,
            env={**os.environ, "COLUMNS": "120", **(env or {})},
        )
    from verbs import completed

    return completed(args, input=input, cwd=cwd, env={"COLUMNS": "120", **(env or {})})


def dies_with_the_test(then=None):
    """A ``preexec_fn`` that has the kernel kill the child when the test's process dies (a pytest killed
    before its ``finally`` runs), then calls ``then``."""

    def setup() -> None:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (linux/prctl.h)
        if then is not None:
            then()

    return setup


@contextlib.contextmanager
def started(command: list[str], **options):
    """``subprocess.Popen(command, **options)`` in a session of its own, for the ``with`` block: at its
    end, however it ends (a failed assertion, a timeout), the process and every process of its session
    (workers it forked) are killed (:func:`end_session`); if the test's process dies first, the kernel
    kills it (:func:`dies_with_the_test`)."""
    options["preexec_fn"] = dies_with_the_test(options.get("preexec_fn"))
    process = subprocess.Popen(command, start_new_session=True, **options)
    try:
        yield process
    finally:
        end_session(process)


def end_session(process: subprocess.Popen) -> None:
    """SIGKILL to ``process`` and to every process of its session (it leads it: start_new_session), then
    wait for it. Nothing of a test is left running, even when the test failed half-way."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def sample_training(output: Path, *extra: str, epochs: int = 3, seed: int = 3) -> list[str]:
    """The arguments of ``easyfirst train`` on the sample (train = dev = test)."""
    args = ["train", "--train", SAMPLE, "--dev", SAMPLE, "--test", SAMPLE, "--epochs", epochs, "--seed", seed]
    return [*map(str, args), "--output", str(output), *map(str, extra)]


def train_on_sample(output: Path, *extra: str, epochs: int = 3, seed: int = 3):
    """``easyfirst train`` on the sample (train = dev = test): a few seconds."""
    return run_cli(*sample_training(output, *extra, epochs=epochs, seed=seed))
