"""What a training run shows and scores: the dev/test evaluation of encoded sentences, the log that
goes to the console and to ``train.log``, an epoch's progress as plain lines where the console is not a
terminal, and the per-epoch summary table."""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table

from easyfirst.atomic import LogFile
from easyfirst.backends.chooser import plan_for
from easyfirst.data.batching import IGNORE, Encoded, iterate_batches
from easyfirst.data.buckets import INFERENCE_MAX_TOKENS
from easyfirst.data.schemes import convert, learned_scheme, to_bio
from easyfirst.data.sentence import Sentence
from easyfirst.data.vocab import Vocabularies
from easyfirst.metrics import distribution_report, tag_report
from easyfirst.model.heads import decode_heads
from easyfirst.model.tagger import EasyFirstTagger


def evaluate_sentences(
    model: EasyFirstTagger,
    vocabs: Vocabularies,
    items: list[Encoded],
    gold: list[Sentence],
    batch_size: int,
    device: torch.device,
    score=tag_report,
    score_heads=None,
) -> dict:
    """Tag encoded sentences and score them against their gold tags with ``score`` (the task's), plus ECE
    and support of the output distributions; a model with extra outputs (easyfirst.model.heads) also has
    their tags scored, by ``score_heads(gold, predicted, heads)`` (the task's ``score_outputs``)."""
    model.eval()
    itos = vocabs.tags.itos
    scheme = learned_scheme(itos)  # a BIOES model's tags are scored as BIO (easyfirst.data.schemes)
    predicted: list[list[str]] = [[] for _ in items]
    ids: list[torch.Tensor] = [torch.zeros(0, dtype=torch.long) for _ in items]
    distributions: list[torch.Tensor] = [torch.zeros(0, len(itos)) for _ in items]
    heads: dict[str, list] = {}
    with torch.inference_mode():
        for batch in iterate_batches(items, batch_size, max_tokens=INFERENCE_MAX_TOKENS):
            batch = batch.to(device)
            scores, _, head_scores = model(batch, heads=True, plan=plan_for(model, batch.mask, False))
            best, probabilities = (t.cpu() for t in model.predict(scores, batch.mask))
            decoded = decode_heads(head_scores, batch, model.outputs)
            for row, (index, n) in enumerate(zip(batch.order, batch.lengths.tolist(), strict=True)):
                predicted[index] = to_bio([itos[t] for t in best[row, :n].tolist()], scheme)
                ids[index], distributions[index] = best[row, :n], probabilities[row, :n]
                for name, tags in decoded.items():
                    heads.setdefault(name, [None] * len(items))[index] = tags[row]
    report = score([s.tags for s in gold], predicted)
    if heads and score_heads is not None:
        report |= score_heads(gold, predicted, heads)
    gold_tags = [s.tags if scheme == "bio" else convert(s.tags, "bio", scheme) for s in gold]
    gold_ids = [
        torch.tensor([vocabs.tags.stoi.get(t, IGNORE) for t in tags], dtype=torch.long) for tags in gold_tags
    ]
    return report | distribution_report(distributions, ids, gold_ids)


LOG_WIDTH = 200  # tables in train.log; a line of text is never wrapped (one record a line, for grep)


class RunLog:
    """Prints to the console and appends the same text, uncoloured, to ``train.log``, each record in one
    write (easyfirst.atomic.LogFile: a full disk is a WriteFailed naming the log, the records before it
    kept whole)."""

    def __init__(self, console: Console, path: Path, append: bool = False):
        self.console, self.path = console, path
        self.file = LogFile(path, append=append)  # a new run starts a new log

    def __call__(self, *objects) -> None:
        self.console.print(*objects)
        text = io.StringIO()
        capture = Console(file=text, width=LOG_WIDTH, color_system=None, force_terminal=False)
        capture.print(*objects, soft_wrap=True)
        self.file.write(text.getvalue())

    def close(self) -> None:
        self.file.close()


# Without a terminal (nohup, CI, `> file`) an epoch's progress is a plain line: after every tenth of its
# updates, and at least every 30 s (the first after 5 s, so that a log shows soon that training runs),
# but never two within 2 s (a toy run's one-second epochs stay quiet).
PROGRESS_SECONDS = 30.0
PROGRESS_FIRST_SECONDS = 5.0
PROGRESS_FRACTION = 0.1
PROGRESS_MIN_SECONDS = 2.0


def duration(seconds: float) -> str:
    """``6 min 29 s``, ``49.9 s``: a span of time as the log says it."""
    if not math.isfinite(seconds):
        return "? s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours} h " if hours else "") + f"{minutes} min {rest} s"


