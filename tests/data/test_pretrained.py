"""Pretrained vectors (issue #17, item 8; issue #36): the set's most frequent words join the vocabulary,
so that a word never seen in training gets its pretrained vector rather than UNK's; named sets, files in
every format, and the settings the vectors decide."""

from __future__ import annotations

import pytest
import torch

from easyfirst.data.vectors import open_vectors
from easyfirst.data.vocab import Vocab, Vocabularies
from easyfirst.errors import InputError
from easyfirst.model.embedder import Embedder

VECTORS = {  # in file order: most frequent first
    "the": [0.1, 0.2, 0.3, 0.4],
    "zebra": [1.0, -1.0, 0.5, 2.0],
    "dog": [0.0, 0.5, 0.0, -0.5],
    "aardvark": [9.0, 9.0, 9.0, 9.0],
    "barks": [-0.25, 0.75, 1.5, 3.0],
}


@pytest.fixture
def vectors(tmp_path):
    path = tmp_path / "vectors.txt"
    lines = [f"{len(VECTORS)} 4"] + [" ".join([w] + [str(x) for x in v]) for w, v in VECTORS.items()]
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")  # a blank line at the end is skipped
    return path


def train_vocabs(lowercase=False):
    return Vocabularies.build(
        [(["the", "dog", "barks"], ["DET", "NOUN", "VERB"])], word_min_freq=1, lowercase=lowercase
    )


def test_the_first_words_of_the_file_join_the_vocabulary_up_to_the_cap(vectors):
    first = open_vectors(vectors).first_words(3)
    assert first == ["the", "zebra", "dog"]  # the header line is skipped
    vocabs = train_vocabs()
    before = list(vocabs.words.itos)
    assert vocabs.add_pretrained_words(first) == 1  # zebra; aardvark is past the cap
    assert vocabs.words.itos == before + ["zebra"]  # training ids unchanged
    assert "aardvark" not in vocabs.words
    assert Vocabularies.from_json(vocabs.to_json()).words.itos == vocabs.words.itos  # saved in vocab.json


def test_a_word_never_seen_in_training_gets_its_pretrained_vector(vectors):
    vocabs = train_vocabs()
    vocabs.add_pretrained_words(open_vectors(vectors).first_words(3))
    torch.manual_seed(0)
    embedder = Embedder(vocabs, word_dim=4, affix_dim=0)
    unk_before = embedder.words.weight[1].clone()
    assert (
        embedder.load_pretrained(open_vectors(vectors), vocabs) == 4
    )  # the, zebra, dog, barks (barks: a training word)
    ids = torch.tensor([[vocabs.word_index(w) for w in ["zebra", "barks", "aardvark"]]])
    none = torch.zeros(1, 3, 0, dtype=torch.long)
    out = embedder(ids, none, none)[0]
    assert torch.allclose(out[0], torch.tensor(VECTORS["zebra"]))
    assert torch.allclose(out[1], torch.tensor(VECTORS["barks"]))
    assert vocabs.word_index("aardvark") == 1 and torch.equal(out[2], unk_before)  # capped out: UNK


def test_lowercased_lookups_take_the_first_spelling(tmp_path):
    path = tmp_path / "cased.txt"
    path.write_text("The 1 1\nthe 2 2\nZebra 3 3\n", encoding="utf-8")
    vocabs = train_vocabs(lowercase=True)
    assert vocabs.add_pretrained_words(open_vectors(path).first_words(10)) == 1 and "zebra" in vocabs.words
    embedder = Embedder(vocabs, word_dim=2, affix_dim=0)
    assert embedder.load_pretrained(open_vectors(path), vocabs) == 2
    assert embedder.words.weight[vocabs.word_index("THE")].tolist() == [1.0, 1.0]  # a training word
    zebra = torch.tensor(vocabs.word_index("Zebra"))  # past the trained table: only the vectors know it
    assert zebra >= len(embedder.words.weight) and embedder.word_vectors(zebra).tolist() == [3.0, 3.0]


