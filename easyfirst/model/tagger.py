"""The whole tagger: embedder → BiLSTM → (sketch decoder) → output layer (Eq. 6).

With a decoder, p_i = softmax(affine(concat(h_i, s_iᴺ))), or p_i = softmax(affine(s_iᴺ)) without the
concatenation (``concat = false``, the ablation of Table 4); the BiLSTM baseline (N = 0) predicts from
p_i = softmax(affine(h_i)) with the same encoder.
"""

from __future__ import annotations

import torch
from torch import nn

from easyfirst.config import Config
from easyfirst.data.batching import IGNORE, Batch
from easyfirst.data.features import active_features
from easyfirst.data.vocab import Vocabularies
from easyfirst.model.embedder import Embedder
from easyfirst.model.encoder import BiLSTMEncoder
from easyfirst.model.sketch import SketchDecoder


class EasyFirstTagger(nn.Module):
    def __init__(self, config: Config, vocabs: Vocabularies):
        super().__init__()
        m = config.model
        self.steps = m.sketch_steps
        self.concat = m.concat
        self.embedder = Embedder(vocabs, m.word_dim, m.affix_dim, active_features(m))
        self.encoder = BiLSTMEncoder(self.embedder.output_dim, m.hidden_dim)
        self.dropout = nn.Dropout(m.dropout)
        self.decoder = None
        output_in = self.encoder.output_dim
        if config.decodes:
            self.decoder = SketchDecoder(
                self.encoder.output_dim,
                sketch_dim=m.sketch_dim,
                attention_dim=m.attention_dim,
                window=m.window,
                full_state=m.model == "nef-f",
                attention=m.attention,
                temperature=m.attention_temperature,
                coverage_penalty=m.coverage_penalty,
            )
            output_in = output_in + m.sketch_dim if m.concat else m.sketch_dim
        self.output = nn.Linear(output_in, len(vocabs.tags))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weight matrices and zero biases, as DyNet (the paper's toolkit) initialises.

        PyTorch's default N(0, 1) embeddings train markedly worse with Adagrad here: the BiLSTM
        baseline reached 93.2% dev UPOS on EWT after 6 epochs with them, 94.6% with Glorot.
        """
        for name, parameter in self.named_parameters():
            if parameter.dim() >= 2:
                nn.init.xavier_uniform_(parameter)
            elif "bias" in name:
                nn.init.zeros_(parameter)
        tables = (
            self.embedder.words,
            self.embedder.prefixes,
            self.embedder.suffixes,
            *self.embedder.features.values(),
        )
        for table in tables:
            with torch.no_grad():
                table.weight[table.padding_idx].zero_()

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tag scores ``(B, L, K)`` and the attention history ``(B, N, L)`` (None without a decoder)."""
        x = self.dropout(self.embedder(batch.words, batch.prefixes, batch.suffixes, batch.features))
        states = self.dropout(self.encoder(x, batch.mask))
        attention = None
        features = states
        if self.decoder is not None:
            sketch, attention = self.decoder(
                states, batch.mask, self.steps, lambda s: self.output(self.features(states, s))
            )
            features = self.features(states, self.dropout(sketch))
        # every input of the output layer has been through dropout exactly once
        return self.output(features), attention

    def features(self, states: torch.Tensor, sketch: torch.Tensor) -> torch.Tensor:
        """The output layer's input: concat(h_i, s_i) ``(B, L, D_h + D_s)``, or s_i alone without concat."""
        return torch.cat([states, sketch], dim=-1) if self.concat else sketch

    @staticmethod
    def loss(scores: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
        """Mean token cross-entropy; padding and unknown gold tags (``IGNORE``) do not count."""
        return nn.functional.cross_entropy(scores.flatten(0, 1), gold.flatten(), ignore_index=IGNORE)
