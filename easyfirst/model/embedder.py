"""Word representations (paper §5.1): word embedding ⊕ sum of prefix n-gram embeddings ⊕ sum of
suffix n-gram embeddings (n ≤ 4), i.e. 64 + 50 + 50 = 164 dimensions with the paper's sizes, ⊕ the
embedding of each active extra feature (easyfirst.data.features; averaged over a word's symbols), ⊕,
with ``char_filters``, the word's characters through a CNN max-pooled over the word (Ma & Hovy 2016).
``affix_dim = 0`` leaves the affixes out (as for quality estimation, §5.3)."""

from __future__ import annotations

import torch
from torch import nn

from easyfirst.data.features import CHARS
from easyfirst.data.vectors import Vectors
from easyfirst.data.vocab import Vocabularies
from easyfirst.errors import InputError


class Embedder(nn.Module):
    def __init__(
        self,
        vocabs: Vocabularies,
        word_dim: int,
        affix_dim: int,
        feature_dims: dict[str, int] | None = None,
        char_filters: int = 0,
        char_window: int = 3,
    ):
        """``feature_dims``: name → embedding size of each active feature; the ``chars`` feature's
        embeddings go through ``char_filters`` convolutions of ``char_window`` characters."""
        super().__init__()
        self.words = nn.Embedding(len(vocabs.words), word_dim, padding_idx=0)
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
        self.chars = None
        if CHARS in feature_dims:  # a CNN over each word's characters (Ma & Hovy 2016)
            self.chars = nn.Conv1d(feature_dims[CHARS], char_filters, char_window, padding="same")
        averaged = sum(dim for name, dim in feature_dims.items() if name != CHARS)
        self.output_dim = word_dim + 2 * affix_dim + averaged + (char_filters if self.chars else 0)

    def forward(
        self,
        words: torch.Tensor,
        prefixes: torch.Tensor,
        suffixes: torch.Tensor,
        features: dict[str, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``words`` ``(B, L)``, ``prefixes``/``suffixes`` ``(B, L, n)``, ``features`` name → ``(B, L, k)``
        → ``(B, L, output_dim)``."""
        parts = [self.words(words)]
        if self.affixes:  # each word's n-gram embeddings summed, one operation per table
            parts += [self._summed(self.prefixes, prefixes), self._summed(self.suffixes, suffixes)]
        for name, table in self.features.items():
            ids = features[name]
            if name == CHARS:
                parts.append(self._characters(table, ids))
                continue
            count = (ids != 0).sum(2, keepdim=True).clamp(min=1)
            parts.append(table(ids).sum(2) / count)
        return torch.cat(parts, dim=-1)

    def _characters(self, table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        """``ids`` ``(B, L, k)``, each word's characters (0-padded) → ``(B, L, char_filters)``: tanh of
        each filter's largest response over the word's characters (padding never counts; a padding
        word's features are 0)."""
        size, length, k = ids.shape
        flat = ids.reshape(size * length, k)
        responses = self.chars(table(flat).transpose(1, 2))  # (B·L, filters, k)
        real = (flat != 0).unsqueeze(1)
        pooled = responses.masked_fill(~real, float("-inf")).amax(2)
        pooled = pooled.masked_fill(~real.any(2), 0.0)
        return torch.tanh(pooled).view(size, length, -1)

    @staticmethod
    def _summed(table: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        """``table(ids).sum(2)`` for ``ids`` ``(B, L, n)`` as one ``embedding_bag`` (the padding id's row
        is zero either way)."""
        size, length, n = ids.shape
        summed = nn.functional.embedding_bag(
            ids.reshape(-1, n), table.weight, mode="sum", sparse=table.sparse, padding_idx=table.padding_idx
        )
        return summed.view(size, length, -1)

    @torch.no_grad()
    def load_pretrained(self, vectors: Vectors, vocabs: Vocabularies) -> int:
        """Initialise the word embeddings of the words ``vectors`` has (easyfirst.data.vectors); returns
        how many words it covered. Words missing from it keep their random initialisation; with
        lower-cased lookups a word takes the vector of its first (most frequent) spelling there. Words of
        the set outside the vocabulary are skipped: add them first with
        :meth:`Vocabularies.add_pretrained_words`."""
        if vectors.dim != self.words.embedding_dim:
            raise InputError(
                f"the vectors have {vectors.dim} dimensions, the word embeddings {self.words.embedding_dim}",
                vectors.name,
            )
        ids, rows = vectors.lookup(vocabs.words.stoi, vocabs.lowercase)
        self.words.weight[torch.tensor(ids, dtype=torch.long)] = torch.from_numpy(rows).to(self.words.weight)
        return len(ids)
