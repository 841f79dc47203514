"""Hyperparameter search (``easyfirst tune``) over training runs, with Optuna (the extra ``tune``).

space.py: the search space file (config keys with ranges or choices), checked before any trial runs;
study.py: the study's storage and the trials (each a run folder, pruned on its epochs' dev scores);
settings.py: what a study was started with (``study.json``); report.py: the best trials and the
pictures; retrain.py: the best configuration trained again at several seeds, with test scores.
"""
