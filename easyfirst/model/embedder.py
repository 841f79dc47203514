"""Word representations (paper §5.1): word embedding ⊕ sum of prefix n-gram embeddings ⊕ sum of
suffix n-gram embeddings (n ≤ 4), i.e. 64 + 50 + 50 = 164 dimensions with the paper's sizes, ⊕ the
embedding of each active extra feature (easyfirst.data.features; averaged over a word's symbols), ⊕,
with characters, the word's characters through a CNN max-pooled over the word (Ma & Hovy 2016) or a
BiLSTM (Lample et al. 2016): :class:`CharacterEncoder`.
``affix_dim = 0`` leaves the affixes out (as for quality estimation, §5.3)."""

from __future__ import annotations

import torch
from torch import nn

from easyfirst.data.features import CHARS, active_features
from easyfirst.data.vectors import Vectors
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError
from easyfirst.model.settings import EmbedderSettings


class Embedder(nn.Module):
    def __init__(
        self,
        vocabs: Vocabularies,
        word_dim: int,
        affix_dim: int,
        feature_dims: dict[str, int] | None = None,
        characters: tuple[str, int, int] = ("cnn", 30, 3),
        freeze_vectors: bool = False,
        drawn: bool = True,
        transformer: nn.Module | None = None,
        transformer_source: bool = False,
    ):
        """``feature_dims``: name → embedding size of each active feature; the ``chars`` feature's
        embeddings go through a :class:`CharacterEncoder` of ``characters`` (kind, size, window). With
        ``freeze_vectors`` the rows that :meth:`load_pretrained` fills take no updates: their gradient is
        zeroed (the mask, ``fixed_words``, is saved with the model, so that a resumed run keeps it).
        ``transformer``: a :class:`~easyfirst.model.transformer.TransformerEmbedder`, whose vectors come
        last; with ``transformer_source`` (QE) followed by those of each word's aligned source words."""
        super().__init__()
        trained = min(vocabs.vector_words_from or len(vocabs.words), len(vocabs.words))
        # drawn as one table of every word, so that the random draws after it are a one-table model's
        # (``drawn=False``: not drawn at all, for a saved state to fill)
        if drawn:
            rows = nn.Embedding(len(vocabs.words), word_dim, padding_idx=0).weight.detach()[:trained].clone()
        else:
            rows = torch.zeros(trained, word_dim)
        self.words = nn.Embedding(trained, word_dim, padding_idx=0, _weight=rows)
        # the words only the vectors know (Vocabularies.add_pretrained_words): no training sentence has
        # them, so they would take no gradient; kept as read outside the trained table, they cost an
        # update nothing (a dense table of GloVe's 200,000 words took 26 ms an update with SGD's momentum)
        extra = len(vocabs.words) - trained
        self.register_buffer("vector_words", torch.zeros(extra, word_dim) if extra else None)
        if freeze_vectors:
            self.register_buffer("fixed_words", torch.zeros(trained, dtype=torch.bool))
            self.words.weight.register_hook(self._keep_fixed_words)
        self.affixes = affix_dim > 0
        if self.affixes:
            self.prefixes = nn.Embedding(len(vocabs.prefixes), affix_dim, padding_idx=0)
            self.suffixes = nn.Embedding(len(vocabs.suffixes), affix_dim, padding_idx=0)
        feature_dims = feature_dims or {}
        self.features = nn.ModuleDict(
            {
                name: nn.Embedding(len(vocabs.features[name]), dim, padding_idx=0)
                for name, dim in feature_dims.items()
            }
        )
        self.chars = CharacterEncoder(feature_dims[CHARS], *characters) if CHARS in feature_dims else None
        averaged = sum(dim for name, dim in feature_dims.items() if name != CHARS)
        self.output_dim = word_dim + 2 * affix_dim + averaged + (self.chars.size if self.chars else 0)
        self.transformer = transformer  # registered last: the other tables' random draws are unchanged
        self.transformer_source = transformer is not None and transformer_source
        if transformer is not None:
            self.output_dim += transformer.output_dim * (2 if self.transformer_source else 1)

    @classmethod
    def from_settings(cls, vocabs: Vocabularies, e: EmbedderSettings, drawn: bool = True) -> Embedder:
        """The embedder of the ``[model]`` settings ``e`` (its part ``embedder``) over ``vocabs``."""
        characters = (e.char_encoder, e.char_filters, e.char_window)
        transformer = None
        if e.transformer:
            from easyfirst.model.transformer import TransformerEmbedder

            transformer = TransformerEmbedder.from_settings(e)
        features = active_features(e)
        return cls(
            vocabs,
            e.word_dim,
            e.affix_dim,
            features,
            characters,
            e.freeze_vectors,
            drawn,
            transformer,
            e.transformer_source,
        )

    def forward(
        self,
        words: torch.Tensor,
        prefixes: torch.Tensor,
        suffixes: torch.Tensor,
        features: dict[str, torch.Tensor] | None = None,
        tokens: list | None = None,
        sources: list | None = None,
    ) -> torch.Tensor:
        """``words`` ``(B, L)``, ``prefixes``/``suffixes`` ``(B, L, n)``, ``features`` name → ``(B, L, k)``
        → ``(B, L, output_dim)``; ``tokens``: the B sentences' words as written (for the transformer), and
        ``sources`` their source words and alignments (QE, for ``transformer_source``)."""
        parts = [self.word_vectors(words)]
        if self.affixes:  # each word's n-gram embeddings summed, one operation per table
            parts += [self._summed(self.prefixes, prefixes), self._summed(self.suffixes, suffixes)]
        for name, table in self.features.items():
            ids = features[name]
            if name == CHARS:
                size, length, k = ids.shape
                flat = ids.reshape(size * length, k)
                parts.append(self.chars(table(flat), flat).view(size, length, -1))
                continue
            count = (ids != 0).sum(2, keepdim=True).clamp(min=1)
            parts.append(table(ids).sum(2) / count)
        if self.transformer is not None:
            if tokens is None:
                raise ValueError(
                    "a model with a transformer needs each batch's words as written (Batch.tokens)"
                )
            parts.append(self.transformer(tokens, words.shape[1], words.device))
            if self.transformer_source:
                if sources is None:
                    raise ValueError("transformer_source needs each sentence's source words and alignment")
                parts.append(self.transformer.aligned(sources, words.shape[1], words.device))
        return torch.cat(parts, dim=-1)

    def word_vectors(self, words: torch.Tensor) -> torch.Tensor:
        """The embeddings of word ids ``words``: the trained table's rows, and the rows of
        ``vector_words`` for the ids past it."""
        if self.vector_words is None:
            return self.words(words)
        trained = self.words.num_embeddings
        known = words < trained
        rows = self.words(words.masked_fill(~known, 0))  # the padding row: no gradient
        kept = nn.functional.embedding((words - trained).clamp(min=0), self.vector_words)
        return torch.where(known.unsqueeze(-1), rows, kept)

    @torch.no_grad()
    def reset_words(self) -> None:
        """Glorot-uniform word embeddings drawn as for one table of every word (the trained one and
        ``vector_words`` together: the same draws, and the same bound, as a model whose vectors' words
        are trained rows); ``load_pretrained`` then fills the rows that the vectors have."""
        trained = self.words.num_embeddings
        extra = len(self.vector_words) if self.vector_words is not None else 0
        full = torch.empty(trained + extra, self.words.embedding_dim)
        nn.init.xavier_uniform_(full)
        self.words.weight.copy_(full[:trained])
        if extra:
            self.vector_words.copy_(full[trained:])

    @staticmethod
    def _summed(table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        """``table(ids).sum(2)`` for ``ids`` ``(B, L, n)`` as one ``embedding_bag`` (the padding id's row
        is zero either way)."""
        size, length, n = ids.shape
        summed = nn.functional.embedding_bag(
            ids.reshape(-1, n), table.weight, mode="sum", sparse=table.sparse, padding_idx=table.padding_idx
        )
        return summed.view(size, length, -1)

    def _keep_fixed_words(self, grad: torch.Tensor) -> torch.Tensor:
        """The word embeddings' gradient without the rows of ``fixed_words`` (dense or sparse)."""
        if not grad.is_sparse:
            return grad.masked_fill(self.fixed_words.unsqueeze(1), 0.0)
        grad = grad.coalesce()
        rows, values = grad.indices(), grad.values()
        values = values.masked_fill(self.fixed_words[rows[0]].unsqueeze(1), 0.0)
        return torch.sparse_coo_tensor(rows, values, grad.shape, is_coalesced=True)

    @torch.no_grad()
    def load_pretrained(
        self, vectors: Vectors, vocabs: Vocabularies, feature: str | None = None, found: tuple | None = None
    ) -> int:
        """Initialise the word embeddings of the words ``vectors`` has (easyfirst.data.vectors), or with
        ``feature`` that feature's table (QE's ``source``: the aligned source words, matched
        case-insensitively when the set is uncased); returns how many words it covered. Words missing
        from it keep their random initialisation; with lower-cased lookups a word takes the vector of its
        first (most frequent) spelling there. Words of the set outside the vocabulary are skipped: add
        them first with :meth:`Vocabularies.add_pretrained_words`. ``found``: the ids and rows of the
        vocabulary that the vectors have, looked up already (training counts them before it builds the
        model: the count is in its config)."""
        table = self.words if feature is None else self.features[feature]
        if vectors.dim != table.embedding_dim:
            raise InputError(
                f"the vectors have {vectors.dim} dimensions, the embeddings {table.embedding_dim}",
                vectors.name,
            )
        if found is not None:
            ids, rows = found
        elif feature is None:
            ids, rows = vectors.lookup(vocabs.words.stoi, vocabs.lowercase)
        else:
            ids, rows = vectors.lookup_folded(vocabs.features[feature].stoi)
        covered = torch.tensor(ids, dtype=torch.long)
        values = torch.from_numpy(rows).to(table.weight)
        trained = covered < table.num_embeddings  # only the word table has vector_words past it
        table.weight[covered[trained]] = values[trained]
        if feature is None and self.vector_words is not None:
            self.vector_words[covered[~trained] - table.num_embeddings] = values[~trained]
        if feature is None and hasattr(self, "fixed_words"):
            self.fixed_words[covered[trained]] = True
        return len(ids)


class CharacterEncoder(nn.Module):
    """Each word's character embeddings → one vector of ``size``: ``cnn``, tanh of the largest response
    of each of ``size`` filters of ``window`` characters over the word (Ma & Hovy 2016); ``bilstm``, the
    final states of a BiLSTM of ``size / 2`` units per direction (Lample et al. 2016). Padding characters
    never count, and a padding word (no characters) gets zeros."""

    def __init__(self, dim: int, kind: str, size: int, window: int):
        super().__init__()
        self.kind, self.size = kind, size
        if kind == "cnn":
            self.net = nn.Conv1d(dim, size, window, padding="same")
        else:
            self.net = nn.LSTM(dim, size // 2, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """``x`` ``(N, k, dim)``, the embeddings of ``ids`` ``(N, k)`` (0-padded at the end) → ``(N, size)``."""
        real = ids != 0
        if self.kind == "cnn":
            responses = self.net(x.transpose(1, 2))  # (N, size, k)
            pooled = responses.masked_fill(~real.unsqueeze(1), float("-inf")).amax(2)
            return torch.tanh(pooled.masked_fill(~real.any(1, keepdim=True), 0.0))
        lengths = real.sum(1)
        words = lengths > 0
        out = x.new_zeros(len(ids), self.size)
        if bool(words.any()):
            packed = nn.utils.rnn.pack_padded_sequence(
                x[words], lengths[words].cpu(), batch_first=True, enforce_sorted=False
            )
            _, (final, _) = self.net(packed)  # (2, words, size / 2): forward, backward
            out[words] = torch.cat([final[0], final[1]], dim=1)
        return out
