"""The ``easyfirst`` command line: one module per verb on one Typer app (easyfirst.cli.app).

train (easyfirst.cli.train), tune (tune), tag (tag), evaluate (evaluate), plot and analyze (plot), export and
data (export), serve (serve). Each verb's module imports the app from easyfirst.cli.app and registers
on it; this package imports them and re-exports what its callers use (``run``, the ``easyfirst``
command; ``main``; ``app``). No verb imports this package.

The top layer: may import anything below it; nothing in the package imports it.
"""

from __future__ import annotations

from easyfirst.cli.app import app, main, refused, report, run, unwrap_command_help

# isort: off
# the verbs register on ``app`` as they are imported: --help lists them in this order
from easyfirst.cli import train, tune, tag, evaluate, plot, export, serve
# isort: on

VERBS = (train, tune, tag, evaluate, plot, export, serve)
unwrap_command_help()  # after the verbs have registered

__all__ = ["VERBS", "app", "main", "refused", "report", "run"]
