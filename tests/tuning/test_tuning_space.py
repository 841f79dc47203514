"""The search space of `easyfirst tune` (easyfirst/tuning/space.py): a TOML file read into searched and
fixed keys, each bound checked as `easyfirst train` checks it, errors as ``path:line: what``; a trial's
values drawn through the suggest_* calls any trial object has."""

from __future__ import annotations

import pytest

from easyfirst.config import Config
from easyfirst.errors import InputError
from easyfirst.tuning.space import Parameter, read_space

SPACE = """\
[model]
hidden_dim = { low = 8, high = 24, step = 8 }
dropout = { low = 0.0, high = 0.5 }

[train]
lr = { low = 0.01, high = 0.1, log = true }
optimizer = { choices = ["adagrad", "adam"] }
epochs = 4
"""


def read(text: str):
    return read_space(text, "space.toml", Config.for_task("pos"))


class Trial:
    """A trial that answers every suggestion with the range's low end or the first choice, and notes
    the calls."""

    def __init__(self):
        self.calls = []

    def suggest_int(self, name, low, high, step, log):
        self.calls.append(("int", name, low, high, step, log))
        return low

    def suggest_float(self, name, low, high, step, log):
        self.calls.append(("float", name, low, high, step, log))
        return low

    def suggest_categorical(self, name, choices):
        self.calls.append(("categorical", name, choices))
        return choices[0]


def test_a_space_has_its_ranges_choices_and_fixed_keys_with_their_lines():
    space = read(SPACE)
    assert [p.name for p in space.parameters] == [
        "model.hidden_dim",
        "model.dropout",
        "train.lr",
        "train.optimizer",
    ]
    assert [p.line for p in space.parameters] == [2, 3, 6, 7]
    hidden = space.parameters[0]
    assert (hidden.low, hidden.high, hidden.step, hidden.integer) == (8, 24, 8, True)
    assert space.parameters[1].integer is False  # dropout is a float key
    assert space.fixed == {"train.epochs": (4, 8)}
    assert [p.describe() for p in space.parameters] == [
        "model.hidden_dim 8–24 (step 8)",
        "model.dropout 0–0.5",
        "train.lr 0.01–0.1 (log)",
        "train.optimizer: adagrad, adam",
    ]


def test_a_trial_draws_each_key_as_its_kind_and_apply_sets_them():
    space = read(SPACE)
    trial = Trial()
    values = space.suggest(trial)
    assert trial.calls == [
        ("int", "model.hidden_dim", 8, 24, 8, False),
        ("float", "model.dropout", 0.0, 0.5, None, False),
        ("float", "train.lr", 0.01, 0.1, None, True),
        ("categorical", "train.optimizer", ["adagrad", "adam"]),
    ]
    cfg = Config.for_task("pos")
    space.apply(cfg, values, "trial 0")
    assert (cfg.model.encoder.hidden_dim, cfg.train.lr, cfg.train.optimizer, cfg.train.epochs) == (
        8,
        0.01,
        "adagrad",
        4,
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("[modle]\nx = 1\n", "space.toml:1: unknown section [modle] (did you mean model?)"),
        (
            "[model]\ndropout = { low = 0.5, high = 0.1 }\n",
            "space.toml:2: model.dropout: low must be below high",
        ),
        (
            "[train]\nlr = { low = 0.0, high = 0.1, log = true }\n",
            "space.toml:2: train.lr: a log range must start above 0",
        ),
        (
            "[model]\nhidden_dim = { low = 8, high = 24, step = 2.5 }\n",
            "space.toml:2: model.hidden_dim is an integer",
        ),
        (
            "[data]\ntest = { choices = ['a', 'b'] }\n",
            "space.toml:2: data.test cannot be set in a search space",
        ),
        ("[model]\ndropout = { low = 0.1, hi = 0.5 }\n", "space.toml:2: model.dropout: unknown key 'hi'"),
        ("[model]\nattention = { choices = ['csoftmax', 'magic'] }\n", "space.toml:2:"),
        ("[model]\ndropout = 0.1\n", "space.toml: the search space has no key to search"),
        ("[model\n", "space.toml: not valid TOML"),
    ],
)
def test_a_bad_space_is_refused_with_its_line(text, message):
    with pytest.raises(InputError) as error:
        read(text)
    assert str(error.value).startswith(message), str(error.value)


def test_a_parameter_names_its_section_and_key():
    p = Parameter("train.lr", 3, 0.1, 1.0)
    assert (p.section, p.key) == ("train", "lr")