class Rate:
    """The words per second and the seconds left in an epoch of ``total`` updates, measured from the
    first update this run of the epoch saw (its own time, and the updates of an earlier run, resumed
    from, are not counted); None until :data:`PROGRESS_MIN_SECONDS`
    and an update more have passed, when an estimate starts to mean something."""

    def __init__(self, total: int, clock: Callable = time.perf_counter):
        self.total, self.clock = total, clock
        self.first: tuple[float, int, int] | None = None

    def __call__(self, completed: int, words: int) -> tuple[float, float] | None:
        now = self.clock()
        if self.first is None:
            self.first = (now, completed, words)
        since, done, seen = self.first
        seconds = now - since
        if seconds < PROGRESS_MIN_SECONDS or completed <= done:
            return None
        return (words - seen) / seconds, (self.total - completed) * seconds / (completed - done)


class ProgressLines:
    """One epoch's progress as plain lines on the run log, for a console that is not a terminal:
    ``update(completed, loss, words)`` after each update (``words``: the words trained on so far in the
    epoch; by this process, or with Hogwild workers everyone's, read by the main process), a line when
    one is due (the PROGRESS_ constants above), with the speed and time left once :class:`Rate` has
    them."""

    def __init__(
        self,
        log: Callable,
        epoch: int,
        epochs: int,
        total: int,
        done: int,
        clock: Callable = time.perf_counter,
    ):
        self.log, self.epoch, self.epochs, self.total, self.clock = log, epoch, epochs, total, clock
        self.started = self.last = clock()
        self.last_done = done
        self.rate = Rate(total, clock)

    def __call__(self, completed: int, loss: float, words: int) -> None:
        measured = self.rate(completed, words)
        now = self.clock()
        since = now - self.last
        every = PROGRESS_FIRST_SECONDS if self.last == self.started else PROGRESS_SECONDS
        tenth = completed - self.last_done >= PROGRESS_FRACTION * self.total
        if completed >= self.total or not (since >= every or (tenth and since >= PROGRESS_MIN_SECONDS)):
            return
        # at most about 80 characters: "epoch 20/20  12,329/12,329 updates  loss 0.4662  1,934 words/s  1 h 3 min left"
        line = f"epoch {self.epoch}/{self.epochs}  {completed:,}/{self.total:,} updates  loss {loss:.4f}"
        if measured is not None:
            line += f"  {measured[0]:,.0f} words/s  {duration(measured[1])} left"
        self.log(line)
        self.last, self.last_done = now, completed


def summary_table(
    metrics: dict, metric: str = "accuracy", label: str = "acc", columns: tuple[tuple[str, str], ...] = ()
) -> Table:
    """Per-epoch loss and dev scores: the task's ``metric``, then the report keys of ``columns``."""
    table = Table(title=f"dev {'accuracy' if metric == 'accuracy' else label} per epoch", show_edge=False)
    names = ("epoch", "loss", f"dev {label}", *(f"dev {name}" for _, name in columns), "train s", "eval s")
    names += ("tok/s",)
    for name in names:
        table.add_column(name, justify="right")
    for row in metrics["epochs"]:
        mark = " *" if row["epoch"] == metrics["best_epoch"] else ""
        table.add_row(
            f"{row['epoch']}{mark}",
            f"{row['loss']:.4f}",
            f"{100 * row[f'dev_{metric}']:.2f}",
            *(f"{100 * row[f'dev_{key}']:.2f}" for key, _ in columns),
            f"{row['seconds']:.1f}",
            f"{row['eval_seconds']:.1f}" if "eval_seconds" in row else "?",
            f"{row['tokens_per_second']:,.0f}",
        )
    caption = f"best epoch {metrics['best_epoch']} (*): dev {100 * metrics['dev'][metric]:.2f}"
    if "test" in metrics:
        caption += f", test {100 * metrics['test'][metric]:.2f}"
    table.caption = caption
    return table


WARN_DROPPED = 0.01  # more than 1% of the training sentences dropped by the length cap: say so


def length_cap(sentences: list[Sentence], limit: int) -> tuple[list[Sentence], str, str | None]:
    """The training sentences that ``[data] max_train_length`` keeps (``limit`` words at most; 0: all
    but empty ones), what the data line says of them, and a warning when the cap drops more than 1%:
    then the warning alone says what was dropped, so that the log says it once."""
    kept = [s for s in sentences if s.words and (limit == 0 or len(s.words) <= limit)]
    dropped = sum(len(s.words) > limit for s in sentences) if limit else 0
    if limit == 0:
        return kept, f"{len(kept)} sentences, no length cap", None
    said = f"{len(kept)} sentences, {dropped} longer than {limit} words dropped"
    if dropped <= WARN_DROPPED * len(sentences):
        return kept, said, None
    return (
        kept,
        f"{len(kept)} sentences",
        (
            f"[yellow]warning:[/] the length cap dropped {dropped:,} of {len(sentences):,} training sentences "
            f"({100 * dropped / len(sentences):.1f}%, longer than {limit} words); data.max_train_length "
            "sets the cap (--max-train-length; 0 keeps every sentence)"
        ),
    )
