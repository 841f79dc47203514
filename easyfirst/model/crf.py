"""A batched linear-chain CRF over the tag scores of Eq. 6 (the easy-first paper's §5.2 CRF layer).

The score of a tag sequence y_1..y_n of a sentence with emission scores e (the ``(B, L, K)`` output of
the tagger: BiLSTM, NEF-S or NEF-F) is

    s(y) = start[y_1] + Σ_t e_t[y_t] + Σ_{t>1} transitions[y_{t−1}, y_t] + end[y_n],

and p(y) = exp s(y) / Z. The log-partition log Z comes from the forward algorithm in log space, the
best sequence from Viterbi, and the per-word marginals p(y_t = k) from forward–backward.

Masks: ``mask`` ``(B, L)`` is true on real words; each row must be a prefix of trues (padding at the
end) with at least one true. Padded positions do not count anywhere.

Scheme constraints (optional), for entity tags in BIO or BIOES (easyfirst.data.schemes): in BIO, I-X
may only follow B-X or I-X, and no sentence starts with I-X; in BIOES, after B-X or I-X only I-X or E-X
may come, after O, E-Y or S-Y only O, B-Z or S-Z, no sentence starts with I-X or E-X, and none ends with
B-X or I-X. Forbidden
transitions get a score of −10⁴ (as AllenNLP does) rather than −∞, so a training sentence that breaks
the scheme (IOB1 data) costs a large but finite loss instead of a NaN; exp(−10⁴) is 0 in float32 and
float64, so Z, Viterbi and the marginals are those of the constrained model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch
from torch import nn

from easyfirst.data.schemes import learned_scheme

FORBIDDEN = -1.0e4
BIO_TAG = re.compile(r"^(?:O|[BI]-.+)$")


def entity_scheme(tags: Sequence[str]) -> str | None:
    """``"bioes"`` when every tag is ``O`` or ``B/I/E/S-X`` and some are ``E-`` or ``S-``; ``"bio"`` when
    every tag is ``O``, ``B-X`` or ``I-X`` and at least one is ``I-X``; else None."""
    if tags and learned_scheme(tags) == "bioes":  # the tag grammar of easyfirst.data.schemes
        return "bioes"
    if tags and all(BIO_TAG.match(t) for t in tags) and any(t.startswith("I-") for t in tags):
        return "bio"
    return None


def is_bio(tags: Sequence[str]) -> bool:
    """Whether every tag is ``O``, ``B-X`` or ``I-X`` and at least one is ``I-X``."""
    return entity_scheme(tags) == "bio"


def bio_allowed(tags: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Allowed first tags ``(K,)`` and allowed transitions ``(K, K)`` (``[i, j]``: tag i → tag j) in BIO."""
    start, allowed, _ = scheme_allowed(tags, "bio")
    return start, allowed


