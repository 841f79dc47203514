"""Training: everything ``easyfirst train`` runs and nothing that tagging needs.

Owns the loop as named steps (``loop``: prepare_run, the epochs, evaluate_and_select, finish), the best
epoch on dev (``selection``: each epoch's dev score, early stopping, the final scores), one epoch's
updates (``epochs``), the run's state (``state``), checkpoints and ``--resume`` (``checkpoints``), Hogwild
workers on one machine (``hogwild``), data-parallel training under torchrun (``distributed``), the
optimizer and gradient clipping (``optim``), the attention temperature's annealing (``anneal``) and what a
run prints and scores (``reporting``: train.log, the dev/test evaluation, the summary table).

May import: ``runs`` (model folders), ``config``, ``tasks``, ``model``, ``data``, ``losses``, ``metrics``,
``parallel`` (forked workers) and the bottom layer (``atomic``, ``fields``, ``errors``). Never the API,
``tagging``, ``viz``, ``serve`` or the CLI (docs/architecture.md, "Layers").
"""
