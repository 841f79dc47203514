"""The whole tagger: embedder → BiLSTM → (sketch decoder) → output layer (Eq. 6).

With a decoder, p_i = π(affine(concat(h_i, s_iᴺ))), or p_i = π(affine(s_iᴺ)) without the
concatenation (``concat = false``, the ablation of Table 4); the BiLSTM baseline (N = 0) predicts
from p_i = π(affine(h_i)) with the same encoder. π is the output mapping of the configured loss
(softmax, sparsemax or α-entmax; easyfirst.losses), or, with ``crf``, a linear-chain CRF over the
same scores (easyfirst.model.crf) whose per-word marginals are the output distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from easyfirst.data.batching import IGNORE, Batch
from easyfirst.data.outputs import OutputHead, switched_on
from easyfirst.data.vocab import Vocabularies
from easyfirst.losses import class_weight_vector, fenchel_young_loss, output_distribution
from easyfirst.model.crf import CRF, entity_scheme
from easyfirst.model.dropout import make_dropout
from easyfirst.model.embedder import Embedder
from easyfirst.model.encoder import BiLSTMEncoder
from easyfirst.model.heads import ExtraHeads, HeadLoss
from easyfirst.model.settings import LossConfig, ModelConfig
from easyfirst.model.sketch import SketchDecoder, WordScores


class EasyFirstTagger(nn.Module):
    """The model of ``m`` (the ``[model]`` settings) with the output objective ``loss`` (``[loss]``),
    over the words, affixes, features and tags of ``vocabs``; ``outputs``: the extra outputs its task
    declares (easyfirst.data.outputs), of which it has those ``m.output`` switches on. Each part is built
    from its own settings (``m.embedder``, ``m.encoder``, ``m.decoder``, ``m.output``). ``drawn=False``
    leaves the largest tables undrawn (:meth:`reset_parameters` skipped), for a saved state that replaces
    every weight (easyfirst.runs.load_model: GloVe's 200,000 words were half of en-ner's loading time)."""

    def __init__(
        self,
        m: ModelConfig,
        loss: LossConfig,
        vocabs: Vocabularies,
        outputs: Sequence[OutputHead] = (),
        drawn: bool = True,
    ):
        super().__init__()
        self.settings = m  # what easyfirst.backends.chooser reads to choose how each batch is computed
        self.backend = "auto"  # or a backend's name: forced (--backend), where it supports the batch
        d, out = m.decoder, m.output
        self.steps = d.sketch_steps
        self.v_init = d.v_init
        self.steps_beyond_length = d.steps_beyond_length
        self.concat = out.concat
        self.embedder = Embedder.from_settings(vocabs, m.embedder, drawn)
        # dropout on the embeddings, between BiLSTM layers and on the output layer's inputs
        # (easyfirst.model.dropout); modules without parameters, so a model's saved state is the same
        self.embedding_dropout = make_dropout(m.dropout_kind, m.dropout_at("embedding"))
        self.encoder = BiLSTMEncoder.from_settings(
            self.embedder.output_dim, m.encoder, make_dropout(m.dropout_kind, m.dropout_at("encoder"))
        )
        self.dropout = make_dropout(m.dropout_kind, m.dropout_at("output"))
        self.decoder = None
        output_in = self.encoder.output_dim
        if m.decodes:
            self.decoder = SketchDecoder.from_settings(
                self.encoder.output_dim, d, full_state=m.model == "nef-f"
            )
            output_in = output_in + d.sketch_dim if out.concat else d.sketch_dim
        self.output = nn.Linear(output_in, len(vocabs.tags))
        self.objective = loss
        tags = list(vocabs.tags.itos)
        # training-only, rebuilt from the config: kept out of the saved state
        self.register_buffer("class_weight", class_weight_vector(loss.class_weights, tags), persistent=False)
        self.crf = None
        if out.crf:
            scheme = entity_scheme(tags)
            constrained = scheme is not None if out.bio_constraints is None else out.bio_constraints
            self.crf = CRF(len(tags), tags if constrained else None, scheme or "bio")
        # extra outputs from the same features (easyfirst.model.heads); registered last, so that the other
        # parameters are initialised as in a model without them. A head over aligned words needs its
        # feature's embeddings.
        tables = self.embedder.features
        self.outputs = tuple(
            h for h in switched_on(outputs, out) if h.over != "aligned" or h.aligned in tables
        )
        self.heads = None
        if self.outputs:
            self.heads = ExtraHeads(output_in, m.encoder.hidden_dim, self.outputs, tables, m.dropout)
            self.head_loss = HeadLoss(loss, self.outputs)
        if drawn:
            self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot-uniform weight matrices and zero biases, as DyNet (the paper's toolkit) initialises;
        v of Eq. 2 then scaled by ``v_init`` (the spread of the first attention scores).

        PyTorch's default N(0, 1) embeddings train markedly worse with Adagrad here: the BiLSTM
        baseline reached 93.2% dev UPOS on EWT after 6 epochs with them, 94.6% with Glorot.
        """
        for name, parameter in self.named_parameters():
            if name.startswith("embedder.transformer."):  # pretrained weights, or the mix's own start
                continue
            if parameter is self.embedder.words.weight:
                self.embedder.reset_words()
            elif parameter.dim() >= 2:
                nn.init.xavier_uniform_(parameter)
            elif "bias" in name:
                nn.init.zeros_(parameter)
        for table in self.modules():
            if isinstance(table, nn.Embedding) and table.padding_idx is not None:
                with torch.no_grad():
                    table.weight[table.padding_idx].zero_()
        if self.decoder is not None:
            with torch.no_grad():
                self.decoder.v.weight.mul_(self.v_init)
        if self.crf is not None:
            self.crf.reset_parameters()

    def forward(self, batch: Batch, heads: bool = False, plan=None):
        """Tag scores ``(B, L, K)`` and the attention history ``(B, N, L)`` (None without a decoder); with
        ``heads``, also the extra outputs' scores (name → scores; empty for a model without them).

        ``plan``: the backends that compute the encoder and the decoder for this batch
        (easyfirst.backends.chooser.plan_for); None runs the model's own modules, the reference."""
        x = self.embedding_dropout(
            self.embedder(
                batch.words, batch.prefixes, batch.suffixes, batch.features, batch.tokens, batch.sources
            )
        )
        encoded = self.encoder(x, batch.mask) if plan is None else plan.encode(self.encoder, x, batch.mask)
        states = self.dropout(encoded)
        attention = None
        features = states
        if self.decoder is not None:
            scored = self.word_scores(states) if self.decoder.attention.scores == "output" else None
            arguments = (states, batch.mask, self.steps, scored, self.steps_beyond_length)
            sketch, attention = (
                self.decoder(*arguments) if plan is None else plan.decode(self.decoder, *arguments)
            )
            # contiguous: dropout draws its mask in memory order, and the generic loop's sketch is a
            # transposed view; so every backend drops the same units for one seed
            features = self.features(states, self.dropout(sketch.contiguous()))
        # every input of the output layer has been through dropout exactly once
        if not heads:
            return self.output(features), attention
        head_scores = {}
        if self.heads is not None:
            head_scores = self.heads(features, batch.mask, batch.heads, self.embedder.features)
        return self.output(features), attention, head_scores

    def word_scores(self, states: torch.Tensor) -> WordScores:
        """The output layer on concat(h_i, s_i) (s_i alone without concat) as a function of the sketches,
        for vanilla easy-first's choice of word (``hard`` attention), without gradient."""
        with torch.no_grad():
            weight, bias = self.output.weight, self.output.bias
            if not self.concat:
                return WordScores(bias.expand(*states.shape[:2], -1), weight)
            held = states.shape[-1]
            return WordScores(states @ weight[:, :held].T + bias, weight[:, held:])

    def features(self, states: torch.Tensor, sketch: torch.Tensor) -> torch.Tensor:
        """The output layer's input: concat(h_i, s_i) ``(B, L, D_h + D_s)``, or s_i alone without concat."""
        return torch.cat([states, sketch], dim=-1) if self.concat else sketch

    def loss(
        self,
        scores: torch.Tensor,
        gold: torch.Tensor,
        mask: torch.Tensor | None = None,
        reduction: str = "mean",
    ) -> torch.Tensor:
        """The training loss: scores ``(B, L, K)``, gold tag ids and mask ``(B, L)``.

        The configured Fenchel–Young loss, averaged over words (padding and unknown gold tags,
        ``IGNORE``, do not count); with the CRF, the sentences' negative log-likelihoods summed and
        divided by the number of words. ``reduction = "sum"``: summed over the words, not averaged
        (the paper's own code sums each sentence's word losses).
        """
        if self.crf is not None:
            mask = gold != IGNORE if mask is None else mask
            total = self.crf.nll(scores, gold, mask).sum()
            return total if reduction == "sum" else total / mask.sum()
        o = self.objective
        return fenchel_young_loss(
            scores,
            gold,
            alpha=o.entmax_alpha,
            label_smoothing=o.label_smoothing,
            temperature=o.temperature,
            weight=self.class_weight,
            ignore_index=IGNORE,
            reduction=reduction,
        )

    def describe_output(self) -> str:
        """The output layer in words, for the training log."""
        if self.crf is not None:
            scheme = self.crf.scheme
            return "linear-chain CRF" + (f" with {scheme.upper()} constraints" if scheme else "")
        o = self.objective
        words = [f"{o.loss} loss (α = {o.entmax_alpha:g})"]
        words += [f"label smoothing ε = {o.label_smoothing:g}"] if o.label_smoothing else []
        words += [f"temperature T = {o.temperature:g}"] if o.temperature != 1 else []
        words += [f"class weights {o.class_weights}"] if o.class_weights else []
        for head in self.outputs:  # easyfirst.model.heads
            words += [
                f"{head.what} (class weights {getattr(o, head.weights)})" if head.weights else head.what
            ]
        return ", ".join(words)

    def predict(
        self, scores: torch.Tensor, mask: torch.Tensor, distribution: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tags ``(B, L)`` and the output distribution ``(B, L, K)`` for scores ``(B, L, K)``.

        Per word: the argmax and π(scores) of the loss's mapping (T = 1); with the CRF, the Viterbi
        sequence and the forward–backward marginals. Padding gets tag 0 (and, with the CRF, zeros).
        Without ``distribution`` (nobody reads it: tagging without probabilities), None in its place:
        the CRF's marginals are a forward–backward pass, 13% of tagging CoNLL-2003 test with en-ner.
        """
        if self.crf is not None:
            return self.crf.viterbi(scores, mask), self.crf.marginals(scores, mask) if distribution else None
        if not distribution:
            return scores.argmax(-1), None
        return scores.argmax(-1), output_distribution(scores, self.objective.entmax_alpha)
