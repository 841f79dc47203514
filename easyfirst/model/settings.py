"""The model's and the output layer's settings: the ``[model]`` and ``[loss]`` tables of a config.

These two dataclasses are all that :class:`easyfirst.model.tagger.EasyFirstTagger` needs besides the
vocabularies; they know nothing of tasks, data files or training. Each field that carries
``option(...)`` metadata is also an option of ``easyfirst train`` (see easyfirst.fields).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from easyfirst.data.vocab import DEFAULT_PRETRAINED_WORDS
from easyfirst.errors import InputError
from easyfirst.fields import (
    Freezable,
    Where,
    at_least,
    checked,
    fraction,
    non_negative,
    option,
    parse_class_weights,
    positive,
    show_weights,
    weights,
)
from easyfirst.ops.kinds import KINDS

MODELS = ("nef-f", "nef-s", "bilstm")
CHAR_ENCODERS = ("cnn", "bilstm")
# naive: a fresh dropout mask at every word; locked (variational, Gal & Ghahramani 2016): one mask per
# sentence and layer, the same at every word (easyfirst.model.dropout)
DROPOUT_KINDS = ("naive", "locked")
# the keys a CRF output layer leaves unused (its loss is the sequence likelihood)
LOSS_KEYS = ("loss", "alpha", "label_smoothing", "temperature", "class_weights")
# --loss names and their α (entmax takes α from alpha)
LOSS_ALPHA = {"softmax": 1.0, "entmax15": 1.5, "sparsemax": 2.0, "entmax": None}


def parse_steps(value: str) -> int | None:
    """``L`` (or ``l``) means one step per word (None); otherwise a non-negative integer."""
    if value.strip().upper() == "L":
        return None
    try:
        steps = int(value)
    except ValueError:
        raise InputError(f"--sketch-steps must be a non-negative integer or L, not {value!r}") from None
    if steps < 0:
        raise InputError("--sketch-steps must be >= 0")
    return steps


def qe_weights(flag: str, what: str) -> dict:
    """The ``option`` of a QE head's class weights (OK/BAD → weight)."""
    return option(
        f"QE: OK=W or BAD=W, the weight of {what} with that gold tag (repeatable).",
        flag=flag,
        metavar="TAG=W",
        parse=lambda values: parse_class_weights(values, flag),
        repeatable=True,
        show=show_weights,
        check=weights(("OK", "BAD")),
    )


def dropout_at_place(help_text: str):
    """A dropout rate for one place of the model (``ModelConfig.dropout_at``): unset, ``dropout``'s."""
    return field(
        default=None,
        metadata=option(
            help_text,
            check=fraction(),
            metavar="P",
            show=lambda value: "--dropout" if value is None else f"{value:g}",
        ),
    )


