"""The model's and the output layer's settings: the ``[model]`` and ``[loss]`` tables of a config.

:class:`ModelConfig` and :class:`LossConfig` are all that :class:`easyfirst.model.tagger.EasyFirstTagger`
needs besides the vocabularies; they know nothing of tasks, data files or training. ``ModelConfig`` is
grouped by the model's parts (:class:`EmbedderSettings`, :class:`EncoderSettings`,
:class:`DecoderSettings`, :class:`OutputSettings`), each part's module built from its own; a config file
still writes their keys flat under ``[model]`` (easyfirst.fields.flat_fields finds a key's part from
these fields). The flags of ``easyfirst train`` that set them are in easyfirst.cli.flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from easyfirst.data.vocab import DEFAULT_PRETRAINED_WORDS
from easyfirst.errors import InputError
from easyfirst.fields import (
    Freezable,
    Rule,
    Where,
    at_least,
    checked,
    fraction,
    non_negative,
    one_of,
    positive,
    weights,
)
from easyfirst.ops.kinds import KINDS

POOLINGS = ("first", "last", "mean", "first_last")


# the hidden states a transformer's vectors average by default: the last four (all of a model with
# fewer). A linear probe of MiniLM's states (docs/contextual.md) found EWT's UPOS and CoNLL-2003's
# entities within 0.1-0.8 points of the best state in their mean, 8.7 and 13 points below it in the
# last state alone; UDPipe 2 averages BERT's last four too
LAST_FOUR = "-4,-3,-2,-1"


def parse_layers(text: str, depth: int | None = None) -> tuple[int, ...]:
    """``"-4,-3,-2,-1"`` → ``(-4, -3, -2, -1)``; ValueError for anything else. Given the transformer's
    ``depth`` (its hidden states), :data:`LAST_FOUR` of a model with fewer than four is all of them."""
    layers = tuple(int(part) for part in text.split(","))
    if not layers or len(set(layers)) != len(layers):
        raise ValueError(text)
    if depth is not None and text == LAST_FOUR:
        layers = tuple(k for k in layers if k >= -depth)
    return layers


def layers_valid(text: str) -> bool:
    try:
        parse_layers(text)
    except ValueError:
        return False
    return True


# the keys that say how a transformer is used (EmbedderSettings): each needs model.transformer
TRANSFORMER_KEYS = (
    "transformer_pooling",
    "transformer_layers",
    "transformer_mix",
    "transformer_finetune",
    "transformer_window",
    "transformer_stride",
    "transformer_source",
)
MODELS = ("nef-f", "nef-s", "bilstm")
CHAR_ENCODERS = ("cnn", "bilstm")
# naive: a fresh dropout mask at every word; locked (variational, Gal & Ghahramani 2016): one mask per
# sentence and layer, the same at every word (easyfirst.model.dropout)
DROPOUT_KINDS = ("naive", "locked")
# the keys a CRF output layer leaves unused (its loss is the sequence likelihood)
LOSS_KEYS = ("loss", "alpha", "label_smoothing", "temperature", "class_weights")
# --loss names and their α (entmax takes α from alpha)
LOSS_ALPHA = {"softmax": 1.0, "entmax15": 1.5, "sparsemax": 2.0, "entmax": None}


@dataclass
class EmbedderSettings(Freezable):
    """The word representation's settings (easyfirst.model.embedder; §5.1): the word, affix and feature
    embeddings, pretrained vectors, and the dropout on their concatenation."""

    # the word embedding size; with pretrained vectors, theirs (easyfirst.config.Config.follow_vectors)
    word_dim: int = field(default=64, metadata=checked(at_least(1)))
    affix_dim: int = field(default=50, metadata=checked(at_least(0)))
    max_affix: int = field(default=4, metadata=checked(at_least(1)))  # n-grams with n <= max_affix
    # training words seen fewer times map to UNK (so UNK gets trained)
    word_min_freq: int = field(default=2, metadata=checked(at_least(0)))
    pretrained: str | None = None
    # Lample et al. (2016), Flair: the vectors' words join the vocabulary
    pretrained_words: int = field(default=DEFAULT_PRETRAINED_WORDS, metadata=checked(at_least(0)))
    freeze_vectors: bool = False  # Reimers & Gurevych (2017) keep the vectors fixed
    # written by training: how many of the vocabulary's words (not padding or UNK) the vectors covered
    pretrained_covered: int | None = field(default=None, metadata=checked(at_least(0)))
    # NER features (easyfirst.data.features), off by default
    # capitalization-pattern embedding (0: none)
    case_dim: int = field(default=0, metadata=checked(at_least(0)))
    lowercase: bool = False  # look words up lower-cased
    # character-level word features beside the affixes, off by default: each word's character embeddings
    # through a CNN max-pooled over the word (Ma & Hovy 2016) or a BiLSTM (Lample et al. 2016)
    # (easyfirst.model.embedder.CharacterEncoder)
    char_dim: int = field(default=0, metadata=checked(at_least(0)))
    char_encoder: str = field(default="cnn", metadata=checked(one_of(lambda: list(CHAR_ENCODERS))))
    char_filters: int = field(default=30, metadata=checked(at_least(1)))
    char_window: int = field(default=3, metadata=checked(at_least(1)))  # characters each CNN filter spans
    # α: a training word seen c times becomes UNK with probability α/(α+c)
    word_dropout: float = field(default=0.0, metadata=checked(non_negative()))
    # QE features (easyfirst.data.features), off by default: the aligned source words (averaged; a learned
    # NULL vector when none), and the WMT16 baseline's context (the MT words and aligned source words ±1)
    source_dim: int = field(default=0, metadata=checked(at_least(0)))
    source_pretrained: str | None = None  # issue #36: GloVe for English source words
    # written by training: how many of the aligned-source vocabulary's words the source vectors covered
    source_pretrained_covered: int | None = field(default=None, metadata=checked(at_least(0)))
    qe_context_dim: int = field(default=0, metadata=checked(at_least(0)))
    # a transformer's word vectors beside the others (easyfirst.model.transformer): a registry name, a
    # folder or a hub id; its sub-words pooled per word, the hidden layers averaged (or mixed), frozen or
    # fine-tuned; long sentences in windows of transformer_window pieces (0: the model's length), each
    # transformer_stride pieces after the one before (0: half a window)
    transformer: str | None = None
    transformer_pooling: str = field(default="mean", metadata=checked(one_of(lambda: list(POOLINGS))))
    transformer_layers: str = field(
        default=LAST_FOUR,
        metadata=checked(
            Rule(layers_valid, "distinct layer numbers separated by commas (-1: the last)", "x")
        ),
    )
    transformer_mix: bool = False  # a learned scalar mix of the layers, not their average
    transformer_finetune: bool = False
    transformer_window: int = field(default=0, metadata=checked(at_least(0)))
    transformer_stride: int = field(default=0, metadata=checked(at_least(0)))
    # QE: the source sentence through the same transformer, each MT word given its aligned source words'
    # vectors averaged (zeros when it has none)
    transformer_source: bool = False
    # written by training: the SHA-256 of the transformer's weights (easyfirst.data.transformer_models)
    transformer_sha256: str | None = None
    # the dropout on the embeddings; unset: the model's ``dropout`` (ModelConfig.dropout_at)
    embedding_dropout: float | None = field(default=None, metadata=checked(fraction()))

    def spelling(self) -> list[str]:
        """The parts of a word's representation that read the word as written (its embedding may be
        looked up lower-cased): its prefixes, suffixes, characters and case feature, those the model has."""
        parts = ["prefixes", "suffixes"] * (self.affix_dim > 0) + ["characters"] * (self.char_dim > 0)
        return parts + ["case feature"] * (self.case_dim > 0)

    def validate(self, where: Where) -> None:
        if self.char_dim and self.char_encoder == "bilstm" and self.char_filters % 2:
            raise InputError(
                f"model.char_filters = {self.char_filters}: a character BiLSTM has char_filters / 2 units per "
                "direction, so it must be even",
                *where("model.char_filters", "model.char_encoder"),
            )
        tuned = [key for key in TRANSFORMER_KEYS if getattr(self, key) != getattr(EmbedderSettings, key)]
        if tuned and not self.transformer:
            raise InputError(
                f"model.{tuned[0]} sets how the transformer is used: it needs a transformer (--transformer)",
                *where(*(f"model.{key}" for key in tuned)),
            )
        if (
            self.transformer_stride
            and self.transformer_window
            and self.transformer_stride > self.transformer_window
        ):
            raise InputError(
                "model.transformer_stride must be at most transformer_window: pieces between two windows "
                "would have no vectors",
                *where("model.transformer_stride", "model.transformer_window"),
            )
        if self.freeze_vectors and not self.pretrained:
            raise InputError(
                "freeze_vectors keeps the pretrained vectors fixed: it needs pretrained vectors (--pretrained)",
                *where("model.freeze_vectors", "model.pretrained"),
            )


@dataclass
class EncoderSettings(Freezable):
    """The BiLSTM encoder's settings (easyfirst.model.encoder)."""

    hidden_dim: int = field(default=50, metadata=checked(at_least(1)))  # BiLSTM units per direction
    # stacked BiLSTM layers (Reimers & Gurevych 2017: two for NER)
    encoder_layers: int = field(default=1, metadata=checked(at_least(1)))
    # the dropout between stacked layers; unset: the model's ``dropout`` (ModelConfig.dropout_at)
    encoder_dropout: float | None = field(default=None, metadata=checked(fraction()))

    def validate(self, where: Where) -> None:
        if self.encoder_dropout is not None and self.encoder_layers == 1:
            raise InputError(
                "encoder_dropout acts between stacked BiLSTM layers: it needs encoder_layers >= 2",
                *where("model.encoder_dropout", "model.encoder_layers"),
            )


