"""Calibration (ECE) and sparsity on examples computed by hand."""

from __future__ import annotations

import pytest
import torch

from easyfirst.metrics import distribution_report, expected_calibration_error, mean_support


def test_ece_of_a_hand_computed_example():
    # bins (0.9, 1]: 0.95, 0.95 → accuracy 1/2, confidence 0.95, gap 0.45 (2 words)
    #      (0.5, 0.6]: 0.55, 0.55 → accuracy 1, confidence 0.55, gap 0.45 (2 words)
    #      (0.2, 0.3]: 0.25 → accuracy 0, confidence 0.25, gap 0.25 (1 word)
    # ECE = (2·0.45 + 2·0.45 + 1·0.25) / 5 = 0.41
    confidence = torch.tensor([0.95, 0.95, 0.55, 0.55, 0.25])
    correct = torch.tensor([True, False, True, True, False])
    assert expected_calibration_error(confidence, correct) == pytest.approx(0.41, abs=1e-6)
    # one bin holding everything: |mean accuracy − mean confidence|
    assert expected_calibration_error(confidence, correct, bins=1) == pytest.approx(abs(0.6 - 0.65), abs=1e-6)
    # a confidence of 1 goes to the last bin, 0 to the first; a perfect model scores 0
    assert expected_calibration_error(torch.tensor([1.0, 0.0]), torch.tensor([True, False])) == 0.0


def test_mean_support_counts_exact_nonzeros():
    p = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.2, 0.3, 0.5], [1e-30, 0.0, 1.0]])
    assert mean_support(p) == pytest.approx((2 + 1 + 3 + 2) / 4)


def test_distribution_report_uses_the_predicted_tags_probability():
    probabilities = [torch.tensor([[0.7, 0.3], [0.0, 1.0]]), torch.tensor([[0.45, 0.55]])]
    predicted = [torch.tensor([0, 1]), torch.tensor([0])]  # a CRF may predict a tag that is not the argmax
    gold = [torch.tensor([0, 0]), torch.tensor([-100])]  # an unknown gold tag counts as wrong
    report = distribution_report(probabilities, predicted, gold)
    # bins: 0.7 (correct) → |1 − 0.7|; 1.0 (wrong) → |0 − 1|; 0.45 (wrong) → |0 − 0.45|
    assert report["ece"] == pytest.approx((0.3 + 1.0 + 0.45) / 3)
    assert report["mean_support"] == pytest.approx((2 + 1 + 2) / 3)
