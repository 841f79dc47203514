"""The flags of ``easyfirst train`` (and ``tune``) that set a config key: :data:`FLAGS`, one row per
flag, its config key next to it, and its help.

The config (easyfirst.config, easyfirst.model.settings) holds the keys, their defaults and their rules;
the command line's names for them, their help and how a value is typed are here. A key without a flag
is set with ``--set section.key=value`` or in a TOML file. easyfirst.cli.options turns each row into a
Typer option whose value is None unless given, with the default of each task in its help.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from easyfirst.backends import CHOICES
from easyfirst.config import OPTIMIZERS, REDUCTIONS, DataConfig, TrainConfig
from easyfirst.errors import InputError
from easyfirst.fields import parse_class_weights, show_weights
from easyfirst.model.settings import (
    CHAR_ENCODERS,
    DROPOUT_KINDS,
    LOSS_ALPHA,
    MODELS,
    POOLINGS,
    LossConfig,
    ModelConfig,
)
from easyfirst.ops.kinds import KINDS

# a config's sections, as dataclasses: the keys' types
SECTION_TYPES = {
    "data": DataConfig,
    "model": ModelConfig,
    "loss": LossConfig,
    "train": TrainConfig,
}


@dataclass(frozen=True)
class Flag:
    """A flag (``--lr``; a boolean's also ``--no-…``) that sets the config key ``key`` (``train.lr``)."""

    name: str
    key: str
    help: str
    metavar: str | None = None
    # the value as given (a string, or a list of strings with ``repeatable``) → the key's value
    parse: Callable[[Any], Any] | None = None
    repeatable: bool = False
    show: Callable[[Any], str] | None = None  # a key's value as a user would type it (for defaults)
    choices: Callable[[], list[str]] | None = None  # the registry's names, looked up when help is shown

    @property
    def section(self) -> str:
        return self.key.partition(".")[0]

    @property
    def field(self) -> str:
        return self.key.partition(".")[2]

    @property
    def parameter(self) -> str:
        """The verb's parameter name: ``train__lr``."""
        return self.key.replace(".", "__")

    def given_as(self, value: Any) -> str:
        """The flag as given: a boolean's ``--no-`` form for False."""
        return f"--no-{self.name[2:]}" if value is False else self.name

    def typed(self, value: Any) -> list[str]:
        """The flag that sets its key to ``value`` as a user types it (for a model card's command); []
        where it repeats (class weights: a table, given with --set) or no flag names the value."""
        if self.repeatable or isinstance(value, dict | list):
            return []
        if value is None:  # a value only a flag names (--sketch-steps L), or none
            return [self.name, self.show(None)] if self.parse and self.show else []
        return [self.given_as(value)] if isinstance(value, bool) else [self.name, str(value)]


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


def _dropout_default(value: float | None) -> str:
    return "--dropout" if value is None else f"{value:g}"


# fmt: off
FLAGS = (
    # [data]
    Flag("--train", "data.train", metavar="PATH", help="Training file (default: the task's data set)."),
    Flag("--dev", "data.dev", metavar="PATH", help="Dev file, for choosing the best epoch."),
    Flag("--test", "data.test", metavar="PATH", help="Test file, scored once at the end."),
    Flag("--tag-column", "data.tag_column", choices=lambda: ["upos", "xpos"],
         help="CoNLL-U column to learn: upos or xpos."),
    Flag("--max-train-length", "data.max_train_length", metavar="L", show=lambda value: "none" if value == 0 else str(value),
         help="Training drops sentences longer than this many words (0: keeps all); evaluation never does."),
    Flag("--encoding", "data.encoding",
         help="Encoding of column files (ner; the original CoNLL-2002/2003 files: latin-1)."),
    Flag("--scheme", "data.scheme", choices=lambda: ["bio", "bioes"],
         help="The entity tagging scheme an NER model learns, bio or bioes (IOBES); files are read in any "
              "scheme and tagged in the input's."),
    # [model]
    Flag("--model", "model.model", choices=lambda: list(MODELS),
         help="nef-f (full-state, Eq. 7), nef-s (single-state, Eq. 4) or bilstm (no sketch steps, N = 0)."),
    Flag("--affix-dim", "model.affix_dim", metavar="D",
         help="Size of the embeddings of prefixes and suffixes of up to 4 characters, summed per word: the "
              "paper's 50 (0: none)."),
    Flag("--pretrained", "model.pretrained", metavar="NAME|PATH",
         help="Pretrained word vectors: a named set (easyfirst data --vectors lists them) or a word2vec, "
              "GloVe or fastText file (text or word2vec binary, gzipped or not). The word size is theirs."),
    Flag("--pretrained-words", "model.pretrained_words", metavar="K",
         help="With --pretrained: its first K words (the most frequent) join the vocabulary, so that words "
              "unseen in training get their vector, not UNK's (0: training words only); no training "
              "sentence has them, so their vectors are kept as read and cost no update time."),
    Flag("--freeze-vectors", "model.freeze_vectors",
         help="With --pretrained: the words that have a vector keep it as it is; only the others (UNK, "
              "training words the vectors lack) learn theirs. Default: every word's embedding is trained."),
    Flag("--transformer", "model.transformer", metavar="NAME|PATH",
         help="A transformer's vectors for each word beside its other inputs: a registry name "
              "(all-minilm-l6-v2), a folder saved by transformers' save_pretrained, or a hub id (needs the "
              "extra transformers). Frozen unless --transformer-finetune; the run folder records a hash of "
              "its weights."),
    Flag("--transformer-pooling", "model.transformer_pooling", choices=lambda: list(POOLINGS),
         help="With --transformer: a word's vector from its sub-words' (first, last, mean, or first_last: "
              "the first and last concatenated)."),
    Flag("--transformer-layers", "model.transformer_layers", metavar="K,K,...",
         help="With --transformer: the hidden layers used, averaged (0: the embeddings, -1: the last). "
              "Default: the last four (all of a model with fewer)."),
    Flag("--transformer-mix", "model.transformer_mix",
         help="With --transformer: a learned scalar mix of --transformer-layers instead of their average."),
    Flag("--transformer-finetune", "model.transformer_finetune",
         help="With --transformer: train the transformer too, at --transformer-lr (it is then saved with "
              "the model); default: frozen, each sentence's vectors computed once per run."),
    Flag("--transformer-window", "model.transformer_window", metavar="P", show=lambda v: "the transformer's length" if not v else str(v),
         help="With --transformer: sub-words per window; longer sentences run in overlapping windows, never "
              "truncated."),
    Flag("--transformer-stride", "model.transformer_stride", metavar="P", show=lambda v: "half a window" if not v else str(v),
         help="With --transformer: sub-words from one window's start to the next's (at most the window)."),
    Flag("--transformer-source", "model.transformer_source",
         help="QE, with --transformer: the source sentence through the same transformer too, each MT word "
              "given the vectors of its aligned source words, averaged."),
    Flag("--hidden-dim", "model.hidden_dim", metavar="D", help="BiLSTM units per direction (each layer)."),
    Flag("--encoder-layers", "model.encoder_layers", metavar="K",
         help="Stacked BiLSTM layers, each reading the one below (--encoder-dropout between them)."),
    Flag("--sketch-steps", "model.sketch_steps", metavar="N|L", parse=parse_steps, show=lambda value: "L" if value is None else str(value),
         help="Sketch steps N: an integer, or L for one per word."),
    Flag("--steps-beyond-length", "model.steps_beyond_length",
         help="With N fixed: a sentence shorter than N runs all N steps (a fresh attention budget every L "
              "steps) or, with --no-steps-beyond-length, only L: N read as the paper's maximum number of "
              "steps."),
    Flag("--attention", "model.attention", choices=lambda: list(KINDS),
         help="Attention ρ (Eq. 3); hard is vanilla easy-first (Alg. 1)."),
    Flag("--attention-temperature", "model.attention_temperature", metavar="T",
         help="Divide the attention scores by T before ρ."),
    Flag("--v-init", "model.v_init", metavar="C",
         help="Scale of v's initial values (Eq. 2): how spread the first scores are."),
    Flag("--coverage-penalty", "model.coverage_penalty", metavar="λ",
         help="λ: attend with ρ(z − λβ), penalising covered words."),
    Flag("--concat", "model.concat", help="Predict from concat(h_i, s_i) (Eq. 6) or the sketch alone."),
    Flag("--dropout", "model.dropout", metavar="P",
         help="Dropout after the embeddings, between BiLSTM layers, after the BiLSTM and before the output "
              "layer; --embedding-dropout, --encoder-dropout and --output-dropout override it per place."),
    Flag("--dropout-kind", "model.dropout_kind", choices=lambda: list(DROPOUT_KINDS),
         help="naive: a new dropout mask at every word; locked (variational): one mask per sentence, the same"
              " units dropped at every word."),
    Flag("--embedding-dropout", "model.embedding_dropout", metavar="P", show=_dropout_default,
         help="Dropout on the word representations (the BiLSTM's input)."),
    Flag("--encoder-dropout", "model.encoder_dropout", metavar="P", show=_dropout_default,
         help="Dropout between stacked BiLSTM layers (--encoder-layers > 1)."),
    Flag("--output-dropout", "model.output_dropout", metavar="P", show=_dropout_default,
         help="Dropout on the BiLSTM's output and the sketches (the decoder's and output layer's input)."),
    Flag("--char-dim", "model.char_dim", metavar="D",
         help="Size of the character embeddings of a character encoder (--char-encoder), whose --char-filters"
              " outputs per word join the word's representation (0: no character features)."),
    Flag("--char-encoder", "model.char_encoder", choices=lambda: list(CHAR_ENCODERS),
         help="With --char-dim: cnn, filters max-pooled over the word (Ma & Hovy 2016), or bilstm, the final "
              "states of a character BiLSTM (Lample et al. 2016)."),
    Flag("--char-filters", "model.char_filters", metavar="F",
         help="With --char-dim: the character encoder's output size per word (cnn: its filters; bilstm: F/2 "
              "units per direction, F even)."),
    Flag("--word-dropout", "model.word_dropout", metavar="α",
         help="α: a training word seen c times is replaced by UNK with probability α / (α + c) (0: never)."),
    Flag("--crf", "model.crf", help="A linear-chain CRF output layer (Viterbi decoding)."),
    Flag("--bio-constraints", "model.bio_constraints", show=lambda value: "on for BIO and BIOES tag sets" if value is None else str(value).lower(),
         help="CRF: forbid the transitions the tags' scheme does not allow (BIO: I-X only after B-X or I-X; "
              "BIOES: also E-X, S-X and the sentence's ends)."),
    Flag("--source-pretrained", "model.source_pretrained", metavar="NAME|PATH",
         help="QE: pretrained vectors for the aligned source words, named or a file as for --pretrained (e.g."
              " glove-6b-50d for English sources); the source embedding size is theirs."),
    Flag("--qe-context-dim", "model.qe_context_dim", metavar="D",
         help="QE: size of the context-word embeddings (MT neighbours, aligned words' source neighbours); 0 "
              "leaves them out (the paper's 128-dimensional input)."),
    Flag("--gaps", "model.gaps", show=lambda value: "when the training tags are 2N+1" if value is None else str(value).lower(),
         help="QE: also predict a tag for every gap (between, before and after the MT words)."),
    Flag("--source-tags", "model.source_tags", show=lambda value: ("when PREFIX.source_tags exists for training" if value is None else str(value).lower()),
         help="QE: also predict a tag for every source word."),
    # [loss]
    Flag("--loss", "loss.loss", choices=lambda: list(LOSS_ALPHA),
         help="Output loss and mapping: softmax (cross-entropy), sparsemax, entmax15, or entmax (with "
              "--alpha)."),
    Flag("--alpha", "loss.alpha", show=lambda value: "the loss's own" if value is None else f"{value:g}",
         help="α > 1 of --loss entmax (1.5 = entmax15, 2 = sparsemax)."),
    Flag("--label-smoothing", "loss.label_smoothing", metavar="ε",
         help="ε: Fenchel–Young label smoothing, target (1 − ε)·gold + ε·uniform."),
    Flag("--temperature", "loss.temperature", metavar="T",
         help="T: train on T · loss(scores / T); T > 1 tempers. Tagging uses T = 1."),
    Flag("--class-weight", "loss.class_weights", metavar="TAG=W", parse=parse_class_weights, repeatable=True, show=show_weights,
         help="TAG=W: weight of words whose gold tag is TAG (repeatable)."),
    Flag("--gap-class-weight", "loss.gap_class_weights", metavar="TAG=W", parse=lambda values: parse_class_weights(values, "--gap-class-weight"), repeatable=True, show=show_weights,
         help="QE: OK=W or BAD=W, the weight of gaps with that gold tag (repeatable)."),
    Flag("--source-class-weight", "loss.source_class_weights", metavar="TAG=W", parse=lambda values: parse_class_weights(values, "--source-class-weight"), repeatable=True, show=show_weights,
         help="QE: OK=W or BAD=W, the weight of source words with that gold tag (repeatable)."),
    # [train]
    Flag("--epochs", "train.epochs", help="Training epochs."),
    Flag("--optimizer", "train.optimizer", choices=lambda: list(OPTIMIZERS),
         help="adagrad (the paper's), adam, nadam, adamw, or sgd (with --momentum)."),
    Flag("--lr", "train.lr", help="Learning rate."),
    Flag("--momentum", "train.momentum", metavar="M", help="SGD's momentum (0: none)."),
    Flag("--lr-decay", "train.lr_decay", metavar="D",
         help="Epoch e trains at lr / (1 + D·(e - 1)) (0: a constant rate)."),
    Flag("--clip", "train.clip", metavar="NORM",
         help="Rescale the gradient to this global norm when it is larger (inf: never)."),
    Flag("--patience", "train.patience", metavar="P",
         help="Stop when the dev score has not improved for P epochs (0: train all --epochs)."),
    Flag("--transformer-lr", "train.transformer_lr", metavar="LR",
         help="The learning rate of a fine-tuned transformer (--transformer-finetune)."),
    Flag("--transformer-cache-mb", "train.transformer_cache_mb", metavar="MB",
         help="With a frozen --transformer: MB of sentences' vectors kept, so that training computes each "
              "sentence once per run, not once per epoch (0: none kept)."),
    Flag("--batch-size", "train.batch_size", help="Sentences per update."),
    Flag("--reduction", "train.reduction", choices=lambda: list(REDUCTIONS),
         help="An update's loss: the mean over its words, or their sum (the paper's code: one sentence per "
              "update, its words' losses summed)."),
    Flag("--shuffle", "train.shuffle",
         help="Shuffle the training sentences every epoch (--no-shuffle: file order, as the paper's code)."),
    Flag("--seed", "train.seed", help="Random seed."),
    Flag("--workers", "train.workers", metavar="K", show=lambda value: "one per core" if value is None else str(value),
         help="Processes that train one shared model without locks (Hogwild), one sentence per update on the "
              "CPU only; default: one per core (at most 8, one per 500 training sentences); 1: one process, "
              "repeatable bit for bit."),
    Flag("--backend", "train.backend", choices=lambda: list(CHOICES),
         help="Force a backend (for debugging and benchmarks): numba (compiled CPU loops) or reference (the "
              "model itself: every setting and device, the GPU included), which runs whatever the forced one "
              "does not support; auto: the fastest that supports each batch."),
    Flag("--threads", "train.threads", show=lambda v: "torch's choice" if not v else str(v),
         help="CPU threads for torch in this training process (0: torch's choice, one per core). 1 by "
              "default, since more spin when other work shares the cores; on a machine of your own, 0 is "
              "faster (docs/training.md, Threads)."),
    Flag("--checkpoint-every", "train.checkpoint_every", metavar="K",
         help="Also checkpoint every K updates (0: at epoch ends only)."),
    Flag("--anneal-epochs", "train.anneal_epochs", metavar="E",
         help="Anneal the attention temperature over the first E epochs, geometrically from --anneal-from to "
              "--anneal-to, then keep it (0: no annealing, --attention-temperature throughout)."),
    Flag("--anneal-from", "train.anneal_from", metavar="T",
         help="The attention temperature of epoch 1 when annealing."),
    Flag("--anneal-to", "train.anneal_to", metavar="T",
         help="The attention temperature reached at epoch E when annealing."),
    Flag("--best-metric", "train.best_metric", metavar="KEY", show=lambda value: "the task's (qe with gaps: target_f1_mult)" if value is None else value,
         help="The dev score that chooses the best epoch, a metrics.json key (qe: f1_mult, mcc, "
              "target_f1_mult, target_mcc, gaps_f1_mult, source_f1_mult, ...)."),
    Flag("--checkpoint-minutes", "train.checkpoint_minutes", metavar="M",
         help="Also checkpoint every M minutes of training (0: off)."),
)
# fmt: on

FLAG_OF = {flag.key: flag for flag in FLAGS}  # "train.lr" → its flag
