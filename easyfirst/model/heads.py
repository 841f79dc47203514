"""A model's extra outputs (easyfirst.data.outputs): tags beside the word tags, predicted from the same
features, one module per head that the task declares and the ``[model]`` settings switch on.

Let fⱼ be word j's output-layer input (concat(hⱼ, sⱼᴺ) for the easy-first tagger, hⱼ for the BiLSTM;
easyfirst.model.tagger), after dropout. By what a head tags (``OutputHead.over``):

- **words**: an affine layer on fⱼ.
- **gaps** follow the estimator of the predictor-estimator (Kim et al. 2017) as OpenKiwi implements it
  (Kepler et al. 2019, "OpenKiwi: An Open Source Framework for Quality Estimation"; its
  ``Estimator.make_contexts_gaps`` concatenates each pair of neighbouring states, with learned start and
  stop vectors at the ends): gap j, between words j and j + 1, is gⱼ = [fⱼ; fⱼ₊₁] for j = 0 … N, with
  learned boundary vectors f₀ = b_start and f_{N+1} = b_end for the gaps before the first and after the
  last word; its scores are W₂ tanh(W₁gⱼ + c₁) + c₂ (a one-hidden-layer MLP of ``hidden_dim`` units,
  where OpenKiwi has one affine layer). Word-level QE's gap tags (WMT18–20).
- **aligned** (OpenKiwi tags source words from an encoder over the source side): aligned word i is the
  embedding of the word (the table of the head's feature, shared) ⊕ the mean of f over the words aligned
  to it (a learned NULL vector when none is), read by a BiLSTM over the aligned sequence, then an affine
  layer. Word-level QE's source tags.

Each head is trained with the model's Fenchel–Young loss and its own class weights (the ``[loss]`` key
the head names), added to the word tags' loss; tags are the argmax. The heads see only the model's
inputs, never gold tags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from easyfirst.data.batching import IGNORE, Batch
from easyfirst.data.heads import ALIGNMENT
from easyfirst.data.outputs import OutputHead
from easyfirst.losses import class_weight_vector, fenchel_young_loss
from easyfirst.model.encoder import BiLSTMEncoder


class WordHead(nn.Module):
    """One tag per word: scores ``(B, L, K)``."""

    def __init__(self, feature_dim: int, labels: int):
        super().__init__()
        self.output = nn.Linear(feature_dim, labels)

    def forward(self, features, mask, inputs, tables) -> torch.Tensor:
        return self.output(features)


class GapHead(nn.Module):
    """One tag per gap: scores ``(B, L + 1, K)`` (see the module docstring)."""

    def __init__(self, feature_dim: int, hidden_dim: int, labels: int):
        super().__init__()
        self.boundaries = nn.Parameter(torch.zeros(2, feature_dim))  # b_start, b_end
        self.hidden = nn.Linear(2 * feature_dim, hidden_dim)
        self.output = nn.Linear(hidden_dim, labels)

    def forward(self, features, mask, inputs, tables) -> torch.Tensor:
        return self.output(torch.tanh(self.hidden(self.gap_features(features, mask))))

    def gap_features(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(B, L + 1, 2D)``: gap j of a sentence of n words is [f_j; f_{j+1}] with f_0 = b_start and
        f_{n+1} = b_end (1-based words); gaps past n + 1 are padding."""
        b, length, d = features.shape
        lengths = mask.sum(1)
        words = torch.cat([features * mask.unsqueeze(-1), features.new_zeros(b, 1, d)], dim=1)  # f_1 … f_L, 0
        end = nn.functional.one_hot(lengths, length + 1).to(features.dtype).unsqueeze(-1)  # at index n
        right = words + end * self.boundaries[1]  # f_1 … f_n, b_end: the word right of each gap
        left = torch.cat([self.boundaries[0].expand(b, 1, d), right[:, :-1]], dim=1)  # b_start, f_1 … f_n
        return torch.cat([left, right], dim=-1)


