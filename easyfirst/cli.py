"""The ``easyfirst`` command line: train, tag, evaluate, plot, analyze, export, data.

User mistakes (bad files, bad options) are reported as ``path:line: what is wrong`` on stderr with exit
status 2 and no traceback; see easyfirst.errors.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from easyfirst.data.qe import is_qe_prefix
from easyfirst.errors import InputError

app = typer.Typer(
    help="Neural easy-first sequence taggers (Martins & Kreutzer, 2017).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
err = Console(stderr=True)
TASKS = ("pos", "ner", "qe")  # easyfirst.tasks.TASKS, without importing torch for --help

ModelOption = Annotated[
    Path | None,
    typer.Option(
        "--model",
        "-m",
        help="Run folder written by `easyfirst train` (default: the bundled English UPOS model).",
    ),
]


def parse_steps(value: str | None) -> int | None | str:
    """``L`` (or ``l``) means one step per word; otherwise a non-negative integer. Returns "keep" for None."""
    if value is None:
        return "keep"
    if value.strip().upper() == "L":
        return None
    try:
        steps = int(value)
    except ValueError:
        raise InputError(f"--sketch-steps must be a non-negative integer or L, not {value!r}") from None
    if steps < 0:
        raise InputError("--sketch-steps must be >= 0")
    return steps


def parse_class_weights(values: list[str] | None) -> dict[str, float] | None:
    """``["NOUN=2", "X=0.5"]`` → ``{"NOUN": 2.0, "X": 0.5}``; None when no --class-weight was given."""
    if not values:
        return None
    weights = {}
    for value in values:
        tag, sign, number = value.rpartition("=")
        try:
            weights[tag] = float(number)
        except ValueError:
            sign = ""
        if not sign or not tag:
            raise InputError(f"--class-weight must be TAG=WEIGHT (e.g. NOUN=2), not {value!r}") from None
    return weights


@app.command()
def train(
    task: Annotated[
        str | None,
        typer.Option(
            help="Task: pos (UD part-of-speech tagging, the default), ner (CoNLL named entities) or qe "
            "(word-level translation quality estimation; data sets are file prefixes); default: the "
            "config file's, else pos."
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="TOML config (see configs/); flags below override it.")
    ] = None,
    train_path: Annotated[
        Path | None, typer.Option("--train", help="Training file (default: the task's data set).")
    ] = None,
    dev_path: Annotated[
        Path | None, typer.Option("--dev", help="Dev file, for choosing the best epoch.")
    ] = None,
    test_path: Annotated[
        Path | None, typer.Option("--test", help="Test file, scored once at the end.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Run folder (default: runs/TASK-MODEL-TIME).")
    ] = None,
    epochs: Annotated[int | None, typer.Option(help="Training epochs.")] = None,
    model: Annotated[str | None, typer.Option(help="nef-f, nef-s or bilstm.")] = None,
    sketch_steps: Annotated[
        str | None, typer.Option(help="Sketch steps N: an integer, or L for one per word.")
    ] = None,
    steps_beyond_length: Annotated[
        bool | None,
        typer.Option(
            "--steps-beyond-length/--no-steps-beyond-length",
            help="With N fixed: a sentence shorter than N runs all N steps (fresh attention budget every L "
            "steps; the default) or only L, N read as the paper's maximum number of steps (the ner default).",
        ),
    ] = None,
    attention: Annotated[
        str | None,
        typer.Option(
            help="Attention ρ: csoftmax, csparsemax, softmax, sparsemax, entmax15, uniform, left-to-right, "
            "right-to-left, or hard (vanilla easy-first, Alg. 1)."
        ),
    ] = None,
    attention_temperature: Annotated[
        float | None, typer.Option(help="Divide the attention scores by T before ρ (default 1).")
    ] = None,
    coverage_penalty: Annotated[
        float | None, typer.Option(help="λ: attend with ρ(z − λβ), penalising covered words (default 0).")
    ] = None,
    concat: Annotated[
        bool | None,
        typer.Option(
            "--concat/--no-concat", help="Predict from concat(h_i, s_i) (Eq. 6, default) or the sketch alone."
        ),
    ] = None,
    dropout: Annotated[
        float | None,
        typer.Option(help="Dropout after the embeddings, the BiLSTM and before the output layer."),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Sentences per update.")] = None,
    lr: Annotated[float | None, typer.Option(help="Learning rate.")] = None,
    tag_column: Annotated[str | None, typer.Option(help="CoNLL-U column to learn: upos or xpos.")] = None,
    encoding: Annotated[
        str | None,
        typer.Option(help="Encoding of column files (ner; default utf-8; CoNLL-2002/2003: latin-1)."),
    ] = None,
    pretrained: Annotated[
        Path | None, typer.Option(help="word2vec/GloVe text file for the word embeddings.")
    ] = None,
    threads: Annotated[
        int | None, typer.Option(help="CPU threads for torch (default: torch's choice).")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:1, ...")] = "cpu",
    checkpoint_every: Annotated[
        int | None, typer.Option(help="Also checkpoint every K updates (0: epoch ends only).")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="Allow writing into a run folder that already holds a model.")
    ] = False,
    resume: Annotated[
        Path | None, typer.Option(help="Continue the interrupted run in this folder from its checkpoint.")
    ] = None,
    loss: Annotated[
        str | None,
        typer.Option(
            help="Output loss and mapping: softmax (cross-entropy), sparsemax, entmax15, or entmax (with --alpha)."
        ),
    ] = None,
    alpha: Annotated[
        float | None, typer.Option(help="α > 1 of --loss entmax (1.5 = entmax15, 2 = sparsemax).")
    ] = None,
    label_smoothing: Annotated[
        float | None, typer.Option(help="ε: Fenchel–Young label smoothing, target (1 − ε)·gold + ε·uniform.")
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option(help="T: train on T · loss(scores / T); T > 1 tempers. Tagging uses T = 1."),
    ] = None,
    class_weight: Annotated[
        list[str] | None, typer.Option(help="TAG=W: weight of words whose gold tag is TAG (repeatable).")
    ] = None,
    qe_context_dim: Annotated[
        int | None,
        typer.Option(
            help="QE: size of the context-word embeddings (MT neighbours, aligned words' source "
            "neighbours); 0 leaves them out (the paper's 128-dimensional input). Default: 64."
        ),
    ] = None,
    crf: Annotated[
        bool | None,
        typer.Option("--crf/--no-crf", help="A linear-chain CRF output layer (Viterbi decoding)."),
    ] = None,
    bio_constraints: Annotated[
        bool | None,
        typer.Option(
            "--bio-constraints/--no-bio-constraints",
            help="CRF: forbid I-X after anything but B-X/I-X and at the start (default: on for BIO tag sets).",
        ),
    ] = None,
) -> None:
    """Train a tagger; writes the best-epoch model, metrics.json and train.log to the run folder.

    Under `torchrun --nproc_per_node K -m easyfirst train ...` it trains data-parallel on K processes.
    """
    from easyfirst.config import Config

    if resume is not None:
        fixed = {
            "--task": task,
            "--encoding": encoding,
            "--config": config,
            "--train": train_path,
            "--dev": dev_path,
            "--test": test_path,
            "--output": output,
            "--model": model,
            "--sketch-steps": sketch_steps,
            "--steps-beyond-length/--no-steps-beyond-length": steps_beyond_length is not None,
            "--dropout": dropout,
            "--attention": attention,
            "--attention-temperature": attention_temperature,
            "--coverage-penalty": coverage_penalty,
            "--concat/--no-concat": concat is not None,
            "--seed": seed,
            "--batch-size": batch_size,
            "--lr": lr,
            "--tag-column": tag_column,
            "--pretrained": pretrained,
            "--checkpoint-every": checkpoint_every,
            "--overwrite": overwrite,
            "--loss": loss,
            "--alpha": alpha,
            "--label-smoothing": label_smoothing,
            "--temperature": temperature,
            "--class-weight": class_weight,
            "--qe-context-dim": qe_context_dim,
            "--crf/--no-crf": crf is not None,
            "--bio-constraints/--no-bio-constraints": bio_constraints is not None,
        }
        given = [name for name, value in fixed.items() if value is not None and value is not False]
        if given:
            raise InputError(
                f"--resume continues the run as it was configured: {', '.join(given)} cannot be "
                "given with it (only --epochs, --threads and --device can)"
            )
        return resume_training(resume, epochs, threads, device)
    if task is not None and task not in TASKS:
        raise InputError(f"--task must be one of {', '.join(TASKS)}, not {task!r}")
    cfg = Config.load(config, task) if config else Config.for_task(task or "pos")
    task = cfg.data.task
    overrides = [
        (cfg.data, "encoding", encoding),
        (cfg.data, "train", train_path),
        (cfg.data, "dev", dev_path),
        (cfg.data, "test", test_path),
        (cfg.data, "tag_column", tag_column),
        (cfg.train, "epochs", epochs),
        (cfg.model, "model", model),
        (cfg.model, "attention", attention),
        (cfg.model, "attention_temperature", attention_temperature),
        (cfg.model, "coverage_penalty", coverage_penalty),
        (cfg.model, "concat", concat),
        (cfg.model, "steps_beyond_length", steps_beyond_length),
        (cfg.model, "dropout", dropout),
        (cfg.train, "seed", seed),
        (cfg.train, "batch_size", batch_size),
        (cfg.train, "lr", lr),
        (cfg.model, "pretrained", pretrained),
        (cfg.train, "threads", threads),
        (cfg.train, "checkpoint_every", checkpoint_every),
        (cfg.loss, "loss", loss),
        (cfg.loss, "alpha", alpha),
        (cfg.loss, "label_smoothing", label_smoothing),
        (cfg.loss, "temperature", temperature),
        (cfg.loss, "class_weights", parse_class_weights(class_weight)),
        (cfg.model, "qe_context_dim", qe_context_dim),
        (cfg.model, "crf", crf),
        (cfg.model, "bio_constraints", bio_constraints),
    ]
    for section, key, value in overrides:
        if value is not None:
            setattr(section, key, str(value) if isinstance(value, Path) else value)
    steps = parse_steps(sketch_steps)
    if steps != "keep":
        cfg.model.sketch_steps = steps
    if cfg.model.model == "bilstm":
        cfg.model.sketch_steps = 0
    cfg.validate("command line")
    check_device(device)
    if output is None:
        from easyfirst.distributed import launched

        if launched():  # the processes would each name a folder by their own clock
            raise InputError("under torchrun, give the run folder with --output (all processes share it)")
        output = Path("runs") / f"{task}-{cfg.model.model}-{datetime.now():%Y%m%d-%H%M%S}"
    if (output / "model.pt").exists() and not overwrite:
        raise InputError("already holds a model; choose another --output or pass --overwrite", output)
    created = not output.exists()
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the run folder: {error.strerror}", output) from None
    try:
        run_training(cfg, output, device)
    except InputError:
        # a data error found before training began: leave no run folder holding only its train.log
        if created and {p.name for p in output.iterdir()} <= {"train.log"}:
            shutil.rmtree(output, ignore_errors=True)
        raise


def run_training(cfg, output: Path, device: str, resume: bool = False) -> None:
    from easyfirst.train import train as train_loop

    try:
        train_loop(cfg, output, device=device, console=err, resume=resume)
    except FloatingPointError as error:
        err.print(f"[red]training stopped:[/] {error} in {output}")
        raise typer.Exit(1) from None


def resume_training(folder: Path, epochs: int | None, threads: int | None, device: str) -> None:
    from easyfirst.config import Config
    from easyfirst.model.io import CONFIG_FILE, read_json

    if not folder.is_dir():
        raise InputError("run folder not found", folder)
    cfg = Config.from_saved(read_json(folder / CONFIG_FILE), str(folder / CONFIG_FILE))
    if epochs is not None:
        cfg.train.epochs = epochs
    if threads is not None:
        cfg.train.threads = threads
    cfg.validate("command line")
    check_device(device)
    run_training(cfg, folder, device, resume=True)


def check_device(device: str) -> None:
    import torch

    try:
        torch.device(device)
    except RuntimeError:
        raise InputError(f"--device: not a device name: {device!r}") from None
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA GPU is available here (use --device cpu)")


def open_input(path: str | None):
    """A binary stream for ``path`` (stdin for None or ``-``) and its name for messages."""
    from easyfirst.data.files import open_binary

    if path is None or path == "-":
        return sys.stdin.buffer, "<stdin>"
    return open_binary(path), path


def check_output(output: Path | None) -> None:
    """Fail before any work if ``output`` cannot be written."""
    if output is None:
        return
    if output.is_dir():
        raise InputError("is a folder; give a file name", output)
    folder = output.parent if str(output.parent) else Path(".")
    if not folder.is_dir():
        raise InputError("cannot write: the folder does not exist", output)
    if not os.access(folder, os.W_OK):
        raise InputError("cannot write: permission denied", output)


def write_output(output: Path | None, write) -> None:
    """Call ``write(binary_stream)`` on stdout, or on a temporary file renamed to ``output`` on success."""
    if output is None:
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    from easyfirst.model.io import atomic_write

    check_output(output)
    try:
        atomic_write(output, write)
    except OSError as error:
        raise InputError(f"cannot write: {error.strerror}", output) from None


def load_tagger(model: Path | None, device: str = "cpu"):
    from easyfirst.api import Tagger

    if model is not None and not model.exists():
        raise InputError("model folder not found", model)
    if model is None:
        from easyfirst.api import default_model_path

        if not (default_model_path() / "model.pt").is_file():
            raise InputError(
                "the bundled default model is missing from this installation; pass --model RUN_DIR"
            )
    return Tagger.load(model, device)


@app.command()
def tag(
    input: Annotated[
        str | None,
        typer.Argument(
            help="File to tag (CoNLL-U for pos models, CoNLL columns for ner), or - for stdin; for qe "
            "models a prefix PREFIX of PREFIX.src, PREFIX.mt, PREFIX.src-mt.alignments (and PREFIX.tags)."
        ),
    ] = None,
    model: ModelOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Output file (default: stdout).")
    ] = None,
    text: Annotated[
        str | None, typer.Option(help="Tag this whitespace-tokenized sentence instead of a file.")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Sentences tagged at once.")] = 256,
    device: Annotated[str, typer.Option(help="cpu, cuda, ...")] = "cpu",
    replace: Annotated[
        bool, typer.Option(help="Column files: put the tags in place of the tag column, not after the last.")
    ] = False,
    encoding: Annotated[
        str | None, typer.Option(help="Column files: encoding to read and write (default: the model's).")
    ] = None,
    scheme: Annotated[
        str | None,
        typer.Option(help="Column files: write tags in bio, iob1 or bioes (default: the input's, else bio)."),
    ] = None,
    probabilities: Annotated[
        bool,
        typer.Option(
            "--probabilities",
            help="Write each word's output distribution instead (TSV: word, tag, one column per tag; "
            "a blank line between sentences). Sparse models give exact zeros; CRF models, marginals.",
        ),
    ] = False,
    src: Annotated[Path | None, typer.Option(help="QE: source sentences, one per line.")] = None,
    mt: Annotated[Path | None, typer.Option(help="QE: machine translations to tag, one per line.")] = None,
    alignments: Annotated[
        Path | None, typer.Option(help="QE: Pharaoh source-MT alignments (i-j, source index first).")
    ] = None,
    tags: Annotated[
        Path | None,
        typer.Option(help="QE: a tags file for these sentences; the output takes its format and gap tags."),
    ] = None,
    gaps: Annotated[
        bool, typer.Option(help="QE: write 2N+1 tags (gap tags OK) rather than one per word.")
    ] = False,
) -> None:
    """Tag a file, writing it back with the predicted tags and every other byte unchanged.

    CoNLL-U (pos models): the UPOS (or XPOS) column of each word is filled in. CoNLL column files (ner
    models): the tag is added as a last column (or replaces the tag column with --replace), in the
    input's tagging scheme; -DOCSTART- and blank lines are kept. QE models: --src, --mt and
    --alignments (or a PREFIX) in, a tags file out, one OK/BAD per MT word, or 2N+1 tags with gaps
    when --tags (or PREFIX.tags) has that format or --gaps is given.
    """
    if text is not None and input is not None:
        raise InputError("give either an input file or --text, not both")
    if batch_size < 1:
        raise InputError("--batch-size must be >= 1")
    if scheme is not None and scheme not in ("bio", "iob1", "bioes"):
        raise InputError(f"--scheme must be bio, iob1 or bioes, not {scheme!r}")
    check_device(device)
    check_output(output)
    qe_files = find_qe_files(input, src, mt, alignments, tags)
    if qe_files is not None:
        if probabilities:
            raise InputError("--probabilities: not for QE input (it writes a tags file)")
        return tag_qe_files(qe_files, model, output, device, batch_size, gaps, text)
    if gaps:
        raise InputError("--gaps: only for QE tags files (qe models)")
    stream, name = (None, None) if text is not None else open_input(input)  # fail fast, before the model
    tagger = load_tagger(model, device)
    if tagger.config.data.task == "qe":
        raise InputError("a qe model tags sentence pairs: give --src, --mt and --alignments (or a PREFIX)")
    task, data = task_data(tagger, encoding)
    column_options = {"--replace": replace, "--scheme": scheme, "--encoding": encoding}
    given = [flag for flag, value in column_options.items() if value not in (None, False)]
    if given and task.name != "ner":
        raise InputError(
            f"{', '.join(given)}: only for column files (ner models); this is a {task.name} model"
        )
    if probabilities:
        if text is not None:
            sentences = [text.split()]
        else:  # one batch at a time where the format allows (CoNLL-U), so a large file fits in memory
            read = task.read(stream, data) if task.stream is None else task.stream(stream, data, name)
            sentences = (s.words for s in read)
        try:
            write_output(output, lambda out: write_distributions(out, tagger, sentences, batch_size))
        finally:
            if stream is not None and stream is not sys.stdin.buffer:
                stream.close()
        return
    if text is not None:
        words = text.split()
        tags = tagger.tag([words])[0]
        write_output(
            output,
            lambda out: out.write("".join(f"{w}\t{t}\n" for w, t in zip(words, tags, strict=True)).encode()),
        )
        return
    try:
        write_output(
            output,
            lambda out: task.write(
                stream,
                out,
                tagger.tag,
                data,
                batch_size=batch_size,
                name=name,
                replace=replace,
                scheme=scheme,
            ),
        )
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def find_qe_files(input: str | None, src: Path | None, mt: Path | None, alignments: Path | None, tags):
    """The QE files to tag, from --src/--mt/--alignments/--tags or a PREFIX; None when this is no QE input."""
    from easyfirst.data.qe import QEFiles

    given = {"--src": src, "--mt": mt, "--alignments": alignments}
    if all(path is None for path in given.values()):
        if tags is not None:
            raise InputError("--tags goes with --src, --mt and --alignments (QE)")
        if input is None or input == "-" or Path(input).is_file() or not is_qe_prefix(input):
            return None
        return QEFiles.from_prefix(input, need_tags=False)
    missing = [flag for flag, path in given.items() if path is None]
    if missing:
        raise InputError(
            f"QE input needs --src, --mt and --alignments together; missing {', '.join(missing)}"
        )
    if input is not None:
        raise InputError("give either an input file or --src/--mt/--alignments, not both")
    for path in (src, mt, alignments, tags):
        if path is not None and not path.is_file():
            raise InputError("no such file", path)
    return QEFiles(src, mt, alignments, tags)


def tag_qe_files(
    files, model: Path | None, output: Path | None, device: str, batch_size: int, gaps: bool, text
):
    """`easyfirst tag` for a QE model: write a tags file in the input's format (see find_qe_files)."""
    from easyfirst.data.qe import GAP_FORMAT, read_qe, tags_format

    if text is not None:
        raise InputError("give either --text or QE input files, not both")
    sentences = read_qe(files, with_tags=files.tags is not None)  # errors before loading the model
    tagger = load_tagger(model, device)
    task, data = task_data(tagger)
    if task.name != "qe":
        raise InputError(f"QE input needs a qe model; this is a {task.name} model", model)
    with_gaps = gaps or (files.tags is not None and tags_format(sentences) == GAP_FORMAT)
    write_output(
        output,
        lambda out: task.write(sentences, out, tagger.tag, data, batch_size=batch_size, with_gaps=with_gaps),
    )


