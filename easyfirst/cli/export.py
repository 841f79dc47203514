"""``easyfirst export`` (a model folder for shipping) and ``easyfirst data`` (where the data sets are)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli.app import app
from easyfirst.cli.common import console, err, given_path, note_stopped
from easyfirst.errors import InputError, WriteFailed
from easyfirst.resources import MODEL_FILE


@app.command()
def export(
    run_dir: Annotated[
        Path,
        typer.Argument(parser=given_path, metavar="RUN", help="Run folder written by `easyfirst train`."),
    ],
    output: Annotated[
        Path | None,
        typer.Argument(
            parser=given_path, metavar="FOLDER", help="Folder for the exported model (or give it with -o)."
        ),
    ] = None,
    output_option: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", parser=given_path, metavar="FOLDER", help="Folder for the exported model."
        ),
    ] = None,
    half: Annotated[
        bool, typer.Option(help="Store weights as float16 (half the size; loaded as float32).")
    ] = True,
    overwrite: Annotated[
        bool, typer.Option(help="Replace the model files of a folder that already holds a model.")
    ] = False,
) -> None:
    """Copy a trained model to a new folder, with a model card.

    The folder gets the weights (by default in float16), config.json and vocab.json, and README.md, a
    model card written from the run's config and metrics.json: data, a command that trains the same
    configuration, dev and test scores, intended use and limits."""
    from easyfirst.atomic import atomic_write, read_json
    from easyfirst.cli.flags import FLAG_OF
    from easyfirst.runs import load_model, save_model
    from easyfirst.viz.model_card import model_card

    if output is not None and output_option is not None:
        raise InputError("give the output folder once: as OUT or as -o OUT, not both")
    output = output if output is not None else output_option
    if output is None:
        raise InputError("no output folder: easyfirst export RUN -o OUT")
    if (output / MODEL_FILE).exists() and not overwrite:
        raise InputError("already holds a model (--overwrite replaces it)", output)
    if output.exists() and not output.is_dir():
        raise InputError("is a file, not a folder", output)
    model, config, vocabs = load_model(run_dir)
    # a run saved before training dropped the n-grams the model never reads
    if not config.model.embedder.affix_dim:
        vocabs = vocabs.without_affixes()
    if output.resolve() == Path(run_dir).resolve():
        raise InputError("is the run folder itself: export into another folder", output)
    metrics_file = Path(run_dir) / "metrics.json"
    metrics = read_json(metrics_file) if metrics_file.is_file() else None
    sizes = {"words": len(vocabs.words), "tags": len(vocabs.tags)}
    if model.embedder.vector_words is not None:
        sizes["vector_words"] = len(model.embedder.vector_words)
    parameters = sum(p.numel() for p in model.parameters())
    early = note_stopped(Path(run_dir), config)
    card = model_card(config, metrics, sizes, parameters, str(run_dir), half, early, FLAG_OF)
    # every file is written into a folder beside OUT first, then each renamed into OUT: a full disk
    # while writing leaves OUT as it was (no half-exported folder, no new weights beside an old card)
    staged = output.parent / f".{output.name}.export-tmp"
    shutil.rmtree(staged, ignore_errors=True)  # one a killed export left
    try:
        save_model(staged, model, config, vocabs, half=half)
        atomic_write(staged / "README.md", lambda out: out.write(card.encode()))
        output.mkdir(parents=True, exist_ok=True)
        for written in sorted(staged.iterdir()):
            os.replace(written, output / written.name)
    except WriteFailed as error:  # named as the file it was to become
        error.path = str(output / Path(error.path).name)
        raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    size = sum(f.stat().st_size for f in output.iterdir()) / 2**20
    err.print(
        f"exported {run_dir} to {output} ({size:.1f} MiB{', float16' if half else ''}), with its card README.md"
    )


@app.command()
def data(
    vectors: Annotated[
        bool,
        typer.Option("--vectors", help="List the named sets of word vectors (for --pretrained) instead."),
    ] = False,
) -> None:
    """List the known data sets and where each split is found.

    Each split is found under EASYFIRST_DATA, in the cache, or missing (then: where it looked and how to
    get it). With --vectors: the named sets of pretrained word vectors that train --pretrained NAME takes,
    and whether each is installed (else how to install it)."""
    from rich.table import Table

    if vectors:
        return list_vectors()
    from easyfirst.data.datasets import describe

    table = Table(show_edge=False)
    for name in ("set", "task", "split", "location"):
        table.add_column(name)
    entries = describe()
    for entry in entries:
        for split, where in entry["splits"].items():
            table.add_row(entry["name"], entry["task"], split, str(where))
    out = console()
    out.print(table)
    for entry in entries:
        if "looked" in entry:
            out.print(f"\n[bold]{entry['name']}[/]: {entry['get']}.", highlight=False)
            for split, places in entry["looked"].items():
                out.print(f"  {split}: looked at {'; '.join(places)}", highlight=False, markup=False)


def list_vectors() -> None:
    """``easyfirst data --vectors``: the named sets of easyfirst.data.vectors."""
    from rich.table import Table

    from easyfirst.data.vectors import describe_named

    table = Table(show_edge=False)
    for name in ("name", "dim", "case", "installed", "what it is"):
        table.add_column(name, overflow="fold")
    entries = describe_named()
    for entry in entries:
        installed = "yes" if entry["missing"] is None else "no"
        table.add_row(entry["name"], entry["dim"], entry["case"], installed, entry["about"])
    out = console()
    out.print(table, highlight=False)
    for entry in entries:
        if entry["missing"] is not None:
            out.print(f"\n{entry['missing']}.", highlight=False, markup=False)
