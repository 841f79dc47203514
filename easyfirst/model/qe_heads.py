"""Word-level QE as WMT18–20 scored it: OK/BAD for every gap of the MT sentence and every source word,
predicted beside the MT words' tags from the same features.

Let fⱼ be MT word j's output-layer input (concat(hⱼ, sⱼᴺ) for the easy-first tagger, hⱼ for the BiLSTM;
easyfirst.model.tagger), after dropout.

- **Gaps** follow the estimator of the predictor-estimator (Kim et al. 2017) as OpenKiwi implements it
  (Kepler et al. 2019, "OpenKiwi: An Open Source Framework for Quality Estimation"; its
  ``Estimator.make_contexts_gaps`` concatenates each pair of neighbouring states, with learned start and
  stop vectors at the ends): gap j, between MT words j and j + 1, is gⱼ = [fⱼ; fⱼ₊₁] for j = 0 … N, with
  learned boundary vectors f₀ = b_start and f_{N+1} = b_end for the gaps before the first and after the
  last word; its scores are W₂ tanh(W₁gⱼ + c₁) + c₂ (a one-hidden-layer MLP of ``hidden_dim`` units,
  where OpenKiwi has one affine layer).
- **Source words** (OpenKiwi tags them from an encoder over the source side): source word i is the embedding of the word (the table of the aligned-source feature, shared)
  ⊕ the mean of f over the MT words aligned to it (a learned NULL vector when none is), read by a BiLSTM
  over the source sentence, then an affine layer.

Each head is trained with the model's Fenchel–Young loss and its own class weights
(``[loss] gap_class_weights``, ``source_class_weights``), added to the MT words' loss; tags are the
argmax. The heads see only the source, the MT words and the alignment, never gold tags.
"""

from __future__ import annotations

import torch
from torch import nn

from easyfirst.data.batching import IGNORE, Batch
from easyfirst.data.qe_heads import QE_TAGS
from easyfirst.losses import class_weight_vector, fenchel_young_loss
from easyfirst.model.encoder import BiLSTMEncoder

HEADS = ("gaps", "source_tags")  # the head names: also the keys of their scores and batch gold tags