@dataclass
class DecoderSettings(Freezable):
    """The sketch decoder's settings (easyfirst.model.sketch; Alg. 2, Eqs. 1–4 and 7)."""

    window: int = field(default=2, metadata=checked(at_least(0)))  # w in Eq. 1
    attention_dim: int = field(default=50, metadata=checked(at_least(1)))  # D_z in Eq. 2
    sketch_dim: int = field(default=50, metadata=checked(at_least(1)))  # D_s
    # N; None means N = L (one step per word, per sentence)
    sketch_steps: int | None = field(default=None, metadata=checked(at_least(0)))
    # with N fixed, a sentence shorter than N runs all N steps (a fresh unit of attention budget every L
    # steps); false: min(N, L) steps, N read as the paper's "maximum number of sketch steps" (§5.2)
    steps_beyond_length: bool = True
    attention: str = field(default="csoftmax", metadata=checked(one_of(lambda: list(KINDS))))
    # scores z/T before ρ (learned attentions only)
    attention_temperature: float = field(default=1.0, metadata=checked(positive()))
    # v of Eq. 2 starts as Glorot-uniform × this: the initial scale of the scores
    v_init: float = field(default=1.0, metadata=checked(non_negative()))
    # λ: scores z − λβ before ρ (§4; learned attentions only)
    coverage_penalty: float = field(default=0.0, metadata=checked(non_negative()))

    @property
    def learned(self) -> bool:
        """Whether the attention scores words by Eq. 2 (what temperature, v_init and λ act on)."""
        return KINDS[self.attention].scores == "attention"

    def validate(self, where: Where) -> None:
        if (
            self.attention_temperature != 1 or self.coverage_penalty or self.v_init != 1
        ) and not self.learned:
            raise InputError(
                f"attention_temperature, v_init and coverage_penalty act on learned attention scores; "
                f"{self.attention!r} has none",
                *where(
                    "model.attention_temperature", "model.v_init", "model.coverage_penalty", "model.attention"
                ),
            )


