"""What Tagger.tag does besides the model's arithmetic (issue #46): ids looked up once per distinct word,
a batch's ids padded into one buffer (easyfirst.data.buckets.pack), nothing made for what was not asked.
The tags must be those of the sentence-by-sentence path (encode, collate) that models with features take."""

from __future__ import annotations

import torch

from conftest import SAMPLE
from easyfirst import Tagger
from easyfirst.data.batching import collate, encode, unpack
from easyfirst.data.buckets import pack
from easyfirst.data.conllu import read_conllu
from easyfirst.data.features import build_feature_vocabs, feature_rows, of_words_alone
from easyfirst.data.sentence import Sentence
from easyfirst.data.vocab import Vocabularies
from easyfirst.tagging.pool import NOTHING_ASKED, make_jobs, tag_batch


def test_tags_are_those_of_each_sentence_encoded_and_collated():
    tagger = Tagger.load()
    tagger.processes = 1
    words = [s.words for s in read_conllu(SAMPLE)] + [["Zyzzyva", "unseen-wordzzz", "ΑΒΓ", "a"]]
    keep, jobs = make_jobs(words, None, None, 5, 40)  # several batches, of different lengths
    expected: list[list[str]] = [[] for _ in words]
    with torch.inference_mode():
        for indices, batch_words, _, _ in jobs:
            batch = collate([encode(tagger.vocabs, w) for w in batch_words], indices)
            out = tag_batch(tagger.model, batch, torch.device("cpu"), NOTHING_ASKED)
            for row, index in enumerate(out["order"]):
                ids = out["best"][row, : out["lengths"][row]].tolist()
                expected[keep[index]] = [tagger.tags[i] for i in ids]
    assert len(jobs) > 3
    for _ in range(2):  # the words looked up, then remembered
        assert [t.tags for t in tagger.tag(words, batch_size=5, max_tokens=40)] == expected


def vocabularies() -> Vocabularies:
    sentences = [(["The", "dog", "barks"], ["DET", "NOUN", "VERB"])] * 2
    return Vocabularies.build(sentences, word_min_freq=1, max_affix=3)


def test_index_gives_each_word_its_id_and_its_affixes_padded_with_zeros():
    vocabs = vocabularies()
    word, pre, suf = vocabs.words.stoi, vocabs.prefixes.stoi, vocabs.suffixes.stoi
    for _ in range(2):  # looked up, then remembered
        assert vocabs.index(["dog", "a", "dog"]) == (
            [word["dog"], 1, word["dog"]],
            [pre["d"], pre["do"], pre["dog"], 1, 0, 0, pre["d"], pre["do"], pre["dog"]],
            [suf["g"], suf["og"], suf["dog"], 1, 0, 0, suf["g"], suf["og"], suf["dog"]],
        )


def test_a_remembered_word_is_looked_up_again_in_vocabularies_that_changed():
    vocabs = vocabularies()
    assert vocabs.index(["cat"])[0] == [1]  # unknown
    assert vocabs.add_pretrained_words(["cat"]) == 1
    assert vocabs.index(["cat"])[0] == [vocabs.words.stoi["cat"]]
    assert vocabs.index(["The"])[0] == [vocabs.words.stoi["The"]]
    vocabs.lowercase = True
    assert vocabs.index(["The"])[0] == [1]  # "the" is not in the vocabulary, "The" is


def test_an_empty_sentence_gets_empty_attention_and_probabilities_only_when_asked():
    tagger = Tagger.load()
    asked = tagger.tag([["Hi", "!"], []], attention=True, probabilities=True)
    assert asked[1].tags == [] and tuple(asked[1].attention.shape) == (0, 0)
    assert tuple(asked[1].probabilities.shape) == (0, len(tagger.tags))
    plain = tagger.tag([["Hi", "!"], []])
    assert [t.tags for t in plain] == [t.tags for t in asked]
    assert plain[1].attention is None and plain[1].probabilities is None


def test_a_small_group_gets_the_tags_of_one_sentence_at_a_time_whatever_its_batches():
    """A server's group (easyfirst.serve.batching): one batch of mixed lengths, whose steps run over the
    sentences still running (easyfirst.backends.compiled), length-sorted sub-batches, or one sentence at
    a time: the same tags."""
    from easyfirst.serve.batching import GROUP_TOKENS

    tagger = Tagger.load()
    sentences = [s.words for s in read_conllu(SAMPLE)]
    sentences = sorted(sentences, key=len)[::3][:13] + [sentences[0][:1]]  # short to long, and one word
    alone = [tagger.tag([words])[0].tags for words in sentences]
    for max_tokens in (None, GROUP_TOKENS, 256, 64):
        tagged = tagger.tag(sentences, batch_size=len(sentences), max_tokens=max_tokens)
        assert [t.tags for t in tagged] == alone
    assert len({len(words) for words in sentences}) > 5


def test_features_of_the_word_alone_are_packed_as_collate_pads_them():
    """A model with the case pattern and characters (NER's features) takes the packed path too: each
    distinct word's feature ids are looked up once (remembered in the feature's vocabulary) and padded
    into one buffer per feature; the batch is the one encode and collate make, field for field. A
    feature that reads more than the word (quality estimation's aligned source) keeps the other path."""
    vocabs = vocabularies()
    sentences = [["The", "dog", "barks"], ["DOG", "x", "Dog2", "éé"], ["a"]]
    vocabs.features = build_feature_vocabs(["case", "chars"], [Sentence(w, [], 1) for w in sentences[:1] * 2])
    chars = vocabs.features["chars"].stoi
    assert of_words_alone(vocabs.features) and not of_words_alone({"source": vocabs.words})
    for _ in range(2):  # looked up, then remembered
        rows = [feature_rows(vocabs.features, w) for w in sentences]
        assert rows[0]["chars"][1] == (chars["d"], chars["o"], chars["g"])
        assert rows[1]["chars"][3] == (1, 1)  # unknown characters
        assert rows[1]["case"] == [
            (vocabs.features["case"].stoi[c],) for c in ("upper", "lower", "title", "lower")
        ]
        packed = unpack(pack([vocabs.index(w) for w in sentences], vocabs.max_affix, rows), [0, 1, 2])
        collated = collate([encode(vocabs, w) for w in sentences], [0, 1, 2])
        for name in ("words", "prefixes", "suffixes", "mask"):
            assert torch.equal(getattr(packed, name), getattr(collated, name)), name
        assert packed.features.keys() == collated.features.keys() == {"case", "chars"}
        for name, ids in collated.features.items():
            assert ids.shape == (3, 4, 5 if name == "chars" else 1)  # "barks": five characters
            assert torch.equal(packed.features[name], ids), name
    assert "Dog2" in vocabs.features["chars"].memo