class QEHeads(nn.Module):
    """The gap and source heads over the MT words' features ``(B, L, D)`` (see the module docstring)."""

    def __init__(self, feature_dim: int, hidden_dim: int, *, gaps: bool, source_dim: int, dropout: float):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.gaps = gaps
        if gaps:
            self.gap_boundaries = nn.Parameter(torch.zeros(2, feature_dim))  # b_start, b_end
            self.gap_hidden = nn.Linear(2 * feature_dim, hidden_dim)
            self.gap_output = nn.Linear(hidden_dim, len(QE_TAGS))
        self.source = source_dim > 0
        if self.source:
            self.unaligned = nn.Parameter(torch.zeros(feature_dim))  # the NULL vector
            self.source_encoder = BiLSTMEncoder(source_dim + feature_dim, hidden_dim)
            self.source_output = nn.Linear(self.source_encoder.output_dim, len(QE_TAGS))

    def forward(
        self,
        features: torch.Tensor,
        mask: torch.Tensor,
        heads: dict[str, torch.Tensor],
        source_table: nn.Embedding | None,
    ) -> dict[str, torch.Tensor]:
        """Scores ``gaps`` ``(B, L + 1, 2)`` and ``source_tags`` ``(B, S, 2)`` (OK, BAD) of the heads the
        model has; ``heads`` is the batch's (easyfirst.data.qe_heads), ``source_table`` the embedding
        table of the source words."""
        scores = {}
        if self.gaps:
            scores["gaps"] = self.gap_output(torch.tanh(self.gap_hidden(self.gap_features(features, mask))))
        if self.source:
            if "source" not in heads:
                raise ValueError(
                    "a model with a source head needs each sentence's source words and alignment"
                )
            source_mask = heads["source"] != 0
            aligned = aligned_features(features, heads["alignment"], self.unaligned)
            x = self.dropout(torch.cat([source_table(heads["source"]), aligned], dim=-1))
            # a sentence without source words still gets one padding step (the LSTM needs length ≥ 1)
            lengths_mask = source_mask.clone()
            lengths_mask[:, 0] = True
            states = self.dropout(self.source_encoder(x, lengths_mask))
            scores["source_tags"] = self.source_output(states)
        return scores

    def gap_features(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(B, L + 1, 2D)``: gap j of a sentence of n words is [f_j; f_{j+1}] with f_0 = b_start and
        f_{n+1} = b_end (1-based words); gaps past n + 1 are padding."""
        b, length, d = features.shape
        lengths = mask.sum(1)
        words = torch.cat([features * mask.unsqueeze(-1), features.new_zeros(b, 1, d)], dim=1)  # f_1 … f_L, 0
        end = nn.functional.one_hot(lengths, length + 1).to(features.dtype).unsqueeze(-1)  # at index n
        right = words + end * self.gap_boundaries[1]  # f_1 … f_n, b_end: the word right of each gap
        left = torch.cat([self.gap_boundaries[0].expand(b, 1, d), right[:, :-1]], dim=1)  # b_start, f_1 … f_n
        return torch.cat([left, right], dim=-1)


def aligned_features(
    features: torch.Tensor, alignment: torch.Tensor, unaligned: torch.Tensor
) -> torch.Tensor:
    """``(B, S, D)``: per source word the mean of the features ``(B, L, D)`` of the MT words aligned to it
    (``alignment`` ``(B, S, L)``, 0/1), or ``unaligned`` ``(D,)`` when none is."""
    counts = alignment.sum(-1, keepdim=True)
    aligned = torch.bmm(alignment, features) / counts.clamp(min=1)
    return torch.where(counts > 0, aligned, unaligned.expand_as(aligned))


class HeadLoss(nn.Module):
    """The heads' training loss: per head the Fenchel–Young loss of the model's objective with the head's
    class weights, averaged over its gold tags (``reduction = "sum"``: summed); summed over the heads."""

    def __init__(self, objective):
        super().__init__()
        self.objective = objective
        for name, weights in (
            ("gaps", objective.gap_class_weights),
            ("source_tags", objective.source_class_weights),
        ):
            self.register_buffer(
                f"{name}_weight", class_weight_vector(weights, list(QE_TAGS)), persistent=False
            )

    def forward(self, scores: dict[str, torch.Tensor], batch: Batch, reduction: str = "mean") -> torch.Tensor:
        o = self.objective
        total = None
        for name, head_scores in scores.items():
            gold = batch.heads.get(name)
            if gold is None or not (gold != IGNORE).any():
                continue
            loss = fenchel_young_loss(
                head_scores,
                gold,
                alpha=o.entmax_alpha,
                label_smoothing=o.label_smoothing,
                temperature=o.temperature,
                weight=getattr(self, f"{name}_weight"),
                ignore_index=IGNORE,
                reduction=reduction,
            )
            total = loss if total is None else total + loss
        if total is None:  # no gold tags in this batch: a zero that keeps the heads in the graph
            total = sum(s.sum() * 0 for s in scores.values())
        return total


def decode_heads(scores: dict[str, torch.Tensor], batch: Batch) -> dict[str, list[list[str]]]:
    """Each head's tags per batch row (the argmax), cut to the sentence's gaps (n + 1) or source words."""
    lengths = {
        "gaps": (batch.lengths + 1).tolist(),
        "source_tags": (batch.heads["source"] != 0).sum(1).tolist() if "source" in batch.heads else [],
    }
    decoded = {}
    for name, head_scores in scores.items():
        best = head_scores.argmax(-1).cpu().tolist()
        decoded[name] = [[QE_TAGS[t] for t in row[:n]] for row, n in zip(best, lengths[name], strict=True)]
    return decoded
