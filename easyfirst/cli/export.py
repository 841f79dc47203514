"""``easyfirst export`` (a model folder for shipping) and ``easyfirst data`` (where the data sets are)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from easyfirst.cli import app
from easyfirst.cli.common import console, err
from easyfirst.errors import InputError


@app.command()
def export(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `easyfirst train`.")],
    output: Annotated[Path, typer.Argument(help="Folder for the exported model.")],
    half: Annotated[
        bool, typer.Option(help="Store weights as float16 (half the size; loaded as float32).")
    ] = True,
) -> None:
    """Copy a trained model (weights, config, vocabularies) to a new folder, by default in float16."""
    from easyfirst.runs import load_model, save_model

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
    console().print(table)
