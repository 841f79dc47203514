"""Tagging: from an input to tagged output, on every core of one machine.

Owns the one path every front end takes (``pipeline``: a file, stdin, ``--text``, QE files or a request →
sentences → tags, attention and probabilities → a file, JSON or a table, written atomically), the pool of
forked processes that share a large call's batches (``pool``) and the reader forked before torch is
imported that reads, indexes and packs a CoNLL-U file while the model loads (``readahead``).

May import: ``config``, ``tasks``, ``model``, ``data``, ``parallel``, ``resources`` and the bottom layer.
Never ``training``: what tagging shares with it lives below both (model folders in ``runs``, forked
worker processes in ``parallel``). :class:`easyfirst.api.Tagger` sits above this package and is the way in.
"""
