"""easyfirst inside other people's tools: each module here adapts :class:`easyfirst.api.Tagger` to one
tool that users already run, and imports that tool, so each is an optional extra (docs/integrations.md).

- ``spacy``: the ``easyfirst`` pipeline component (extra ``spacy``; registered through spaCy's
  ``spacy_factories`` entry point, so ``nlp.add_pipe("easyfirst")`` finds it without an import).
- ``dask``: tagging a corpus on a Dask cluster, one Tagger loaded per worker (extra ``dask``).

May import: ``api`` (the Tagger every front end uses) and the layers below it (``tagging``, ``viz``,
``tasks``, ``data``, ``config``, …); nothing imports this package but the tools that load it (spaCy's
entry point) and users.
"""