def task_data(tagger, encoding: str | None = None):
    """The model's task and its [data] settings, with ``--encoding`` applied."""
    from easyfirst.tasks import get_task

    data = tagger.config.data
    if encoding is not None:
        try:
            "".encode(encoding)
        except LookupError:
            raise InputError(f"--encoding: unknown encoding {encoding!r}") from None
        data.encoding = encoding
    return get_task(data.task), data


def write_distributions(out, tagger, sentences, batch_size: int) -> None:
    """TSV of each word's output distribution: a header ``word tag TAG1 … TAGK``, then one row per word
    (probabilities with 6 significant digits, exact zeros as 0) and a blank line after each sentence."""
    from itertools import islice

    out.write(("\t".join(["word", "tag", *tagger.tags]) + "\n").encode())
    sentences = iter(sentences)
    while chunk := list(islice(sentences, batch_size)):
        tags, distributions = tagger.tag(chunk, return_probabilities=True, batch_size=batch_size)
        for words, predicted, p in zip(chunk, tags, distributions, strict=True):
            rows = (
                "\t".join([w, t, *(f"{x:.6g}" for x in row)])
                for w, t, row in zip(words, predicted, p.tolist(), strict=True)
            )
            out.write(("".join(row + "\n" for row in rows) + "\n").encode())


