"""What a training run writes when its console is not a terminal (nohup, CI, `> file`): plain progress
lines within an epoch, and epoch lines whose training and evaluation seconds add up to the wall clock."""

from __future__ import annotations

import io
import re
import time

import pytest
from rich.console import Console
from rich.progress import Progress

from conftest import SAMPLE
from easyfirst.config import Config
from easyfirst.training import reporting
from easyfirst.training.epochs import bar_columns
from easyfirst.training.loop import train

PROGRESS = re.compile(r"^epoch (\d+)/2  (\d+)/25 updates  loss \d+\.\d{4}  [\d,]+ words/s  .+ left$")
EPOCH = re.compile(r"^epoch +(\d+)  loss .*  train +([\d.]+) s  eval +([\d.]+) s  .*tok/s")


def seconds(text: str) -> float:
    """``6 min 29 s`` or ``49.9 s`` (reporting.duration) in seconds."""
    match = re.fullmatch(r"(?:(\d+) h )?(?:(\d+) min )?([\d.]+) s", text)
    assert match, text
    hours, minutes, rest = match.groups()
    return 3600 * int(hours or 0) + 60 * int(minutes or 0) + float(rest)


def test_training_into_a_file_logs_progress_and_times_that_add_up_to_the_wall_clock(tmp_path, monkeypatch):
    monkeypatch.setattr(reporting, "PROGRESS_MIN_SECONDS", 0.0)  # the sample's epochs take a second or two
    config = Config.for_task("pos")
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs, config.train.workers, config.model.decoder.sketch_steps = 2, 1, 2
    screen = io.StringIO()  # not a terminal: no bar, lines
    started = time.perf_counter()
    train(config, tmp_path / "run", console=Console(file=screen, width=1000))
    wall = time.perf_counter() - started
    log = (tmp_path / "run" / "train.log").read_text().splitlines()
    progress = [PROGRESS.match(line) for line in log if PROGRESS.match(line)]
    on_screen = [line for line in screen.getvalue().splitlines() if PROGRESS.match(line)]
    assert on_screen == [m.string for m in progress]  # the same lines on the screen and in train.log
    epochs = [EPOCH.match(line) for line in log if EPOCH.match(line)]
    assert [m[1] for m in epochs] == ["1", "2"]
    for epoch in ("1", "2"):  # about every tenth of the 25 updates, before the epoch's line
        done = [int(m[2]) for m in progress if m[1] == epoch]
        assert len(done) >= 5 and done == sorted(done) and done[-1] < 25
        first_line = log.index(next(m.string for m in progress if m[1] == epoch))
        assert first_line < log.index(epochs[int(epoch) - 1].string)
    ready = seconds(next(re.match(r"ready in (.+?) \(", line)[1] for line in log if line.startswith("ready")))
    last = re.search(r"the best model scored in (.+?), (.+?) in all$", log[-1])
    assert last, log[-1]
    logged = ready + sum(float(m[2]) + float(m[3]) for m in epochs) + seconds(last[1])
    # the parts add up to the whole the log gives, and that to the wall clock of the call
    assert abs(logged - seconds(last[2])) <= 0.03 * seconds(last[2]) + 0.3
    assert abs(seconds(last[2]) - wall) <= 0.03 * wall + 0.3


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_progress_line_is_due_every_tenth_of_an_epoch_or_30_s_never_two_within_2_s():
    clock, lines = Clock(), []
    update = reporting.ProgressLines(lines.append, 1, 20, 1000, 0, clock=clock)
    clock.now = 1.0
    update(100, 0.5, 2000)  # a tenth done, but within 2 s of the start: quiet; the rates count from here
    assert lines == []
    clock.now = 4.0
    update(150, 0.5, 3000)  # a tenth since the last line (none yet), 2 s since the start
    assert len(lines) == 1
    # 50 updates and 1,000 words in the 3 s since the first update: 850 updates left take 51 s
    assert lines[0] == "epoch 1/20  150/1,000 updates  loss 0.5000  333 words/s  51.0 s left"
    clock.now = 34.0
    update(200, 0.5, 4000)  # only 50 updates more, but 30 s after the last line
    assert len(lines) == 2 and lines[1].endswith("61 words/s  4 min 24 s left")  # 800 at 100 per 33 s
    clock.now = 40.0
    update(250, 0.5, 5000)  # neither a tenth nor 30 s since
    update(1000, 0.5, 20000)  # the epoch's end: its epoch line follows, no progress line
    assert len(lines) == 2