@dataclass
class OutputSettings(Freezable):
    """The output layer's settings (Eq. 6; easyfirst.model.crf, easyfirst.model.heads)."""

    concat: bool = True  # p_i from concat(h_i, s_i^N) (Eq. 6); false: from s_i^N alone (Table 4)
    crf: bool = False  # a linear-chain CRF over the output scores (§5.2) instead of per-word outputs
    bio_constraints: bool | None = None  # None: on for BIO tag sets
    # QE heads (the qe task's extra outputs: easyfirst.tasks.qe, easyfirst.model.heads): an OK/BAD tag for every gap of the MT sentence (2N+1 tags) and
    # for every source word; unset: on when the training data has gap tags / a .source_tags file
    gaps: bool | None = None
    source_tags: bool | None = None
    # the dropout on the output layer's inputs; unset: the model's ``dropout`` (ModelConfig.dropout_at)
    output_dropout: float | None = field(default=None, metadata=checked(fraction()))


@dataclass
class ModelConfig(Freezable):
    """The ``[model]`` table: the model's name, the dropout its parts share, and the settings of each part
    of the model (embedder → encoder → decoder → output layer), each part built from its own. A config
    file writes the parts' keys flat (``hidden_dim = 100`` under ``[model]``, ``--set
    model.hidden_dim=100``): each is a field of one part (easyfirst.fields.flat_fields), read flat with
    ``get`` and written flat by ``flat``."""

    model: str = field(default="nef-f", metadata=checked(one_of(lambda: list(MODELS))))
    dropout: float = field(default=0.2, metadata=checked(fraction()))
    dropout_kind: str = field(default="naive", metadata=checked(one_of(lambda: list(DROPOUT_KINDS))))
    embedder: EmbedderSettings = field(default_factory=EmbedderSettings)
    encoder: EncoderSettings = field(default_factory=EncoderSettings)
    decoder: DecoderSettings = field(default_factory=DecoderSettings)
    output: OutputSettings = field(default_factory=OutputSettings)

    def dropout_at(self, place: str) -> float:
        """The dropout rate at ``place`` (embedding, encoder, output): its own key, else ``dropout``."""
        rate = self.get(f"{place}_dropout")
        return self.dropout if rate is None else rate

    @property
    def decodes(self) -> bool:
        """Whether the model has a sketch decoder (N != 0 and not the BiLSTM baseline)."""
        return self.model != "bilstm" and self.decoder.sketch_steps != 0

    def validate(self, where: Where) -> None:
        """The rules that tie fields together (each field's own: its ``check``, easyfirst.fields); an
        error points at ``where`` the keys it names were given."""
        self.decoder.validate(where)
        self.embedder.validate(where)
        self.encoder.validate(where)
        if not self.output.concat and not self.decodes:
            raise InputError(
                "concat = false predicts from the sketch alone: it needs sketch steps (N > 0)",
                *where("model.concat", "model.sketch_steps", "model.model"),
            )


