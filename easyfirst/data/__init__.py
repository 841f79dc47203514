"""Data: readers and writers, one per format (``conllu``, ``conll``, ``qe``, ``text``), and what turns
sentences into tensors (``vocab``, ``features``, ``buckets``, ``batching``; ``outputs`` and ``heads``: a
task's extra outputs), the known data sets (``datasets``), file handling (``files``, ``detect``) and the
one ``Sentence`` type.

May import: ``atomic`` and ``errors`` only; no model, no task, no config.
"""