def test_the_vectors_own_words_sit_beside_the_trained_table_and_change_nothing_else(vectors):
    """The words only the vectors know are kept as read beside the trained table (their rows would take
    no gradient: no training sentence has them). The model is drawn exactly as one whose table holds
    every word (a model saved before the split loads so: one table), it embeds every id the same, and
    updates with SGD's momentum never move those rows, which are no parameter at all."""
    from dataclasses import replace

    from easyfirst.config import Config
    from easyfirst.model.tagger import EasyFirstTagger

    vocabs = train_vocabs()
    vocabs.add_pretrained_words(open_vectors(vectors).first_words(3))  # the, zebra, dog: zebra is new
    assert vocabs.vector_words_from == 5 == vocabs.words.index("zebra")
    assert Vocabularies.from_json(vocabs.to_json()).vector_words_from == 5
    one_table = replace(vocabs, vector_words_from=None)
    assert "vector_words_from" not in one_table.to_json()  # vocab.json as before the split
    config = Config()
    config.model.embedder.word_dim = 4  # the vectors'
    models = {}
    for name, v in (("split", vocabs), ("one table", one_table)):
        torch.manual_seed(0)
        models[name] = EasyFirstTagger(config.model, config.loss, v)
        models[name].embedder.load_pretrained(open_vectors(vectors), v)
    split, whole = models["split"].embedder, models["one table"].embedder
    assert len(split.words.weight) == 5 and split.vector_words.shape == (1, whole.words.embedding_dim)
    assert torch.equal(torch.cat([split.words.weight, split.vector_words]), whole.words.weight)
    others = {k: p for k, p in models["split"].named_parameters() if k != "embedder.words.weight"}
    assert all(torch.equal(p, models["one table"].get_parameter(k)) for k, p in others.items())
    ids = torch.arange(len(vocabs.words))
    assert torch.equal(split.word_vectors(ids), whole.words(ids))
    assert all(p is not split.vector_words for p in models["split"].parameters())
    optimizer = torch.optim.SGD(split.parameters(), lr=0.5, momentum=0.9)
    for _ in range(2):
        optimizer.zero_grad()
        split.word_vectors(torch.tensor([[2, 5, 3]])).pow(2).sum().backward()
        optimizer.step()
    assert split.word_vectors(torch.tensor(5)).tolist() == pytest.approx(VECTORS["zebra"])
    assert not torch.equal(split.words.weight[2], whole.words.weight[2])  # a training word moved


def test_no_words_are_added_with_a_cap_of_zero(vectors):
    vocabs = train_vocabs()
    assert open_vectors(vectors).first_words(0) == []
    assert vocabs.add_pretrained_words([]) == 0


