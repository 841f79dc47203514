"""The Python API: load a trained model and tag tokenized sentences.

>>> from easyfirst import Tagger
>>> tagger = Tagger.load()                      # the bundled English UPOS model
>>> tagger.tag([["The", "dog", "barks", "."]])
[['DET', 'NOUN', 'VERB', 'PUNCT']]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

import torch

from easyfirst.data.batching import INFERENCE_MAX_TOKENS, encode, iterate_batches
from easyfirst.model.sketch import sentence_steps
from easyfirst.runs import load_model

DEFAULT_MODEL = "en_ewt_upos"


def default_model_path() -> Path:
    """The folder of the English UPOS model shipped inside the package."""
    return Path(str(resources.files("easyfirst.resources") / DEFAULT_MODEL))


class Tagger:
    """A trained tagger, ready for inference (dropout off, no gradients)."""

    def __init__(self, model, config, vocabs, device: str | torch.device = "cpu"):
        self.model, self.config, self.vocabs, self.device = model, config, vocabs, torch.device(device)

    @classmethod
    def load(cls, path: str | Path | None = None, device: str | torch.device = "cpu") -> Tagger:
        """Load a model folder written by ``easyfirst train``; None loads the bundled default model."""
        model, config, vocabs = load_model(default_model_path() if path is None else path, device)
        return cls(model, config, vocabs, device)

    @property
    def tags(self) -> list[str]:
        return list(self.vocabs.tags.itos)

    def tag(
        self,
        sentences: Sequence[Sequence[str]],
        *,
        return_attention: bool = False,
        return_probabilities: bool = False,
        batch_size: int = 256,
        max_tokens: int | None = INFERENCE_MAX_TOKENS,
        extras: Sequence[Mapping] | None = None,
    ):
        """Tag lists of words; ``extras[k]`` holds sentence k's inputs beside its words, for models
        that use them (quality estimation: ``{"source": words, "alignment": [(i, j), ...]}``).

        Sentences are sorted by length and tagged in batches of at most ``batch_size`` sentences and
        ``max_tokens`` padded tokens (None: no cap; on a GPU a larger cap may be faster).

        Returns a list of tag lists; with ``return_attention`` and/or ``return_probabilities``, a tuple
        ``(tags, attention, probabilities)`` of those asked for, in that order. ``attention[k]`` is
        sentence k's ``(N, L)`` tensor of αⁿ (rows: sketch steps, columns: words; ``(0, L)`` for a model
        without sketch steps). ``probabilities[k]`` is its ``(L, K)`` output distribution over the tags
        ``self.tags``: softmax, sparsemax or α-entmax of the scores, as trained (exact zeros for α > 1),
        or the CRF's per-word marginals.
        """
        tags: list[list[str]] = [[] for _ in sentences]
        attention: list[torch.Tensor] = [torch.zeros(0, 0) for _ in sentences]
        probabilities: list[torch.Tensor] = [torch.zeros(0, len(self.tags)) for _ in sentences]
        keep = [k for k, s in enumerate(sentences) if len(s) > 0]
        items = [encode(self.vocabs, sentences[k], extra=extras[k] if extras else None) for k in keep]
        itos = self.vocabs.tags.itos
        with torch.inference_mode():
            for batch in iterate_batches(items, batch_size, max_tokens=max_tokens):
                batch = batch.to(self.device)
                scores, alpha = self.model(batch)
                best, distribution = (t.cpu() for t in self.model.predict(scores, batch.mask))
                lengths = batch.lengths.tolist()
                if return_attention:  # each sentence's rows of the attention history: the steps it ran
                    steps = sentence_steps(batch.lengths, self.model.steps, self.model.steps_beyond_length)
                    steps = steps.tolist()
                for row, index in enumerate(batch.order):
                    k, n = keep[index], lengths[row]
                    tags[k] = [itos[t] for t in best[row, :n].tolist()]
                    if return_attention:
                        matrix = alpha[row, : steps[row], :n] if alpha is not None else torch.zeros(0, n)
                        attention[k] = matrix.float().cpu().clone()
                    if return_probabilities:
                        probabilities[k] = distribution[row, :n].float().clone()
        for k, sentence in enumerate(sentences):
            if not sentence:
                attention[k] = torch.zeros(0, 0)
        extra = [
            x for x, asked in ((attention, return_attention), (probabilities, return_probabilities)) if asked
        ]
        return (tags, *extra) if extra else tags
