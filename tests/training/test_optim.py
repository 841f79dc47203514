"""easyfirst.training.optim against torch's own: Adagrad with sparse embedding gradients against torch.optim.Adagrad
with dense ones, clip_gradients against clip_grad_norm_; and the training regime's options (the loss
summed per update, the training sentences in file order)."""

from __future__ import annotations

import copy

import pytest
import torch

from easyfirst.config import Config
from easyfirst.data.batching import Encoded, batches_in_order
from easyfirst.training.optim import Adagrad, clip_gradients, make_optimizer


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(30, 4, padding_idx=0)
        self.linear = torch.nn.Linear(4, 3)

    def forward(self, ids):
        return self.linear(self.table(ids)).square().sum()


@pytest.mark.parametrize("clip", [0.3, 100.0], ids=["clipped", "unclipped"])
def test_sparse_adagrad_trains_as_torchs_dense_adagrad(clip):
    torch.manual_seed(0)
    mine, theirs = Tiny().double(), None
    theirs = copy.deepcopy(mine)
    optimizer = make_optimizer("adagrad", 0.1, mine)
    assert isinstance(optimizer, Adagrad) and mine.table.sparse
    reference = torch.optim.Adagrad(theirs.parameters(), lr=0.1)
    for _ in range(25):
        ids = torch.randint(0, 30, (3, 5))  # repeated rows and the padding row included
        for model, opt in ((mine, optimizer), (theirs, reference)):
            opt.zero_grad()
            model(ids).backward()
        assert mine.table.weight.grad.is_sparse and not theirs.table.weight.grad.is_sparse
        norm = clip_gradients(list(mine.parameters()), clip)
        expected = torch.nn.utils.clip_grad_norm_(theirs.parameters(), clip)
        torch.testing.assert_close(norm, expected)
        optimizer.step()
        reference.step()
    for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)
    # the saved state is torch's: a dense-gradient Adagrad takes it
    reference.load_state_dict(optimizer.state_dict())


@pytest.mark.parametrize(("name", "lr", "embedding_lr"), [("adagrad", 0.1, 0.02), ("sgd", 0.002, 0.0004)])
def test_embedding_lr_trains_the_tables_as_a_separate_optimizer_would(name, lr, embedding_lr):
    """embedding_lr: the tables at their own rate, the rest at lr, each as torch's own optimizer with that
    rate alone over those parameters (dense gradients) would move them."""
    torch.manual_seed(0)
    mine = Tiny().double()
    theirs = copy.deepcopy(mine)
    optimizer = make_optimizer(name, lr, mine, embedding_lr=embedding_lr)
    kind = {"adagrad": torch.optim.Adagrad, "sgd": torch.optim.SGD}[name]
    references = [kind([theirs.table.weight], lr=embedding_lr), kind(list(theirs.linear.parameters()), lr=lr)]
    for _ in range(10):
        ids = torch.randint(0, 30, (3, 5))
        optimizer.zero_grad()
        mine(ids).backward()
        optimizer.step()
        for reference in references:
            reference.zero_grad()
        theirs(ids).backward()
        for reference in references:
            reference.step()
    for a, b in zip(mine.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-10)
    assert not torch.equal(mine.table.weight, Tiny().double().table.weight)  # the tables did move


def test_embedding_lr_unset_keeps_one_parameter_group():
    """Checkpoints saved before embedding_lr hold one group; an unset embedding_lr must load them."""
    assert len(make_optimizer("adagrad", 0.1, Tiny()).param_groups) == 1
    groups = make_optimizer("adagrad", 0.1, Tiny(), embedding_lr=0.0).param_groups
    assert [g["lr"] for g in groups] == [0.0, 0.1]


def test_adam_keeps_dense_gradients():
    model = Tiny()
    make_optimizer("adam", 0.01, model)
    assert not model.table.sparse


def test_a_non_finite_gradient_gives_a_non_finite_norm():
    model = Tiny()
    make_optimizer("sgd", 0.1, model)
    model(torch.tensor([[1, 2]])).backward()
    model.linear.weight.grad[0, 0] = float("nan")
    assert not torch.isfinite(clip_gradients(list(model.parameters()), 1.0))


def test_summed_loss_is_the_mean_times_the_counted_words():
    from easyfirst.data.batching import collate, encode
    from easyfirst.data.sentence import Sentence
    from easyfirst.model.tagger import EasyFirstTagger
    from easyfirst.training.loop import build_vocabularies

    sentences = [Sentence(["a", "b", "c"], ["X", "Y", "X"], 1), Sentence(["b", "a"], ["Y", "Y"], 5)]
    config = Config()
    vocabs = build_vocabularies(config, sentences)
    model = EasyFirstTagger(config.model, config.loss, vocabs).eval()
    batch = collate([encode(vocabs, s.words, s.tags) for s in sentences], [0, 1])
    scores, _ = model(batch)
    mean = model.loss(scores, batch.tags, batch.mask)
    total = model.loss(scores, batch.tags, batch.mask, "sum")
    # independent: −log softmax of the gold tag, summed over the five words
    gold = torch.log_softmax(scores, -1).gather(-1, batch.tags.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    torch.testing.assert_close(total, -(gold * batch.mask).sum())
    torch.testing.assert_close(total, mean * 5)


def test_batches_in_order_keep_the_file_order():
    lengths = [3, 1, 2, 3, 1]  # not sorted: bucketing would reorder them
    items = [
        Encoded(
            torch.full((n,), i + 1),
            torch.zeros(n, 1, dtype=torch.long),
            torch.zeros(n, 1, dtype=torch.long),
            None,
        )
        for i, n in enumerate(lengths)
    ]
    assert [b.order for b in batches_in_order(items, 2)] == [[0, 1], [2, 3], [4]]
    assert [b.words[0, 0].item() for b in batches_in_order(items, 1)] == [1, 2, 3, 4, 5]


def test_the_reference_config_is_the_papers_code_regime():
    from pathlib import Path

    config = Config.load(Path(__file__).parents[2] / "configs" / "pos-reference.toml")
    t = config.train
    assert (t.batch_size, t.reduction, t.shuffle, t.optimizer, t.lr, t.clip) == (
        1,
        "sum",
        False,
        "adagrad",
        0.1,
        5.0,
    )
    assert config.model == Config().model  # the paper's model: the built-in values, temperature 1


def test_the_easy_first_config_is_the_reference_regime_with_attention_temperature_one_quarter():
    from pathlib import Path

    configs = Path(__file__).parents[2] / "configs"
    easy_first, reference = (
        Config.load(configs / name) for name in ("pos-easyfirst.toml", "pos-reference.toml")
    )
    assert easy_first.train == reference.train
    assert easy_first.model.decoder.attention_temperature == 0.25
    assert easy_first.replaced("model", attention_temperature=1.0).model == reference.model


def test_an_unknown_reduction_is_refused():
    from easyfirst.errors import InputError

    with pytest.raises(InputError, match="reduction must be one of mean, sum"):
        Config.from_dict({"train": {"reduction": "average"}})


@pytest.mark.parametrize("value", [-0.01, float("nan"), float("inf")])
def test_a_negative_or_non_finite_embedding_lr_is_refused(value):
    from easyfirst.errors import InputError

    with pytest.raises(InputError, match="embedding_lr must be a finite number >= 0"):
        Config.from_dict({"train": {"embedding_lr": value}})
    assert Config.from_dict({"train": {"embedding_lr": 0.01}}).train.embedding_lr == 0.01