def test_unreadable_vectors_are_input_errors(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xe9 1 2\n")
    with pytest.raises(InputError, match="bad.txt:1: not valid UTF-8"):
        open_vectors(path)
    with pytest.raises(InputError, match="missing.txt: no such file"):
        open_vectors(tmp_path / "missing.txt")


@pytest.mark.slow
def test_training_with_pretrained_vectors_keeps_them_in_the_model_folder(tmp_path):
    """`train --pretrained`: a word in no training sentence is in vocab.json and model.pt has its
    vector (fine-tuning never touches it: it is never looked up in training), so tagging needs only the
    model folder."""
    from conftest import SAMPLE, run_cli
    from easyfirst import Tagger
    from easyfirst.config import Config
    from easyfirst.data.conllu import read_conllu
    from easyfirst.training.loop import train

    training_words = {w for s in read_conllu(SAMPLE) for w in s.words}
    unseen = "zyzzyva"
    assert unseen not in training_words
    vectors = tmp_path / "vectors.txt"
    vectors.write_text(f"the 1 2 3 4\n{unseen} 0.5 -0.5 0.25 8\naardvark 9 9 9 9\n", encoding="utf-8")
    config = Config()
    config.data.train = config.data.dev = str(SAMPLE)
    config.train.epochs = 1
    config.model.embedder.pretrained = str(vectors)  # the word size is the vectors' 4
    config.model.embedder.pretrained_words = 2
    train(config, tmp_path / "run")
    vectors.unlink()  # the model folder must not need the vectors file any more
    tagger = Tagger.load(tmp_path / "run")
    words = tagger.vocabs.words
    assert unseen in words and "aardvark" not in words  # capped at the first 2 words
    embedder = tagger.model.embedder
    assert embedder.word_vectors(torch.tensor(words.index(unseen))).tolist() == [0.5, -0.5, 0.25, 8.0]
    assert len(embedder.words.weight) == words.index(unseen)  # kept as read, beside the trained table
    assert len(tagger.tag([[unseen, "."]])[0].tags) == 2
    e = tagger.config.model.embedder
    assert e.word_dim == 4 and e.pretrained_covered == 2  # the, zyzzyva
    assert run_cli("export", tmp_path / "run", "-o", tmp_path / "out", "--no-half").returncode == 0
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "and the vectors' first 2); 1 of them known only to the vectors, their rows kept as read |" in card
    exported = Tagger.load(tmp_path / "out").model.embedder
    assert exported.word_vectors(torch.tensor(words.index(unseen))).tolist() == [0.5, -0.5, 0.25, 8.0]


def test_source_words_keep_their_case_and_take_the_vector_of_their_lower_cased_form(vectors):
    """QE's aligned source words (issue #36): the vocabulary keeps the case, so with an uncased set every
    spelling of a word takes its lower-cased form's vector; padding, UNK and unknown words keep theirs."""
    stoi = {"<pad>": 0, "<unk>": 1, "Dog": 2, "dog": 3, "ZEBRA": 4, "cat": 5, "the": 6}
    ids, rows = open_vectors(vectors).lookup_folded(stoi)
    got = {i: row for i, row in zip(ids, rows.tolist(), strict=True)}
    expected = {2: "dog", 3: "dog", 4: "zebra", 6: "the"}
    assert got == {i: torch.tensor(VECTORS[w]).tolist() for i, w in expected.items()}  # as float32


def test_a_feature_table_is_initialised_from_the_vectors(vectors):
    vocabs = train_vocabs()
    vocabs.features["source"] = Vocab(["The", "barks", "unseen"])
    torch.manual_seed(0)
    embedder = Embedder(vocabs, word_dim=3, affix_dim=0, feature_dims={"source": 4})
    untouched = embedder.features["source"].weight[[1, 4]].clone()  # UNK, "unseen"
    assert embedder.load_pretrained(open_vectors(vectors), vocabs, feature="source") == 2
    table = embedder.features["source"].weight
    assert torch.equal(table[2], torch.tensor(VECTORS["the"])) and torch.equal(
        table[3], torch.tensor(VECTORS["barks"])
    )
    assert torch.equal(table[[1, 4]], untouched)
    with pytest.raises(InputError, match="4 dimensions, the embeddings 3"):
        embedder.load_pretrained(open_vectors(vectors), vocabs)  # the word table has 3


def test_train_pos_with_vectors_takes_the_sharper_temperature_and_says_so(vectors, tmp_path):
    """`train --task pos --pretrained FILE` with no temperature given: 0.25 (issue #37), in config.json
    and the log's model line; --attention-temperature given still wins."""
    import json

    from conftest import SAMPLE, run_cli

    common = ("train", "--task", "pos", "--train", SAMPLE, "--dev", SAMPLE, "--epochs", "1")
    done = run_cli(*common, "--pretrained", vectors, "--workers", "1", "-o", tmp_path / "run")
    assert done.returncode == 0, done.stderr.decode()
    assert (
        json.loads((tmp_path / "run" / "config.json").read_text())["model"]["attention_temperature"] == 0.25
    )
    assert "attention csoftmax at temperature 0.25" in (tmp_path / "run" / "train.log").read_text()
    given = run_cli(
        *common,
        "--pretrained",
        vectors,
        "--attention-temperature",
        "0.5",
        "--workers",
        "1",
        "-o",
        tmp_path / "given",
    )
    assert given.returncode == 0, given.stderr.decode()
    assert (
        json.loads((tmp_path / "given" / "config.json").read_text())["model"]["attention_temperature"] == 0.5
    )


def test_train_ner_with_vectors_leaves_the_affixes_out_and_says_so(vectors, tmp_path):
    """`train --task ner --pretrained FILE`: no affix n-grams (issue #36), in config.json, the log's
    model line and vocab.json; --affix-dim given puts them back."""
    import json

    from conftest import NER_SAMPLE, run_cli

    common = ("train", "--task", "ner", "--train", NER_SAMPLE, "--dev", NER_SAMPLE, "--epochs", "1")
    done = run_cli(*common, "--pretrained", vectors, "-o", tmp_path / "run")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads((tmp_path / "run" / "config.json").read_text())["model"]["affix_dim"] == 0
    assert "words (no affixes)" in (tmp_path / "run" / "train.log").read_text()
    assert json.loads((tmp_path / "run" / "vocab.json").read_text())["prefixes"]["symbols"] == []
    given = run_cli(*common, "--pretrained", vectors, "--affix-dim", "50", "-o", tmp_path / "given")
    assert given.returncode == 0, given.stderr.decode()
    assert "words (50-d affixes)" in (tmp_path / "given" / "train.log").read_text()
    assert json.loads((tmp_path / "given" / "vocab.json").read_text())["prefixes"]["symbols"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "optimizer, batch_size",
    [("adagrad", 16), ("nadam", 16), ("adagrad", 1)],  # sparse rows; dense moments; one sentence (compiled)
)
def test_frozen_vectors_stay_as_read_and_the_other_words_learn(tmp_path, optimizer, batch_size):
    """`--freeze-vectors`: after training, the rows of the words the vectors cover are the file's values
    (their gradient is zeroed, on every update path), the other training words' rows have moved; without
    it the covered rows move too. The mask is saved with the model."""
    from conftest import SAMPLE
    from easyfirst import Tagger
    from easyfirst.config import Config
    from easyfirst.training.loop import train

    vectors = tmp_path / "vectors.txt"
    given = {"the": [1.0, 2.0, 3.0, 4.0], "to": [0.5, -0.5, 0.25, 8.0], ".": [-1.0, 0.0, 1.0, 0.5]}
    vectors.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in given.items()), encoding="utf-8")
    rows = {}
    for freeze in (True, False):
        config = Config()
        config.data.train = config.data.dev = str(SAMPLE)
        config.train.epochs, config.train.optimizer, config.train.batch_size = 2, optimizer, batch_size
        config.train.lr = 0.05
        config.model.embedder.pretrained, config.model.embedder.freeze_vectors = str(vectors), freeze
        config.model.embedder.pretrained_words = 0
        torch.manual_seed(0)
        train(config, tmp_path / f"run-{freeze}")
        tagger = Tagger.load(tmp_path / f"run-{freeze}")
        words, weight = tagger.vocabs.words, tagger.model.embedder.words.weight
        rows[freeze] = {w: weight[words.index(w)].tolist() for w in given}
        log = (tmp_path / f"run-{freeze}" / "train.log").read_text(encoding="utf-8")
        assert ("kept as read (--freeze-vectors)" in log) == freeze
        if freeze:
            fixed = tagger.model.embedder.fixed_words
            assert fixed.sum().item() == 3 and not fixed[words.index("reads")]  # the, to, . only
    for word, vector in given.items():
        assert rows[True][word] == vector  # frozen: exactly as read
        assert rows[False][word] != vector  # fine-tuned: moved


def test_frozen_vectors_need_vectors_and_no_weight_decay_and_the_card_says_so():
    from easyfirst.config import Config
    from easyfirst.viz.model_card import model_card

    config = Config.from_dict({"model": {"freeze_vectors": True, "pretrained": "v.txt", "word_dim": 4}})
    card = model_card(config, None, {"words": 10, "tags": 3}, 100, "runs/x", False)
    assert "| pretrained vectors | `v.txt`, 4 dimensions, kept as read (not fine-tuned) |" in card

    with pytest.raises(InputError, match="needs pretrained vectors"):
        Config.from_dict({"model": {"freeze_vectors": True}})
    with pytest.raises(InputError, match="AdamW's weight decay"):
        Config.from_dict(
            {"model": {"freeze_vectors": True, "pretrained": "v.txt"}, "train": {"optimizer": "adamw"}}
        )
