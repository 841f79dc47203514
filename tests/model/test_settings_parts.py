"""``ModelConfig`` grouped by the model's parts (issue #45): each part of the model is built from its own
settings, while a config file, ``--set`` and ``config.json`` keep the ``[model]`` keys flat, and which
part holds a key comes from the parts' fields alone."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from easyfirst.config import Config
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.fields import Freezable, flat_fields
from easyfirst.model.settings import (
    DecoderSettings,
    EmbedderSettings,
    EncoderSettings,
    ModelConfig,
    OutputSettings,
)
from easyfirst.model.tagger import EasyFirstTagger

PARTS = {
    "embedder": EmbedderSettings,
    "encoder": EncoderSettings,
    "decoder": DecoderSettings,
    "output": OutputSettings,
}


def test_the_model_table_is_flat_and_each_key_lives_in_the_part_that_declares_it():
    config = Config.for_task("ner")
    table = config.to_dict()["model"]
    own = ["model", "dropout", "dropout_kind"]
    declared = own + [f.name for part in PARTS.values() for f in fields(part)]
    assert list(table) == declared and len(set(declared)) == len(declared)
    assert table["hidden_dim"] == config.model.encoder.hidden_dim and table["crf"] is True  # NER's CRF
    for name, part in PARTS.items():
        for f in fields(part):
            assert config.model.holder(f.name) is getattr(config.model, name)
            assert flat_fields(ModelConfig)[f.name][0] == name
    assert Config.from_dict(config.to_dict()).to_dict() == config.to_dict()  # written flat, read back


def test_a_key_set_flat_reaches_its_part_and_a_bad_one_names_the_flat_key(tmp_path):
    config = Config.for_task("pos")
    config.set_dotted("model.hidden_dim=100")
    config.set_dotted("model.attention=sparsemax")
    assert (config.model.encoder.hidden_dim, config.model.decoder.attention) == (100, "sparsemax")
    assert config.model.get("hidden_dim") == 100
    path = tmp_path / "c.toml"
    path.write_text("[model]\nwindow = 1\n\nhidden_dim = 0\n")
    with pytest.raises(InputError, match=r"c\.toml:4: model\.hidden_dim must be an integer >= 1, not 0"):
        Config.load(path)
    with pytest.raises(InputError, match="unknown key 'encoder' in \\[model\\]"):
        config.set_dotted("model.encoder=3")  # a part is no key


def test_a_parts_key_written_on_the_whole_is_refused_not_kept_as_a_new_attribute():
    config = Config.for_task("pos")
    with pytest.raises(AttributeError, match=r"ModelConfig\.hidden_dim: it is \.encoder\.hidden_dim"):
        config.model.hidden_dim = 7
    assert config.model.encoder.hidden_dim == 50
    # read flat, as code did before the parts: the part's value, with a warning saying where it lives
    with pytest.warns(
        DeprecationWarning, match=r"ModelConfig\.hidden_dim is read from its part .* \.encoder\.hidden_dim"
    ):
        assert config.model.hidden_dim == 50
    with pytest.raises(AttributeError, match="no attribute 'hidden_dims'"):
        config.model.hidden_dims  # noqa: B018 (a name no part has)
    resolved = config.resolved()
    with pytest.raises(AttributeError, match="read-only"):
        resolved.model.encoder.hidden_dim = 7  # the parts freeze with the config
    changed = resolved.replaced("model", hidden_dim=7, attention_temperature=0.5)
    assert (changed.model.encoder.hidden_dim, changed.model.decoder.attention_temperature) == (7, 0.5)


@dataclass
class Left(Freezable):
    size: int = 1


@dataclass
class Right(Freezable):
    size: int = 2


@dataclass
class Whole(Freezable):
    left: Left
    right: Right


def test_two_parts_with_a_key_of_the_same_name_are_refused():
    with pytest.raises(TypeError, match="'size' is in two parts"):
        flat_fields(Whole)


def test_each_module_is_built_from_its_part_and_the_dropout_shared_where_a_place_has_none():
    vocabs = Vocabularies.build([(["a", "b", "c"], ["X", "Y", "X"])], word_min_freq=1)
    m = ModelConfig(
        dropout=0.3,
        embedder=EmbedderSettings(word_dim=5, affix_dim=0),
        encoder=EncoderSettings(hidden_dim=7, encoder_layers=2, encoder_dropout=0.1),
        decoder=DecoderSettings(sketch_dim=4, attention_dim=3, window=1),
        output=OutputSettings(concat=False),
    )
    model = EasyFirstTagger(m, Config().loss, vocabs)
    assert model.embedder.output_dim == 5 and model.encoder.lstm.hidden_size == 7
    assert len(model.encoder.upper) == 1 and model.encoder.between.p == 0.1
    assert model.embedding_dropout.p == model.dropout.p == 0.3  # no rate of their own
    assert model.decoder.sketch_dim == 4 and model.decoder.v.in_features == 3
    assert model.output.in_features == 4  # the sketch alone (concat = false)
