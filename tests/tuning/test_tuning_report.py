"""What a study found (easyfirst/tuning/report.py) and the best trial retrained (easyfirst/tuning/retrain.py),
on an in-memory Optuna study whose trials are made here by hand (no training)."""

from __future__ import annotations

import pytest
from rich.console import Console

from conftest import extra
from easyfirst.errors import InputError
from easyfirst.tuning.report import best_table, best_trials, counts, leave_out_far_trials, pictures
from easyfirst.tuning.retrain import mean_sd, parse_seeds, pm, trial_to_retrain

optuna = extra("optuna", "tune")
State = optuna.trial.TrialState
FLOAT = optuna.distributions.FloatDistribution(0.0, 0.5)


def trial(state, dev, dropout, epochs_done=3):
    return optuna.trial.create_trial(
        state=state,
        value=dev if state == State.COMPLETE else None,
        params={"model.dropout": dropout},
        distributions={"model.dropout": FLOAT},
        user_attrs={"dev": dev, "best_epoch": epochs_done, "epochs": 3},
        intermediate_values={e: dev for e in range(1, epochs_done + 1)},
    )


@pytest.fixture
def study():
    made = optuna.create_study(direction="maximize", storage=optuna.storages.InMemoryStorage())
    made.add_trial(trial(State.COMPLETE, 0.80, 0.1))
    made.add_trial(trial(State.COMPLETE, 0.90, 0.3))
    made.add_trial(trial(State.PRUNED, 0.95, 0.2, epochs_done=2))  # best dev, but cut short
    made.add_trial(optuna.trial.create_trial(state=State.FAIL, user_attrs={"error": "raised MemoryError"}))
    return made


def test_counts_say_how_many_trials_ended_each_way(study):
    assert counts(study) == "4 trials: 2 complete, 1 pruned, 1 failed"
    study.add_trial(optuna.trial.create_trial(state=State.FAIL, user_attrs={"interrupted": True}))
    assert counts(study) == "5 trials: 2 complete, 1 pruned, 1 failed, 1 interrupted (run again)"
    empty = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    assert counts(empty) == "0 trials: none yet"


def test_the_best_trials_go_by_dev_score_and_the_best_to_retrain_is_complete(study):
    assert [t.number for t in best_trials(study)] == [2, 1, 0]
    assert trial_to_retrain(study).number == 1  # the pruned trial never finished its epochs
    empty = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    with pytest.raises(InputError, match="no complete trial yet"):
        trial_to_retrain(empty)
    with pytest.raises(InputError, match=r"--trial 0: the study has no such trial \(it has no trials yet\)"):
        trial_to_retrain(empty, 0)


def test_retrain_takes_a_trial_chosen_by_number_only_if_it_is_complete(study):
    assert trial_to_retrain(study, 0).number == 0  # a complete trial below the best
    with pytest.raises(InputError, match=r"--trial 2: that trial was pruned \(complete trials: 0, 1\)"):
        trial_to_retrain(study, 2)
    with pytest.raises(InputError, match="--trial 3: that trial failed"):
        trial_to_retrain(study, 3)
    with pytest.raises(InputError, match=r"--trial 7: the study has no such trial \(trials 0–3\)"):
        trial_to_retrain(study, 7)


def test_the_table_has_a_column_per_trial_to_retrain(study):
    console = Console(width=120, record=True)
    console.print(best_table(study, "acc", 120))
    text = console.export_text()
    assert "#2" in text and "#1" in text and "#0" in text and "#3" not in text
    assert "dev acc" in text and "95.00" in text and "80.00" in text
    assert "model.dropout" in text and "pruned" in text
    narrow = Console(width=40, record=True)
    narrow.print(best_table(study, "acc", 40))
    assert "#2" in narrow.export_text() and "#0" not in narrow.export_text()  # as many as fit


def test_pictures_are_written_and_the_importances_wait_for_three_complete_trials(study, tmp_path):
    written, skipped = pictures(study, tmp_path, "acc")
    assert written == [tmp_path / "history.png", tmp_path / "epochs.png"]
    assert all(path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for path in written)
    assert skipped == ["importances.png (after 3 complete trials; 2 so far)"]
    empty = optuna.create_study(storage=optuna.storages.InMemoryStorage())
    assert pictures(empty, tmp_path, "acc")[1][:1] == ["history.png (after 1 complete trial; 0 so far)"]


def test_the_history_leaves_out_a_diverged_trial_and_says_so():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    scores = [0.923, 0.88, 0.941, 0.296, 0.413, 0.937, 0.939, 0.941, 0.94]  # the NER search's nine
    axes.scatter(range(len(scores)), scores)
    assert leave_out_far_trials(axes, scores) == 2  # the fence: 0.88 - 1.5 * (0.941 - 0.88)
    bottom, top = axes.get_ylim()
    assert bottom == pytest.approx(0.7885) and 0.413 < bottom < 0.88 and top > 0.941
    assert [t.get_text() for t in axes.texts] == ["2 trials below 78.9%, not shown"]
    figure, axes = plt.subplots()
    assert leave_out_far_trials(axes, [0.90, 0.91, 0.92, 0.93]) == 0 and not axes.texts  # none far off
    assert leave_out_far_trials(axes, [0.3, 0.9, 0.9]) == 0  # too few to tell what is far
    plt.close("all")


def test_seeds_are_ranges_or_lists():
    assert parse_seeds("1-5") == [1, 2, 3, 4, 5]
    assert parse_seeds("1-3,9, 2") == [1, 2, 3, 9]
    for bad in ("a", "3-1", "-2"):
        with pytest.raises(InputError, match="--seeds"):
            parse_seeds(bad)


def test_mean_and_sample_sd_of_the_seeds():
    stats = mean_sd([0.90, 0.92, 0.94])
    assert stats["mean"] == pytest.approx(0.92) and stats["sd"] == pytest.approx(0.02) and stats["n"] == 3
    assert pm(stats) == "92.00 ± 2.00"
    assert pm(mean_sd([0.5])) == "50.00"