@dataclass
class LossConfig(Freezable):
    """The per-word training objective (easyfirst.losses); with ``crf`` the CRF's likelihood replaces it."""

    # softmax (α = 1), entmax15 (α = 1.5), sparsemax (α = 2), entmax (α = alpha)
    loss: str = field(default="softmax", metadata=checked(one_of(lambda: list(LOSS_ALPHA))))
    # α > 1 for loss = "entmax"; unset for the others (their α is fixed)
    alpha: float | None = field(default=None, metadata=checked(positive()))
    # ε: target (1 − ε)·e_y + ε·uniform (Fenchel–Young label smoothing)
    label_smoothing: float = field(default=0.0, metadata=checked(fraction()))
    # T: training loss T · L(z / T); prediction always uses T = 1
    temperature: float = field(default=1.0, metadata=checked(positive()))
    # tag → weight of its words (default 1)
    class_weights: dict[str, float] = field(default_factory=dict, metadata=checked(weights()))
    gap_class_weights: dict[str, float] = field(
        default_factory=dict, metadata=checked(weights(("OK", "BAD")))
    )
    source_class_weights: dict[str, float] = field(
        default_factory=dict, metadata=checked(weights(("OK", "BAD")))
    )

    @property
    def entmax_alpha(self) -> float:
        """The α of the output mapping and loss: 1 softmax, 1.5 1.5-entmax, 2 sparsemax, other α-entmax."""
        fixed = LOSS_ALPHA.get(self.loss)
        return fixed if fixed is not None else float(self.alpha)

    def validate(self, crf: bool, where: Where) -> None:
        """The rules that tie fields together (each field's own: its ``check``, easyfirst.fields); an
        error points at ``where`` the keys it names were given."""
        fixed = LOSS_ALPHA[self.loss]
        if fixed is None and (self.alpha is None or not self.alpha > 1):
            raise InputError(
                "loss entmax needs alpha > 1 (1.5: entmax15, 2: sparsemax)", *where("loss.alpha", "loss.loss")
            )
        if fixed is not None and self.alpha is not None and self.alpha != fixed:
            raise InputError(
                f"loss {self.loss} has alpha = {fixed:g}; for another alpha use loss entmax",
                *where("loss.alpha", "loss.loss"),
            )
        if crf and (self != LossConfig() and self != LossConfig(alpha=1.0)):
            raise InputError(
                "with crf the training loss is the CRF's sequence likelihood: loss, alpha, label_smoothing, "
                "temperature and class_weights apply to per-word outputs only",
                *where(*(f"loss.{key}" for key in LOSS_KEYS), "model.crf"),
            )
