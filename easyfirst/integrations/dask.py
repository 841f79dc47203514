"""Tagging a corpus on a Dask cluster (``distributed``), one Tagger loaded per worker.

>>> from distributed import Client
>>> from easyfirst.integrations.dask import tag_file
>>> with Client("tcp://scheduler:8786") as client:   # or Client(LocalCluster(n_workers=2))
...     tag_file(client, "corpus.conllu", "tagged.conllu", model="runs/pos")

The output is the file ``easyfirst tag corpus.conllu -m runs/pos -o tagged.conllu`` writes, byte for
byte: this process reads the input and writes the output through the same path
(easyfirst.tagging.pipeline ``Source``), and only the tagging goes to the cluster. The writer asks for
the tags of a window of sentences at a time (4,096: easyfirst.data.files.TAG_WINDOW); each window is cut
into shards of sentences of similar lengths (:func:`shards`), one task each (``client.map``), and their
tags are put back in the window's order (:func:`assemble`). That one process reads and writes bounds
the rate (docs/studies/dask.md, "Scaling, on paper"): :func:`tag_files` tags a corpus of many files
with each file read, tagged and written on a worker, and the driver sending only names.

One Tagger per worker: :class:`TaggerPlugin` is a ``distributed.WorkerPlugin``, registered on the
cluster (every worker there now, and every worker that joins later, runs its ``setup`` once), which
loads the model when the worker gets it and keeps it for the worker's life; a task looks its Tagger up
with ``get_worker().plugins``. A worker tags on one process (its Tagger forks no tagging pool: run a
worker per core, ``threads_per_worker=1``, as Dask's nanny sets one BLAS/OpenMP thread per worker).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import distributed
from distributed import Client, WorkerPlugin, get_worker

from easyfirst.atomic import read_json, remove_stale_temporaries
from easyfirst.config import Config
from easyfirst.data.vocab import Vocabularies
from easyfirst.resources import CONFIG_FILE, VOCAB_FILE, model_folder
from easyfirst.tagging.pipeline import Source, write_output
from easyfirst.tagging.tagged import Tagged
from easyfirst.tasks import TASKS

SHARDS_PER_WORKER = 4  # a window's shards per worker: a worker that is slower than the others waits less


class TaggerPlugin(WorkerPlugin):
    """One Tagger for each worker, loaded once by ``setup`` (when the plugin is registered, or the worker
    joins) and kept for the worker's life. ``model``: a model folder the workers can read (None: the
    bundled model). Named after the model and device, and idempotent: registering the same again loads
    nothing (a model folder changed since is not reloaded), another model is a plugin of its own."""

    idempotent = True

    def __init__(self, model: str | Path | None = None, device: str = "cpu"):
        self.model, self.device, self.tagger = None if model is None else str(model), device, None
        self.name = f"easyfirst-tagger {self.model or '(bundled)'} {device}"

    def setup(self, worker) -> None:
        from easyfirst.api import Tagger

        self.tagger = Tagger.load(self.model, self.device)  # tags in this process (Tagger.processes None):
        # the worker is the unit of parallelism, no pool is forked inside it

    def teardown(self, worker) -> None:
        self.tagger = None


def worker_tagger(name: str):
    """The Tagger of the worker this task runs on, of the plugin ``name`` (:func:`register`'s)."""
    return get_worker().plugins[name].tagger


def _tag_shard(name: str, sentences: list, extras: list | None, options: dict) -> Any:
    return worker_tagger(name).tag(sentences, extras=extras, **options)


def register(client: Client, model: str | Path | None = None, device: str = "cpu") -> str:
    """Load ``model`` on every worker of ``client``'s cluster, once (and on each worker that joins);
    returns the plugin's name for :func:`worker_tagger`. A worker that cannot load it raises here."""
    plugin = TaggerPlugin(model, device)
    client.register_plugin(plugin)
    return plugin.name


def shards(lengths: Sequence[int], count: int, size: int | None = None) -> list[list[int]]:
    """The indices of sentences of ``lengths`` in shards of similar lengths: sorted by length (as
    ``Tagger.tag`` forms its batches, so that a shard's batches are as little padded as the whole call's
    would be), then cut every ``size`` sentences, or (None) into about ``count`` shards of equal cost
    (Σ L², as N = L sketch steps each attend over L words: easyfirst.tagging.pool.cost)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    if size is not None:
        return [order[i : i + size] for i in range(0, len(order), size)]
    target = max(1, sum(n * n for n in lengths)) / count
    found: list[list[int]] = [[]]
    spent = 0
    for k in order:
        if found[-1] and spent + lengths[k] ** 2 > target * len(found):
            found.append([])
        found[-1].append(k)
        spent += lengths[k] ** 2
    return found


def assemble(parts: Sequence[list], indices: Sequence[Sequence[int]], count: int) -> list:
    """The results of ``Tagger.tag`` on the shards of ``indices`` as one call's on ``count`` sentences:
    each sentence's item (its Tagged) back at its index."""
    found: list[Any] = [None] * count
    for part, shard in zip(parts, indices, strict=True):
        for k, item in zip(shard, part, strict=True):
            found[k] = item
    return found


class ClusterTagger:
    """What the tagging path needs of a Tagger (its ``config``, ``tags`` and ``tag``), tagging on the
    workers of ``client``: each call's sentences in shards of ``shard`` sentences of similar lengths
    (None: :data:`SHARDS_PER_WORKER` shards of equal cost per worker), each tagged by a worker's own
    Tagger."""

    def __init__(self, client: Client, model: str | Path | None = None, shard: int | None = None):
        folder = model_folder(model)
        self.config = Config.from_saved(read_json(folder / CONFIG_FILE), str(folder / CONFIG_FILE))
        self.tags = list(Vocabularies.from_json(read_json(folder / VOCAB_FILE)).tags.itos)
        if shard is not None and shard < 1:
            raise ValueError("shard: at least one sentence")
        self.client, self.shard = client, shard
        self.plugin = register(client, model)

    def tag(
        self, sentences: Sequence[Sequence[str]], *, extras: Sequence | None = None, **options
    ) -> list[Tagged]:
        """``Tagger.tag(sentences, extras=extras, **options)`` for a list of tokenized sentences: one
        easyfirst.tagging.tagged.Tagged per sentence."""
        if not sentences:
            tagged = self.client.submit(_tag_shard, self.plugin, [], extras, options, pure=False).result()
        else:
            workers = max(1, len(self.client.scheduler_info(n_workers=-1)["workers"]))
            indices = shards([len(s) for s in sentences], SHARDS_PER_WORKER * workers, self.shard)
            futures = self.client.map(
                _tag_shard,
                [self.plugin] * len(indices),
                [[list(sentences[k]) for k in shard] for shard in indices],
                [None if extras is None else [extras[k] for k in shard] for shard in indices],
                options=options,
                pure=False,
            )
            tagged = assemble(self.client.gather(futures), indices, len(sentences))
        return tagged


def tag_file(
    client: Client,
    input: str | Path,
    output: str | Path | None = None,
    *,
    model: str | Path | None = None,
    batch_size: int = 256,
    shard: int | None = None,
    **task_options,
) -> None:
    """Write ``input`` tagged as ``easyfirst tag INPUT -m MODEL -o OUTPUT`` does (None: stdout), its
    sentences tagged on ``client``'s workers; this process reads and writes. ``task_options``: the tag
    options of the model's task as ``easyfirst tag`` takes them (``replace=True``, ``encoding=…`` for
    column files; ``src=``, ``mt=``, ``alignments=`` paths for QE, with ``input`` None). Errors in the
    input are easyfirst.errors.InputError (``path:line: …``), raised with nothing written."""
    if output is not None:
        remove_stale_temporaries([output])  # one a killed call left
    write_tagged(ClusterTagger(client, model, shard), input, output, batch_size, tag_options(task_options))


def tag_files(
    client: Client,
    pairs: Sequence[tuple[str | Path, str | Path]],
    *,
    model: str | Path | None = None,
    batch_size: int = 256,
    **task_options,
) -> None:
    """Tag each ``(input, output)`` of ``pairs`` on a worker of its own, as ``easyfirst tag INPUT -o
    OUTPUT`` does: the worker reads and writes the files (a file system every worker sees), so this
    process sends only the names, and a corpus of many files scales with the workers. The first input
    error is raised once every file is done; the other outputs are written. The temporaries that a
    killed worker (or call) left beside the outputs are removed, before and after."""
    outputs = [Path(o) for _, o in pairs]
    remove_stale_temporaries(outputs)
    plugin = register(client, model)
    options = tag_options(task_options)
    futures = client.map(
        _tag_file_here,
        [plugin] * len(pairs),
        [str(i) for i, _ in pairs],
        [str(o) for _, o in pairs],
        [batch_size] * len(pairs),  # (Client.map has a batch_size keyword of its own)
        options=options,
        pure=False,
    )
    distributed.wait(futures)
    remove_stale_temporaries(outputs)  # those of a worker killed in this call, whose task ran again
    client.gather(futures)


def _tag_file_here(plugin: str, input: str, output: str, batch_size: int, options: dict) -> None:
    write_tagged(worker_tagger(plugin), input, output, batch_size, options)


def tag_options(given: dict[str, Any]) -> dict[str, Any]:
    """Every task's tag options (as the command line has them), with ``given`` in place of defaults."""
    options = {f.name: f.default for task in TASKS.values() for f in fields(task.format.TagOptions)}
    unknown = set(given) - set(options)
    if unknown:
        raise TypeError(f"no tag option {', '.join(sorted(unknown))}")
    return options | given


def write_tagged(
    tagger, input: str | Path | None, output: str | Path | None, batch_size: int, options
) -> None:
    """``easyfirst tag``'s path from ``input`` to ``output`` (None: stdout) with ``tagger``."""
    source = Source.find(None if input is None else str(input), None, options)
    try:
        out = None if output is None else Path(output)
        write_output(out, source.writer(tagger, options, batch_size=batch_size, output=out))
    finally:
        source.close()
