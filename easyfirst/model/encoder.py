"""The BiLSTM encoder: embeddings ``(B, L, D_in)`` → states ``H`` ``(B, L, 2·hidden)``, zero on padding."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from easyfirst.model.fast.lean import lean_applies, lean_bilstm

# nn.LSTM's parameters in the order lean_bilstm takes them: forward direction, then reverse
LSTM_WEIGHTS = [
    f"{kind}_{part}_l0{direction}"
    for direction in ("", "_reverse")
    for kind, part in (("weight", "ih"), ("weight", "hh"), ("bias", "ih"), ("bias", "hh"))
]


class BiLSTMEncoder(nn.Module):
    def __init__(self, input_dim: int, hidden_dim: int):
        super().__init__()
        self.lstm = nn.LSTM(input_dim, hidden_dim, batch_first=True, bidirectional=True)
        self.output_dim = 2 * hidden_dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if lean_applies(x) and bool(mask.all()):  # one sentence on the CPU: NumPy (easyfirst.model.fast.lean)
            lstm = self.lstm
            return lean_bilstm(x[0], *(getattr(lstm, name) for name in LSTM_WEIGHTS))[None]
        lengths = mask.sum(1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return out