@app.command()
def evaluate(
    gold: Annotated[
        Path,
        typer.Argument(
            help="File with gold tags (CoNLL-U for pos models, CoNLL columns for ner); for qe models a "
            "prefix PREFIX of PREFIX.src, PREFIX.mt, PREFIX.src-mt.alignments and PREFIX.tags."
        ),
    ],
    model: ModelOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    batch_size: Annotated[int, typer.Option(help="Sentences tagged at once.")] = 256,
    device: Annotated[str, typer.Option(help="cpu, cuda, ...")] = "cpu",
    encoding: Annotated[
        str | None, typer.Option(help="Column files: the file's encoding (default: the model's).")
    ] = None,
) -> None:
    """Tag a gold file and score it: accuracy and per-tag precision, recall and F1 (pos), or entity
    precision, recall and F1, micro-averaged and per entity type (ner), or F1-MULT = F1-OK × F1-BAD (the
    WMT16 word-level score), F1 of OK and of BAD, and accuracy (qe); calibration (ECE) and sparsity
    (mean support size of the output distributions)."""
    import torch

    from easyfirst.metrics import distribution_report

    if not gold.is_file() and not is_qe_prefix(gold):
        raise InputError("no such file (nor a QE prefix: PREFIX.mt is missing too)", gold)
    check_device(device)
    tagger = load_tagger(model, device)
    task, data = task_data(tagger, encoding)
    sentences = task.read(gold, data)
    predicted, distributions = tagger.tag(
        [s.words for s in sentences],
        return_probabilities=True,
        batch_size=batch_size,
        extras=[s.extra for s in sentences],
    )
    report = task.score([s.tags for s in sentences], predicted)
    ids = tagger.vocabs.tags.stoi

    def as_ids(tags: list[str]) -> torch.Tensor:
        return torch.tensor([ids.get(t, -1) for t in tags], dtype=torch.long)

    report |= distribution_report(
        distributions, [as_ids(t) for t in predicted], [as_ids(s.tags) for s in sentences]
    )
    if task.breakdown == "per_type":
        known = {t[2:] for t in tagger.tags if t != "O"}
    else:
        known = set(tagger.tags)
    unseen = {t: v["support"] for t, v in report[task.breakdown].items() if t not in known and v["support"]}
    report["unknown_gold_tags"] = unseen
    if as_json:
        print(json.dumps(report, indent=2))
        return
    from rich.table import Table

    out = Console()
    title = f"{gold}: accuracy {100 * report['accuracy']:.2f}% over {report['tokens']:,} words"
    if task.metric == "f1":
        title = (
            f"{gold}: entity F1 {100 * report['f1']:.2f} (precision {100 * report['precision']:.2f}, "
            f"recall {100 * report['recall']:.2f}) over {report['entities']:,} entities; "
            f"token accuracy {100 * report['accuracy']:.2f}%"
        )
    if task.metric == "f1_mult":
        title = (
            f"{gold}: F1-MULT {100 * report['f1_mult']:.2f} (F1-OK {100 * report['f1_ok']:.2f} × F1-BAD "
            f"{100 * report['f1_bad']:.2f}), accuracy {100 * report['accuracy']:.2f}% over {report['tokens']:,} words"
        )
    table = Table(title=title, show_edge=False)
    label = "type" if task.breakdown == "per_type" else "tag"
    for name in (label, "precision", "recall", "F1", "support"):
        table.add_column(name, justify="left" if name == label else "right")
    for name, row in sorted(report[task.breakdown].items(), key=lambda item: -item[1]["support"]):
        table.add_row(
            name,
            f"{100 * row['precision']:.2f}",
            f"{100 * row['recall']:.2f}",
            f"{100 * row['f1']:.2f}",
            f"{row['support']:,}",
        )
    out.print(table)
    out.print(
        f"calibration: ECE {100 * report['ece']:.2f}% (10 equal-width bins on the predicted tag's "
        f"probability); sparsity: {report['mean_support']:.2f} of {len(tagger.tags)} tags with p > 0 per word"
    )
    if unseen:
        listed = ", ".join(f"{t} ({n})" for t, n in sorted(unseen.items()))
        err.print(f"[yellow]note:[/] gold tags the model never saw, counted as errors: {listed}")


