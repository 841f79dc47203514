"""The BiLSTM encoder: embeddings ``(B, L, D_in)`` → states ``H`` ``(B, L, 2·hidden)``, zero on padding.

``layers`` BiLSTMs are stacked (``[model] encoder_layers``), each reading the states of the one below
through ``between`` (the dropout between layers, ``encoder_dropout``). The first layer is ``lstm``, so a
one-layer model's saved weights keep the names they always had (``encoder.lstm.weight_ih_l0``); the
layers above are ``upper.0``, ``upper.1``, ... Each layer is its own ``nn.LSTM`` rather than one
``nn.LSTM(num_layers=k)``, whose built-in dropout between layers can only be naive.

This is the reference: ``nn.LSTM`` over packed sequences. Without gradients on the CPU (tagging) each
direction runs instead over the padded batch (:meth:`BiLSTMEncoder.padded`): the same LSTM, called
through ``torch.lstm``, whose padded input takes oneDNN's kernel where packed input takes the generic
time loop (1.1-1.4x faster for the BiLSTM alone at the sizes tagging runs, docs/studies/speed.md). A
backend may compute the same function faster for some batches (easyfirst.backends: on the CPU, in loops
compiled by Numba).
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
        """States ``(B, L, 2H)`` of embeddings ``x`` ``(B, L, D_in)``, zeros where ``mask`` ``(B, L)`` is
        false: :meth:`padded` on the CPU where no gradient is wanted, else :meth:`packed` (also for layers
        that are not ``nn.LSTM``'s, e.g. dynamically quantized ones, which keep no float weights)."""
        wants_gradients = torch.is_grad_enabled() and (
            x.requires_grad or any(p.requires_grad for p in self.parameters())
        )
        if x.device.type == "cpu" and not wants_gradients and all(type(k) is nn.LSTM for k in self.layers):
            return self.padded(x, mask)
        return self.packed(x, mask)

    def packed(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` through packed sequences (training, and every other device)."""
        lengths = mask.sum(1).cpu()
        for k, lstm in enumerate(self.layers):
            if k:
                x = self.between(x)
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, _ = lstm(packed)
            x, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return x

    def padded(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` on the padded batch, without gradients: ``(B, L, 2H)``, zeros on padding.

        The forward direction reads the batch as it is (a word's state does not depend on the padding
        after it); the backward one reads each sentence's words reversed in place (its padding still
        last), and its states are put back in order."""
        size, length = mask.shape
        steps = torch.arange(length, device=mask.device)
        lengths = mask.sum(1, keepdim=True)
        # position t of sentence b <-> position n_b - 1 - t (padding stays): its own inverse
        reverse = torch.where(steps < lengths, lengths - 1 - steps, steps).unsqueeze(-1)
        keep = mask.unsqueeze(-1).to(x.dtype)
        for k, lstm in enumerate(self.layers):
            if k:
                x = self.between(x)
            start = x.new_zeros(1, size, lstm.hidden_size)
            states = []
            for direction in ("", "_reverse"):
                weights = [getattr(lstm, name + direction) for name in _LSTM_WEIGHTS]
                read = x if not direction else x.gather(1, reverse.expand(-1, -1, x.shape[2]))
                # (input, (h0, c0), weights, biases, layers, dropout, training, bidirectional, batch_first)
                out = torch.lstm(read, (start, start), weights, True, 1, 0.0, False, False, True)[0]
                states.append(out if not direction else out.gather(1, reverse.expand(-1, -1, out.shape[2])))
            x = torch.cat(states, dim=-1).mul_(keep)
        return x


# one direction's weights of an nn.LSTM layer, in torch.lstm's order (with "_reverse": the backward's)
_LSTM_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
