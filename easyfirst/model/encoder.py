"""The BiLSTM encoder: embeddings ``(B, L, D_in)`` → states ``H`` ``(B, L, 2·hidden)``, zero on padding.

``layers`` BiLSTMs are stacked (``[model] encoder_layers``), each reading the states of the one below
through ``between`` (the dropout between layers, ``encoder_dropout``). The first layer is ``lstm``, so a
one-layer model's saved weights keep the names they always had (``encoder.lstm.weight_ih_l0``); the
layers above are ``upper.0``, ``upper.1``, ... Each layer is its own ``nn.LSTM`` rather than one
``nn.LSTM(num_layers=k)``, whose built-in dropout between layers can only be naive.

This is the reference: ``nn.LSTM`` over packed sequences. A backend may compute the same function
faster for some batches (easyfirst.backends: on the CPU, in loops compiled by Numba).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from easyfirst.model.settings import EncoderSettings


class BiLSTMEncoder(nn.Module):
    def __init__(self, input_dim: int, hidden_dim: int, layers: int = 1, between: nn.Module | None = None):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.upper = nn.ModuleList(
            nn.LSTM(2 * hidden_dim, hidden_dim, batch_first=True, bidirectional=True)
            for _ in range(layers - 1)
        )
        self.between = between if between is not None else nn.Identity()
        self.output_dim = 2 * hidden_dim

    @classmethod
    def from_settings(cls, input_dim: int, e: EncoderSettings, between: nn.Module) -> BiLSTMEncoder:
        """The encoder of the ``[model]`` settings ``e`` (its part ``encoder``), ``between`` its layers."""
        return cls(input_dim, e.hidden_dim, e.encoder_layers, between)

    @property
    def layers(self) -> list[nn.LSTM]:
        return [self.lstm, *self.upper]

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(1).cpu()
        for k, lstm in enumerate(self.layers):
            if k:
                x = self.between(x)
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = lstm(packed)
            x, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return x