def read_sentence(path: Path, number: int, tagger):
    if number < 1:
        raise InputError("--sentence counts from 1")
    task, data = task_data(tagger)
    sentences = task.read(path, data)
    if number <= len(sentences):
        return sentences[number - 1]
    raise InputError(f"has fewer than {number} sentences", path)


@app.command()
def plot(
    model: ModelOption = None,
    text: Annotated[str | None, typer.Option(help="Plot this whitespace-tokenized sentence.")] = None,
    input: Annotated[
        Path | None, typer.Option("--input", "-i", help="File of the model's task (gold tags are shown).")
    ] = None,
    sentence: Annotated[int, typer.Option(help="Which sentence of --input (from 1).")] = 1,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Figure file: .png, .svg or .pdf.")
    ] = None,
    terminal: Annotated[bool, typer.Option(help="Draw the matrix in the terminal.")] = False,
    compare: Annotated[list[Path] | None, typer.Option(help="More run folders to draw side by side.")] = None,
    beta: Annotated[bool, typer.Option(help="Add the cumulative-attention panel.")] = True,
) -> None:
    """Raindrop plot: where the decoder looks at each sketch step, for one sentence."""
    from easyfirst.plot import Drop, save
    from easyfirst.plot import terminal as render

    if (text is None) == (input is None):
        raise InputError("give exactly one of --text or --input")
    if output is None and not terminal:
        raise InputError("give --output FILE (.png, .svg, .pdf) and/or --terminal")
    if output is not None:
        if output.suffix.lower() not in (".png", ".svg", ".pdf"):
            raise InputError("the figure file must end in .png, .svg or .pdf", output)
        check_output(output)
    if input is not None and not input.is_file() and not is_qe_prefix(input):
        raise InputError("no such file", input)
    taggers = [load_tagger(model)] + [load_tagger(path) for path in compare or []]
    drops, tagset = [], set()
    for path, tagger in zip([model, *(compare or [])], taggers, strict=True):
        if tagger.model.decoder is None:
            raise InputError("this model has no sketch steps (N = 0): there is no attention to plot", path)
        gold, extra = None, None
        if input is not None:
            found = read_sentence(input, sentence, tagger)
            words, gold, extra = found.words, found.tags, found.extra
        else:
            if tagger.config.data.task == "qe":
                raise InputError("a qe model needs the source and alignment: plot --input PREFIX", path)
            words = text.split()
            if not words:
                raise InputError("--text has no words")
        tags, attention = tagger.tag([words], return_attention=True, extras=[extra] if extra else None)
        m = tagger.config.model
        steps = "N = L" if m.sketch_steps is None else f"N = {m.sketch_steps}"
        name = "bundled model" if path is None else path.name
        drops.append(Drop(words, tags[0], attention[0], gold, f"{name}: {m.model}, {m.attention}, {steps}"))
        tagset |= set(tagger.tags)
    if terminal:
        for drop in drops:
            Console().print(render(drop, sorted(tagset)))
    if output is not None:
        save(drops, sorted(tagset), output, show_beta=beta)
        err.print(f"wrote {output}")