@dataclass
class ModelConfig(Freezable):
    model: str = field(
        default="nef-f",
        metadata=option(
            "nef-f (full-state, Eq. 7), nef-s (single-state, Eq. 4) or bilstm (no sketch steps, N = 0).",
            choices=lambda: list(MODELS),
        ),
    )
    # the word embedding size; with pretrained vectors, theirs (easyfirst.config.Config.follow_vectors)
    word_dim: int = field(default=64, metadata=checked(at_least(1)))
    affix_dim: int = field(
        default=50,
        metadata=option(
            "Size of the embeddings of prefixes and suffixes of up to 4 characters, summed per word: the "
            "paper's 50 (0: none; ner with --pretrained: 0).",
            check=at_least(0),
            metavar="D",
        ),
    )
    max_affix: int = field(default=4, metadata=checked(at_least(1)))  # n-grams with n <= max_affix
    # training words seen fewer times map to UNK (so UNK gets trained)
    word_min_freq: int = field(default=2, metadata=checked(at_least(0)))
    pretrained: str | None = field(
        default=None,
        metadata=option(
            "Pretrained word vectors: a named set (easyfirst data --vectors lists them) or a word2vec, "
            "GloVe or fastText file (text or word2vec binary, gzipped or not). The word size is theirs.",
            metavar="NAME|PATH",
        ),
    )
    pretrained_words: int = field(  # Lample et al. (2016), Flair: the vectors' words join the vocabulary
        default=DEFAULT_PRETRAINED_WORDS,
        metadata=option(
            "With --pretrained: its first K words (the most frequent) join the vocabulary, so that words "
            "unseen in training get their vector, not UNK's (0: training words only).",
            check=at_least(0),
            metavar="K",
        ),
    )
    freeze_vectors: bool = field(  # Reimers & Gurevych (2017) keep the vectors fixed
        default=False,
        metadata=option(
            "With --pretrained: the words that have a vector keep it as it is; only the others (UNK, "
            "training words the vectors lack) learn theirs. Default: every word's embedding is trained."
        ),
    )
    # written by training: how many of the vocabulary's words (not padding or UNK) the vectors covered
    pretrained_covered: int | None = field(default=None, metadata=checked(at_least(0)))
    hidden_dim: int = field(  # BiLSTM units per direction
        default=50,
        metadata=option("BiLSTM units per direction (each layer).", check=at_least(1), metavar="D"),
    )
    encoder_layers: int = field(  # stacked BiLSTM layers (Reimers & Gurevych 2017: two for NER)
        default=1,
        metadata=option(
            "Stacked BiLSTM layers, each reading the one below (--encoder-dropout between them).",
            check=at_least(1),
            metavar="K",
        ),
    )
    window: int = field(default=2, metadata=checked(at_least(0)))  # w in Eq. 1
    attention_dim: int = field(default=50, metadata=checked(at_least(1)))  # D_z in Eq. 2
    sketch_dim: int = field(default=50, metadata=checked(at_least(1)))  # D_s
    sketch_steps: int | None = field(  # N; None means N = L (one step per word, per sentence)
        default=None,
        metadata=option(
            "Sketch steps N: an integer, or L for one per word.",
            check=at_least(0),
            metavar="N|L",
            parse=parse_steps,
            show=lambda value: "L" if value is None else str(value),
        ),
    )
    # with N fixed, a sentence shorter than N runs all N steps (a fresh unit of attention budget every L
    # steps); false: min(N, L) steps, N read as the paper's "maximum number of sketch steps" (§5.2)
    steps_beyond_length: bool = field(
        default=True,
        metadata=option(
            "With N fixed: a sentence shorter than N runs all N steps (a fresh attention budget every L "
            "steps) or, with --no-steps-beyond-length, only L: N read as the paper's maximum number of steps."
        ),
    )
    attention: str = field(
        default="csoftmax",
        metadata=option(
            "Attention ρ (Eq. 3); hard is vanilla easy-first (Alg. 1).", choices=lambda: list(KINDS)
        ),
    )
    attention_temperature: float = field(  # scores z/T before ρ (learned attentions only)
        default=1.0,
        metadata=option(
            "Divide the attention scores by T before ρ (pos with --pretrained: 0.25).",
            check=positive(),
            metavar="T",
        ),
    )
    v_init: float = field(  # v of Eq. 2 starts as Glorot-uniform × this: the initial scale of the scores
        default=1.0,
        metadata=option(
            "Scale of v's initial values (Eq. 2): how spread the first scores are.",
            check=non_negative(),
            metavar="C",
        ),
    )
    coverage_penalty: float = field(  # λ: scores z − λβ before ρ (§4; learned attentions only)
        default=0.0,
        metadata=option(
            "λ: attend with ρ(z − λβ), penalising covered words.", check=non_negative(), metavar="λ"
        ),
    )
    concat: bool = field(  # p_i from concat(h_i, s_i^N) (Eq. 6); false: from s_i^N alone (Table 4)
        default=True, metadata=option("Predict from concat(h_i, s_i) (Eq. 6) or the sketch alone.")
    )
    dropout: float = field(
        default=0.2,
        metadata=option(
            "Dropout after the embeddings, between BiLSTM layers, after the BiLSTM and before the output "
            "layer; --embedding-dropout, --encoder-dropout and --output-dropout override it per place.",
            check=fraction(),
            metavar="P",
        ),
    )
    dropout_kind: str = field(
        default="naive",
        metadata=option(
            "naive: a new dropout mask at every word; locked (variational): one mask per sentence, the "
            "same units dropped at every word.",
            choices=lambda: list(DROPOUT_KINDS),
        ),
    )
    embedding_dropout: float | None = dropout_at_place(
        "Dropout on the word representations (the BiLSTM's input)."
    )
    encoder_dropout: float | None = dropout_at_place(
        "Dropout between stacked BiLSTM layers (--encoder-layers > 1)."
    )
    output_dropout: float | None = dropout_at_place(
        "Dropout on the BiLSTM's output and the sketches (the decoder's and output layer's input)."
    )
    # NER features (easyfirst.data.features), off by default
    case_dim: int = field(
        default=0, metadata=checked(at_least(0))
    )  # capitalization-pattern embedding (0: none)
    lowercase: bool = False  # look words up lower-cased
    # character-level word features beside the affixes, off by default: each word's character embeddings
    # through a CNN max-pooled over the word (Ma & Hovy 2016) or a BiLSTM (Lample et al. 2016)
    # (easyfirst.model.embedder.CharacterEncoder)
    char_dim: int = field(
        default=0,
        metadata=option(
            "Size of the character embeddings of a character encoder (--char-encoder), whose "
            "--char-filters outputs per word join the word's representation (0: no character features).",
            check=at_least(0),
            metavar="D",
        ),
    )
    char_encoder: str = field(
        default="cnn",
        metadata=option(
            "With --char-dim: cnn, filters max-pooled over the word (Ma & Hovy 2016), or bilstm, the final "
            "states of a character BiLSTM (Lample et al. 2016).",
            choices=lambda: list(CHAR_ENCODERS),
        ),
    )
    char_filters: int = field(
        default=30,
        metadata=option(
            "With --char-dim: the character encoder's output size per word (cnn: its filters; bilstm: "
            "F/2 units per direction, F even).",
            check=at_least(1),
            metavar="F",
        ),
    )
    char_window: int = field(default=3, metadata=checked(at_least(1)))  # characters each CNN filter spans
    # α: a training word seen c times becomes UNK with probability α/(α+c)
    word_dropout: float = field(
        default=0.0,
        metadata=option(
            "α: a training word seen c times is replaced by UNK with probability α / (α + c) (0: never).",
            check=non_negative(),
            metavar="α",
        ),
    )
    crf: bool = field(  # a linear-chain CRF over the output scores (§5.2) instead of per-word outputs
        default=False, metadata=option("A linear-chain CRF output layer (Viterbi decoding).")
    )
    bio_constraints: bool | None = field(  # None: on for BIO tag sets
        default=None,
        metadata=option(
            "CRF: forbid the transitions the tags' scheme does not allow (BIO: I-X only after B-X or "
            "I-X; BIOES: also E-X, S-X and the sentence's ends).",
            show=lambda value: "on for BIO and BIOES tag sets" if value is None else str(value).lower(),
        ),
    )
    # QE features (easyfirst.data.features), off by default: the aligned source words (averaged; a learned
    # NULL vector when none), and the WMT16 baseline's context (the MT words and aligned source words ±1)
    source_dim: int = field(default=0, metadata=checked(at_least(0)))
    source_pretrained: str | None = field(  # issue #36: GloVe for English source words
        default=None,
        metadata=option(
            "QE: pretrained vectors for the aligned source words, named or a file as for --pretrained "
            "(e.g. glove-6b-50d for English sources); the source embedding size is theirs.",
            metavar="NAME|PATH",
        ),
    )
    # written by training: how many of the aligned-source vocabulary's words the source vectors covered
    source_pretrained_covered: int | None = field(default=None, metadata=checked(at_least(0)))
    qe_context_dim: int = field(
        default=0,
        metadata=option(
            "QE: size of the context-word embeddings (MT neighbours, aligned words' source neighbours); "
            "0 leaves them out (the paper's 128-dimensional input).",
            check=at_least(0),
            metavar="D",
        ),
    )
    # QE heads (easyfirst.model.qe_heads): an OK/BAD tag for every gap of the MT sentence (2N+1 tags) and
    # for every source word; unset: on when the training data has gap tags / a .source_tags file
    gaps: bool | None = field(
        default=None,
        metadata=option(
            "QE: also predict a tag for every gap (between, before and after the MT words).",
            show=lambda value: "when the training tags are 2N+1" if value is None else str(value).lower(),
        ),
    )
    source_tags: bool | None = field(
        default=None,
        metadata=option(
            "QE: also predict a tag for every source word.",
            show=lambda value: (
                "when PREFIX.source_tags exists for training" if value is None else str(value).lower()
            ),
        ),
    )

    def dropout_at(self, place: str) -> float:
        """The dropout rate at ``place`` (embedding, encoder, output): its own key, else ``dropout``."""
        rate = getattr(self, f"{place}_dropout")
        return self.dropout if rate is None else rate

    @property
    def decodes(self) -> bool:
        """Whether the model has a sketch decoder (N != 0 and not the BiLSTM baseline)."""
        return self.model != "bilstm" and self.sketch_steps != 0

    def spelling(self) -> list[str]:
        """The parts of a word's representation that read the word as written (its embedding may be
        looked up lower-cased): its prefixes, suffixes, characters and case feature, those the model has."""
        parts = ["prefixes", "suffixes"] * (self.affix_dim > 0) + ["characters"] * (self.char_dim > 0)
        return parts + ["case feature"] * (self.case_dim > 0)

    def validate(self, where: Where) -> None:
        """The rules that tie fields together (each field's own: its ``check``, easyfirst.fields); an
        error points at ``where`` the keys it names were given."""
        learned = KINDS[self.attention].scores == "attention"
        if (self.attention_temperature != 1 or self.coverage_penalty or self.v_init != 1) and not learned:
            raise InputError(
                f"attention_temperature, v_init and coverage_penalty act on learned attention scores; "
                f"{self.attention!r} has none",
                *where(
                    "model.attention_temperature", "model.v_init", "model.coverage_penalty", "model.attention"
                ),
            )
        if self.char_dim and self.char_encoder == "bilstm" and self.char_filters % 2:
            raise InputError(
                f"model.char_filters = {self.char_filters}: a character BiLSTM has char_filters / 2 units per "
                "direction, so it must be even",
                *where("model.char_filters", "model.char_encoder"),
            )
        if self.encoder_dropout is not None and self.encoder_layers == 1:
            raise InputError(
                "encoder_dropout acts between stacked BiLSTM layers: it needs encoder_layers >= 2",
                *where("model.encoder_dropout", "model.encoder_layers"),
            )
        if self.freeze_vectors and not self.pretrained:
            raise InputError(
                "freeze_vectors keeps the pretrained vectors fixed: it needs pretrained vectors (--pretrained)",
                *where("model.freeze_vectors", "model.pretrained"),
            )
        if not self.concat and not self.decodes:
            raise InputError(
                "concat = false predicts from the sketch alone: it needs sketch steps (N > 0)",
                *where("model.concat", "model.sketch_steps", "model.model"),
            )