class AlignedHead(nn.Module):
    """One tag per word of the sequence aligned to the words (the feature ``feature``): scores
    ``(B, S, K)`` (see the module docstring)."""

    def __init__(
        self, feature_dim: int, hidden_dim: int, aligned_dim: int, labels: int, feature: str, dropout
    ):
        super().__init__()
        self.feature = feature
        self.dropout = nn.Dropout(dropout)
        self.unaligned = nn.Parameter(torch.zeros(feature_dim))  # the NULL vector
        self.encoder = BiLSTMEncoder(aligned_dim + feature_dim, hidden_dim)
        self.output = nn.Linear(self.encoder.output_dim, labels)

    def forward(self, features, mask, inputs, tables) -> torch.Tensor:
        if self.feature not in inputs:
            raise ValueError(
                f"a model with a head over {self.feature} words needs each sentence's {self.feature} and alignment"
            )
        ids = inputs[self.feature]
        aligned = aligned_features(features, inputs[self.feature + ALIGNMENT], self.unaligned)
        x = self.dropout(torch.cat([tables[self.feature](ids), aligned], dim=-1))
        # a sentence without aligned words still gets one padding step (the LSTM needs length ≥ 1)
        lengths_mask = ids != 0
        lengths_mask[:, 0] = True
        return self.output(self.dropout(self.encoder(x, lengths_mask)))


def aligned_features(
    features: torch.Tensor, alignment: torch.Tensor, unaligned: torch.Tensor
) -> torch.Tensor:
    """``(B, S, D)``: per aligned word the mean of the features ``(B, L, D)`` of the words aligned to it
    (``alignment`` ``(B, S, L)``, 0/1), or ``unaligned`` ``(D,)`` when none is."""
    counts = alignment.sum(-1, keepdim=True)
    aligned = torch.bmm(alignment, features) / counts.clamp(min=1)
    return torch.where(counts > 0, aligned, unaligned.expand_as(aligned))


class ExtraHeads(nn.ModuleDict):
    """The heads ``specs`` over the words' features ``(B, L, D)``; ``tables`` are the embedder's feature
    tables (an aligned head reads its feature's, whose size it takes)."""

    def __init__(
        self, feature_dim: int, hidden_dim: int, specs: Sequence[OutputHead], tables: Mapping, dropout: float
    ):
        modules: dict[str, nn.Module] = {}
        for head in specs:
            if head.over == "gaps":
                modules[head.name] = GapHead(feature_dim, hidden_dim, len(head.labels))
            elif head.over == "aligned":
                dim = tables[head.aligned].embedding_dim
                modules[head.name] = AlignedHead(
                    feature_dim, hidden_dim, dim, len(head.labels), head.aligned, dropout
                )
            else:
                modules[head.name] = WordHead(feature_dim, len(head.labels))
        super().__init__(modules)
        self.specs = tuple(specs)
        self._register_load_state_dict_pre_hook(self._renamed)

    def forward(self, features, mask, inputs: dict[str, torch.Tensor], tables) -> dict[str, torch.Tensor]:
        """Each head's scores ``(B, positions, K)``, by name; ``inputs`` is the batch's ``heads``."""
        return {name: head(features, mask, inputs, tables) for name, head in self.items()}

    def _renamed(self, state: dict, prefix: str, *_) -> None:
        """A model.pt saved before the heads had modules of their own: its keys renamed as each head's
        ``saved_before`` says (old name → the name in its module)."""
        for head in self.specs:
            for old, new in head.saved_before:
                for key in [k for k in state if k.startswith(prefix + old)]:
                    rest = key[len(prefix + old) :]
                    if rest == "" or rest.startswith("."):
                        state[f"{prefix}{head.name}.{new}{rest}"] = state.pop(key)


class HeadLoss(nn.Module):
    """The heads' training loss: per head the Fenchel–Young loss of the model's objective with the head's
    class weights, averaged over its gold tags (``reduction = "sum"``: summed); summed over the heads."""

    def __init__(self, objective, specs: Sequence[OutputHead]):
        super().__init__()
        self.objective = objective
        for head in specs:
            weights = getattr(objective, head.weights) if head.weights else {}
            self.register_buffer(
                f"{head.name}_weight", class_weight_vector(weights, list(head.labels)), persistent=False
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


def decode_heads(
    scores: dict[str, torch.Tensor], batch: Batch, specs: Sequence[OutputHead]
) -> dict[str, list[list[str]]]:
    """Each head's tags per batch row (the argmax), cut to the sentence's positions."""
    decoded = {}
    for head in specs:
        if head.name not in scores:
            continue
        if head.over == "aligned":
            lengths = (batch.heads[head.aligned] != 0).sum(1).tolist() if head.aligned in batch.heads else []
        else:
            lengths = (batch.lengths + (head.over == "gaps")).tolist()
        best = scores[head.name].argmax(-1).cpu().tolist()
        decoded[head.name] = [[head.labels[t] for t in row[:n]] for row, n in zip(best, lengths, strict=True)]
    return decoded
