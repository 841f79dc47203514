"""Tagging on a Dask cluster (easyfirst.integrations.dask): a local cluster of two worker processes on
loopback writes what `easyfirst tag` writes, byte for byte, with one Tagger loaded per worker."""

from __future__ import annotations

import pytest

from conftest import SAMPLE, extra, run_cli, sample_training
from tiny_transformer import tiny_bert

distributed = extra("distributed", "dask")  # in the dev extra: CI has it
import dask  # noqa: E402

from easyfirst.errors import InputError  # noqa: E402
from easyfirst.integrations.dask import (  # noqa: E402
    ClusterTagger,
    assemble,
    register,
    shards,
    tag_file,
    tag_files,
)
from easyfirst.tagging.tagged import Tagged  # noqa: E402


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("dask")  # not /tmp/dask-scratch-space, which Dask leaves behind
    with dask.config.set({"temporary-directory": str(scratch)}):
        cluster = distributed.LocalCluster(
            n_workers=2,
            processes=True,
            host="127.0.0.1",
            threads_per_worker=1,
            dashboard_address="127.0.0.1:0",
            local_directory=scratch,
        )
    with cluster, distributed.Client(cluster) as client:
        yield client


def loads(client) -> dict[str, int]:
    """How many Taggers each worker loaded so far (easyfirst.api.Tagger.load calls)."""

    def count(dask_worker):
        return getattr(dask_worker, "easyfirst_loads", 0)

    return client.run(count)


@pytest.fixture(scope="module")
def counted(client):
    """Count Tagger.load calls on each worker from now on."""

    def patch(dask_worker):
        from easyfirst.api import Tagger

        original = Tagger.load.__func__

        def load(cls, *args, **kwargs):
            dask_worker.easyfirst_loads = getattr(dask_worker, "easyfirst_loads", 0) + 1
            return original(cls, *args, **kwargs)

        Tagger.load = classmethod(load)

    client.run(patch)
    return client


def test_a_sharded_file_is_easyfirst_tags_output_byte_for_byte(counted, tmp_path):
    expected = tmp_path / "tag.conllu"
    assert run_cli("tag", SAMPLE, "-o", expected, process=True).returncode == 0
    for shard in (1, 3, None):  # a task per sentence, a few, about four per worker
        out = tmp_path / f"dask-{shard}.conllu"
        tag_file(counted, SAMPLE, out, shard=shard)
        assert out.read_bytes() == expected.read_bytes()
    half = tmp_path / "half.conllu"  # a second file: the sample's first half of sentences
    half.write_text("\n\n".join(SAMPLE.read_text(encoding="utf-8").split("\n\n")[:10]) + "\n\n")
    assert run_cli("tag", half, "-o", tmp_path / "half-tag.conllu", process=True).returncode == 0
    pairs = [(SAMPLE, tmp_path / "files-sample.conllu"), (half, tmp_path / "files-half.conllu")]
    tag_files(counted, pairs)  # each file on a worker, read and written there
    assert pairs[0][1].read_bytes() == expected.read_bytes()
    assert pairs[1][1].read_bytes() == (tmp_path / "half-tag.conllu").read_bytes()
    assert list(loads(counted).values()) == [1, 1]  # one Tagger per worker, not per call or per shard


def test_both_workers_tag_and_the_shards_come_back_in_order(client):
    sentences = [[f"w{k}"] * (1 + k % 5) for k in range(40)]
    tagger = ClusterTagger(client, shard=2)
    tagged = tagger.tag(sentences, attention=True)
    assert [t.tokens for t in tagged] == sentences  # each sentence back at its place
    assert [len(t.tags) for t in tagged] == [len(s) for s in sentences]
    assert [t.attention.shape[1] for t in tagged] == [len(s) for s in sentences]
    assert tagger.tag(sentences) == [Tagged(t.tokens, t.tags) for t in tagged]  # records, nothing asked
    futures = client.map(lambda k: distributed.get_worker().address, range(20), pure=False)
    assert len(set(client.gather(futures))) == 2  # the cluster has two workers that take tasks


def test_shards_group_similar_lengths_and_assemble_puts_every_sentence_back():
    lengths = [5, 1, 9, 1, 5, 30, 2]
    found = shards(lengths, count=3)
    assert sorted(k for shard in found for k in shard) == list(range(len(lengths)))
    assert [[lengths[k] for k in shard] for shard in found] == [[1, 1, 2, 5, 5, 9], [30]]  # by Σ L²
    even = [3, 1, 3, 1, 3, 1, 3, 1]
    assert [[even[k] for k in shard] for shard in shards(even, count=2)] == [[1, 1, 1, 1, 3], [3, 3, 3]]
    assert shards(lengths, count=3, size=3) == [[1, 3, 6], [0, 4, 2], [5]]
    parts = [[f"t{k}" for k in shard] for shard in found]
    assert assemble(parts, found, len(lengths)) == [f"t{k}" for k in range(len(lengths))]


def test_input_and_model_errors_are_raised_before_anything_is_written(client, tmp_path):
    bad = tmp_path / "bad.conllu"
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = next(k for k, line in enumerate(lines) if line[:1].isdigit())
    lines[broken] = lines[broken].replace("\t", " ", 1)
    bad.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "out.conllu"
    with pytest.raises(InputError, match=f"^{bad}:{broken + 1}: expected 10 tab-separated columns"):
        tag_file(client, bad, out)
    assert not out.exists()
    good = tmp_path / "good.conllu"
    with pytest.raises(InputError, match=f"^{bad}:{broken + 1}: "):
        tag_files(client, [(bad, out), (SAMPLE, good)])
    assert not out.exists() and good.read_bytes().startswith(SAMPLE.read_bytes()[:20])
    with pytest.raises(InputError, match="model folder not found"):
        register(client, tmp_path / "no-model")
    with pytest.raises(TypeError, match="no tag option nothing"):
        tag_file(client, SAMPLE, out, nothing=True)


def test_the_temporaries_a_killed_worker_left_are_removed_by_a_rerun(client, tmp_path):
    outputs = [tmp_path / "a.conllu", tmp_path / "b.conllu"]
    left = [tmp_path / f".{path.name}.k3x_9q0a.tmp" for path in outputs]
    other = tmp_path / ".notes.txt.k3x_9q0a.tmp"
    for path in [*left, other]:
        path.write_bytes(b"")
    tag_files(client, [(SAMPLE, path) for path in outputs])
    assert not any(path.exists() for path in left) and other.exists()
    left[0].write_bytes(b"")
    tag_file(client, SAMPLE, outputs[0])
    assert not left[0].exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "a.conllu", "b.conllu"]


def test_a_model_over_a_transformer_tags_on_the_cluster_as_easyfirst_tag_does(client, tmp_path):
    """A run trained with --transformer (a tiny random BERT a test writes) tags on the workers, which
    load the transformer it names, and writes what `easyfirst tag` writes."""
    bert = tiny_bert(tmp_path / "bert")
    run = tmp_path / "run"
    trained = run_cli(*sample_training(run, "--transformer", bert))
    assert trained.returncode == 0, trained.stderr.decode()
    expected = tmp_path / "tag.conllu"
    assert run_cli("tag", "--model", run, SAMPLE, "-o", expected, process=True).returncode == 0
    out = tmp_path / "dask.conllu"
    tag_file(client, SAMPLE, out, model=run, shard=3)
    assert out.read_bytes() == expected.read_bytes()