@dataclass
class LossConfig(Freezable):
    """The per-word training objective (easyfirst.losses); with ``crf`` the CRF's likelihood replaces it."""

    loss: str = field(  # softmax (α = 1), entmax15 (α = 1.5), sparsemax (α = 2), entmax (α = alpha)
        default="softmax",
        metadata=option(
            "Output loss and mapping: softmax (cross-entropy), sparsemax, entmax15, or entmax (with --alpha).",
            choices=lambda: list(LOSS_ALPHA),
        ),
    )
    alpha: float | None = field(  # α > 1 for loss = "entmax"; unset for the others (their α is fixed)
        default=None,
        metadata=option(
            "α > 1 of --loss entmax (1.5 = entmax15, 2 = sparsemax).",
            check=positive(),
            show=lambda value: "the loss's own" if value is None else f"{value:g}",
        ),
    )
    label_smoothing: float = field(  # ε: target (1 − ε)·e_y + ε·uniform (Fenchel–Young label smoothing)
        default=0.0,
        metadata=option(
            "ε: Fenchel–Young label smoothing, target (1 − ε)·gold + ε·uniform.",
            check=fraction(),
            metavar="ε",
        ),
    )
    temperature: float = field(  # T: training loss T · L(z / T); prediction always uses T = 1
        default=1.0,
        metadata=option(
            "T: train on T · loss(scores / T); T > 1 tempers. Tagging uses T = 1.",
            check=positive(),
            metavar="T",
        ),
    )
    class_weights: dict[str, float] = field(  # tag → weight of its words (default 1)
        default_factory=dict,
        metadata=option(
            "TAG=W: weight of words whose gold tag is TAG (repeatable).",
            flag="--class-weight",
            metavar="TAG=W",
            parse=parse_class_weights,
            repeatable=True,
            show=show_weights,
            check=weights(),
        ),
    )
    gap_class_weights: dict[str, float] = field(
        default_factory=dict, metadata=qe_weights("--gap-class-weight", "gaps")
    )
    source_class_weights: dict[str, float] = field(
        default_factory=dict, metadata=qe_weights("--source-class-weight", "source words")
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
