"""Word representations for quality estimation (paper §5.3): each MT word is its own embedding
concatenated with the embedding of the source word(s) aligned to it.

For MT word j with aligned source words a(j) (Pharaoh alignments):

    x_j = concat(t_j, ŝ_j),   ŝ_j = (1/|a(j)|) Σ_{i ∈ a(j)} e_i    if a(j) ≠ ∅,   NULL otherwise

with t_j the target embedding (64-d word embedding, plus prefix/suffix sums if ``affix_dim > 0``; off by
default for QE), e_i the embedding of source word i in a separate source vocabulary and NULL a learned
vector: 64 + 64 = 128 dimensions with the paper's sizes.

With ``context = c > 0`` the WMT16 baseline's context features join in: the target representations of
the MT words j−c..j+c and, for each offset o ∈ [−c, c], the average of the source words at i + o over
i ∈ a(j) (the neighbours of the aligned words), with a learned NULL vector per offset for unaligned MT
words. Positions past a sentence edge contribute zeros.

The alignment arrives as a ``(B, L, L_src)`` matrix whose row j holds 1/|a(j)| at the aligned source
words (easyfirst.data.batching), so averaging is one batched matrix product, with no loop over words.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from easyfirst.data.batching import Batch
from easyfirst.data.vocab import Vocabularies
from easyfirst.model.embedder import Embedder


def shift(x: torch.Tensor, offset: int) -> torch.Tensor:
    """``y[:, j] = x[:, j + offset]`` where ``0 ≤ j + offset < L``, else zeros; ``x`` ``(B, L, D)``."""
    if offset == 0:
        return x
    y = torch.zeros_like(x)
    length = x.shape[1]
    if abs(offset) >= length:
        return y
    if offset > 0:
        y[:, : length - offset] = x[:, offset:]
    else:
        y[:, -offset:] = x[:, : length + offset]
    return y


class BilingualEmbedder(nn.Module):
    """MT words ⊕ their aligned source words (NULL when unaligned), optionally with neighbours."""

    def __init__(self, vocabs: Vocabularies, word_dim: int, affix_dim: int = 0, context: int = 0):
        super().__init__()
        if vocabs.source is None:
            raise ValueError("a bilingual embedder needs a source vocabulary")
        self.context = context
        self.target = Embedder(vocabs, word_dim, affix_dim)
        self.source = nn.Embedding(len(vocabs.source), word_dim, padding_idx=0)
        self.null = nn.Parameter(torch.zeros(2 * context + 1, word_dim))  # one per context offset
        self.output_dim = (2 * context + 1) * (self.target.output_dim + word_dim)

    def forward(self, batch: Batch) -> torch.Tensor:
        """``batch`` with ``words`` ``(B, L)``, ``source`` ``(B, L_src)``, ``alignment`` ``(B, L, L_src)``
        → ``(B, L, output_dim)``: the target parts for offsets −c..c, then the source parts."""
        target = self.target(batch.words, batch.prefixes, batch.suffixes)  # (B, L, D_t)
        source = self.source(batch.source)  # (B, L_src, D)
        unaligned = ((batch.alignment.sum(-1) == 0) & batch.mask).unsqueeze(-1)  # (B, L, 1)
        offsets = range(-self.context, self.context + 1)
        aligned = [
            torch.where(unaligned, self.null[k], torch.bmm(batch.alignment, shift(source, o)))
            for k, o in enumerate(offsets)
        ]  # each (B, L, D)
        return torch.cat([shift(target, o) for o in offsets] + aligned, dim=-1)

    def load_pretrained(self, path: str | Path, vocabs: Vocabularies) -> int:
        """Initialise the MT word embeddings from a word2vec/GloVe text file (see Embedder)."""
        return self.target.load_pretrained(path, vocabs)