@app.command()
def analyze(
    data: Annotated[
        Path,
        typer.Argument(
            help="File to analyse, in the format of the model's task (gold tags are used where present)."
        ),
    ],
    model: ModelOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the statistics as JSON.")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the statistics as Markdown tables.")
    ] = False,
) -> None:
    """Attention statistics over a data set: first focus, entropy and support per step, evenness."""
    from rich.table import Table

    from easyfirst.analysis import analyze as run_analysis

    if as_json and markdown:
        raise InputError("give --json or --markdown, not both")
    if not data.is_file() and not is_qe_prefix(data):
        raise InputError("no such file", data)
    tagger = load_tagger(model)
    if tagger.model.decoder is None:
        raise InputError("this model has no sketch steps (N = 0): there is no attention to analyse", model)
    task, settings = task_data(tagger)
    sentences = task.read(data, settings)
    stats = run_analysis(
        tagger, [s.words for s in sentences], [s.tags for s in sentences], extras=[s.extra for s in sentences]
    )
    if as_json:
        print(json.dumps(stats, indent=2))
        return
    if markdown:
        from easyfirst.analysis import to_markdown

        print(to_markdown(stats), end="")
        return
    out = Console()
    first = Table(
        title=f"first focus (argmax of α¹), by {stats['first_focus_by']}, {stats['sentences']:,} sentences",
        show_edge=False,
    )
    first.add_column("tag")
    first.add_column("share", justify="right")
    for tag, share in stats["first_focus"].items():
        first.add_row(tag, f"{100 * share:.1f}%")
    out.print(first)
    steps = Table(title=f"attention per step ({stats['step_grouping']})", show_edge=False)
    for name in ("steps", "entropy (nats)", "support (words α > 0)", "focus position (0 = first word)"):
        steps.add_column(name, justify="right")
    for row in stats["per_step"]:
        steps.add_row(
            row["steps"], f"{row['entropy']:.3f}", f"{row['support']:.2f}", f"{row['focus_position']:.3f}"
        )
    out.print(steps)
    even = stats["evenness"]
    out.print(
        f"evenness: final β max {even['beta_max']:.4f}, mean {even['beta_mean']:.4f}, "
        f"share of words with β = 1 (±1e-3): {100 * even['share_beta_one']:.1f}%"
    )


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `easyfirst train`.")],
    output: Annotated[Path, typer.Argument(help="Folder for the exported model.")],
    half: Annotated[
        bool, typer.Option(help="Store weights as float16 (half the size; loaded as float32).")
    ] = True,
) -> None:
    """Copy a trained model (weights, config, vocabularies) to a new folder, by default in float16."""
    from easyfirst.model.io import load_model, save_model

    model, config, vocabs = load_model(run_dir)
    if (output / "model.pt").exists():
        raise InputError("already holds a model", output)
    save_model(output, model, config, vocabs, half=half)
    size = sum(f.stat().st_size for f in output.iterdir()) / 2**20
    err.print(f"exported {run_dir} to {output} ({size:.1f} MiB{', float16' if half else ''})")


@app.command()
def data() -> None:
    """List the known data sets and where each split is found (EASYFIRST_DATA, cache, or missing)."""
    from rich.table import Table

    from easyfirst.data.datasets import describe

    table = Table(show_edge=False)
    for name in ("set", "task", "split", "location"):
        table.add_column(name)
    for entry in describe():
        for split, where in entry["splits"].items():
            table.add_row(entry["name"], entry["task"], split, str(where))
    Console().print(table)


def main() -> None:
    try:
        app()
    except InputError as error:
        if os.environ.get("RANK", "0") == "0":  # under torchrun every process finds it: process 0 says it
            err.print(str(error), markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