def test_an_epochs_first_progress_line_comes_after_5_s_without_an_estimate_yet():
    clock, lines = Clock(), []
    slow = reporting.ProgressLines(lines.append, 1, 20, 1000, 0, clock=clock)
    clock.now = 5.5
    slow(10, 0.5, 100)  # the first line after 5 s, not 30, so that a log shows soon that it runs
    assert lines == ["epoch 1/20  10/1,000 updates  loss 0.5000"]  # nothing measured yet
    clock.now = 11.0
    slow(20, 0.5, 200)  # then every 30 s (or tenth)
    assert len(lines) == 1


def test_a_slow_first_update_is_not_in_the_estimate():
    """The first training after an install said "1 words/s, 5 min 18 s left" while Numba compiled
    during its first update."""
    clock, lines = Clock(), []
    update = reporting.ProgressLines(lines.append, 1, 20, 1000, 0, clock=clock)
    clock.now = 31.0
    update(1, 0.5, 20)  # the first update, after 31 s: a line is due, no estimate yet
    assert lines == ["epoch 1/20  1/1,000 updates  loss 0.5000"]
    clock.now = 35.0
    update(101, 0.5, 2020)  # 100 updates and 2,000 words in 4 s: 899 updates left take 36.0 s
    assert lines[1] == "epoch 1/20  101/1,000 updates  loss 0.5000  500 words/s  36.0 s left"


def test_a_progress_line_of_a_long_run_fits_80_columns():
    """EWT at one sentence per update: 12,329 updates an epoch, 20 epochs, an hour left."""
    clock, lines = Clock(), []
    update = reporting.ProgressLines(lines.append, 20, 20, 12_329, 0, clock=clock)
    clock.now = 10.0
    update(100, 0.4662, 2000)
    clock.now = 40.0
    update(2_027, 0.4662, 40_000)  # 38,000 words and 1,927 updates in 30 s: 10,302 left take 160 s
    assert lines[-1] == "epoch 20/20  2,027/12,329 updates  loss 0.4662  1,267 words/s  2 min 40 s left"
    assert len(lines[-1]) <= 80


@pytest.mark.parametrize(
    ("completed", "total", "speed"),
    [
        (2_027, 12_329, "  1,934 words/s  1 h 3 min left"),
        (12_000, 123_290, "  11,934 words/s  10 h 3 min left"),
    ],
)
def test_the_progress_bar_fits_80_columns_with_its_text_whole(completed, total, speed):
    """On a terminal of 80 columns the bar's line was cut at its counts ("2027/123…")."""
    screen = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None, record=True)
    bar = Progress(*bar_columns(20, 20), console=screen, auto_refresh=False)
    bar.add_task("train", total=total, completed=completed, loss=0.4662, speed=speed)
    screen.print(bar.make_tasks_table(bar.tasks))
    line = screen.export_text().rstrip("\n")
    assert len(line) <= 80 and "…" not in line
    assert line.startswith("epoch 20/20 ")
    assert line.endswith(f"{completed:,}/{total:,}  loss 0.4662{speed}")


def test_durations_read_as_a_person_says_them():
    assert reporting.duration(49.94) == "49.9 s"
    assert reporting.duration(389.2) == "6 min 29 s"
    assert reporting.duration(3725) == "1 h 2 min 5 s"
    assert reporting.duration(float("inf")) == "? s"
