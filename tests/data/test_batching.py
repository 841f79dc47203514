"""Length buckets with a cap on padded tokens (used when tagging and evaluating)."""

from __future__ import annotations

import random

from easyfirst.data.buckets import bucket_indices


def test_token_cap_bounds_padded_size_and_keeps_every_sentence_once():
    rng = random.Random(0)
    lengths = [rng.randint(1, 120) for _ in range(500)] + [400]  # one longer than the cap
    batches = bucket_indices(lengths, batch_size=64, max_tokens=300)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[i] for i in batch)
        assert len(batch) <= 64
        assert padded <= 300 or len(batch) == 1, (batch, padded)
    assert [len(b) for b in batches if lengths[b[0]] == 400] == [1]
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat)  # deterministic, increasing length


def test_without_a_cap_batches_are_cut_by_count_only():
    lengths = [5, 1, 3, 2, 4]
    assert bucket_indices(lengths, batch_size=2) == [[1, 3], [2, 4], [0]]
    assert bucket_indices(lengths, batch_size=2, max_tokens=6) == [[1, 3], [2], [4], [0]]