def scheme_allowed(tags: Sequence[str], scheme: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Allowed first tags ``(K,)``, transitions ``(K, K)`` (``[i, j]``: tag i → tag j) and last tags
    ``(K,)`` of ``scheme`` (bio or bioes; see the module)."""
    if scheme not in ("bio", "bioes"):
        raise ValueError(f"scheme must be bio or bioes, not {scheme!r}")
    k = len(tags)
    start = torch.ones(k, dtype=torch.bool)
    end = torch.ones(k, dtype=torch.bool)
    allowed = torch.ones(k, k, dtype=torch.bool)
    inside = ("I", "E") if scheme == "bioes" else ("I",)  # what continues an entity
    for j, tag in enumerate(tags):
        prefix, kind = tag[:1], tag[2:]
        if tag != "O" and prefix in inside:
            start[j] = False
            for i, previous in enumerate(tags):
                allowed[i, j] = previous in (f"B-{kind}", f"I-{kind}")
        elif scheme == "bioes":  # O, B- and S- may only follow an entity's end (or O)
            for i, previous in enumerate(tags):
                allowed[i, j] = previous == "O" or previous[:1] in ("E", "S")
        if scheme == "bioes" and tag != "O" and prefix in ("B", "I"):
            end[j] = False
    return start, allowed, end


class CRF(nn.Module):
    """Linear-chain CRF over ``num_tags`` tags; ``constrain_tags`` (tag names) turns on the constraints
    of ``scheme`` (bio or bioes)."""

    def __init__(self, num_tags: int, constrain_tags: Sequence[str] | None = None, scheme: str = "bio"):
        super().__init__()
        self.num_tags = num_tags
        self.start = nn.Parameter(torch.empty(num_tags))
        self.end = nn.Parameter(torch.empty(num_tags))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags))
        start_penalty = torch.zeros(num_tags)
        transition_penalty = torch.zeros(num_tags, num_tags)
        end_penalty = torch.zeros(num_tags)
        self.scheme = None  # the scheme whose constraints apply, when any transition is forbidden
        if constrain_tags is not None:
            if len(constrain_tags) != num_tags:
                raise ValueError("constrain_tags must name every tag")
            start_ok, allowed, end_ok = scheme_allowed(constrain_tags, scheme)
            start_penalty[~start_ok] = FORBIDDEN
            transition_penalty[~allowed] = FORBIDDEN
            end_penalty[~end_ok] = FORBIDDEN
            if not (start_ok.all() and allowed.all() and end_ok.all()):
                self.scheme = scheme
        # derived from the tag names at construction: not part of the saved state
        self.register_buffer("start_penalty", start_penalty, persistent=False)
        self.register_buffer("transition_penalty", transition_penalty, persistent=False)
        self.register_buffer("end_penalty", end_penalty, persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for parameter in (self.start, self.end, self.transitions):
            nn.init.uniform_(parameter, -0.1, 0.1)  # as pytorch-crf

    def potentials(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Start ``(K,)``, transition ``(K, K)`` and end ``(K,)`` scores with the constraints applied."""
        return (
            self.start + self.start_penalty,
            self.transitions + self.transition_penalty,
            self.end + self.end_penalty,
        )

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """log Z per sentence ``(B,)`` by the forward algorithm; ``emissions`` ``(B, L, K)``."""
        return torch.logsumexp(self._forward(emissions, mask)[-1] + self.potentials()[2], dim=-1)

    def score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """s(y) per sentence ``(B,)`` for gold ``tags`` ``(B, L)`` (values at padding are ignored)."""
        start, transitions, end = self.potentials()
        mask = mask.bool()
        tags = tags.masked_fill(~mask, 0)
        if (tags < 0).any():
            raise ValueError("gold tags of real words must be tag ids (the CRF cannot ignore one word)")
        m = mask.to(emissions.dtype)
        total = start[tags[:, 0]] + (emissions.gather(-1, tags.unsqueeze(-1)).squeeze(-1) * m).sum(1)
        total = total + (transitions[tags[:, :-1], tags[:, 1:]] * m[:, 1:]).sum(1)
        last = tags.gather(1, (mask.sum(1, keepdim=True) - 1).clamp_min(0)).squeeze(1)
        return total + end[last]

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """−log p(tags) per sentence ``(B,)``."""
        return self.log_partition(emissions, mask) - self.score(emissions, tags, mask)

    def _forward(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        """Forward log-scores α_t ``(B, K)`` for t = 1..L (α stays fixed past each sentence's end)."""
        start, transitions, _ = self.potentials()
        alpha = [start + emissions[:, 0]]
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha[-1].unsqueeze(2) + transitions, dim=1) + emissions[:, t]
            alpha.append(torch.where(mask[:, t, None], step, alpha[-1]))
        return alpha

    def marginals(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """p(y_t = k | sentence) by forward–backward: ``(B, L, K)``, rows sum to 1, zeros at padding."""
        _, transitions, end = self.potentials()
        alpha = self._forward(emissions, mask)
        beta = [end.expand_as(alpha[0])]  # β at the last real word of every sentence is the end score
        for t in range(emissions.shape[1] - 2, -1, -1):
            step = torch.logsumexp(transitions + (emissions[:, t + 1] + beta[0]).unsqueeze(1), dim=2)
            beta.insert(0, torch.where(mask[:, t + 1, None], step, end.expand_as(step)))
        marginal = torch.softmax(torch.stack(alpha, 1) + torch.stack(beta, 1), dim=-1)
        return marginal * mask.unsqueeze(-1).to(marginal.dtype)

    def viterbi(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The highest-scoring tag sequence per sentence: ``(B, L)`` tag ids, 0 at padding."""
        start, transitions, end = self.potentials()
        batch, length, k = emissions.shape
        score = start + emissions[:, 0]
        keep = torch.arange(k, device=emissions.device).expand(batch, k)
        pointers = []
        for t in range(1, length):
            best, previous = (score.unsqueeze(2) + transitions).max(dim=1)
            inside = mask[:, t, None]
            score = torch.where(inside, best + emissions[:, t], score)
            pointers.append(torch.where(inside, previous, keep))  # past the end: follow the same tag back
        tag = (score + end).argmax(-1)
        path = [tag]
        for previous in reversed(pointers):
            tag = previous.gather(1, tag.unsqueeze(1)).squeeze(1)
            path.insert(0, tag)
        return torch.stack(path, 1).masked_fill(~mask.bool(), 0)
