"""What an interrupted `easyfirst train` says it kept and lost (easyfirst.cli.train.what_is_kept)."""

from __future__ import annotations

import os
import re
import time

import torch

from easyfirst.cli.train import what_is_kept
from easyfirst.resources import CHECKPOINT_FILE


def test_the_training_lost_is_this_commands_not_the_checkpoints_age(tmp_path):
    """A run resumed from a checkpoint written a day ago and interrupted 5 s later lost 5 s of training,
    not a day (it said "lost: the 1 h 51 min of training since it" after a few seconds)."""
    path = tmp_path / CHECKPOINT_FILE
    torch.save({"epoch": 26, "step": 0, "best": {"epoch": 24}}, path)
    day_ago = time.time() - 86_400
    os.utime(path, (day_ago, day_ago))
    said = what_is_kept(tmp_path, began=time.time() - 5)
    assert said.startswith("kept: the checkpoint at the end of epoch 25 and the best model so far (epoch 24)")
    lost = re.search(r"lost: the (\d+\.\d) s of training since it$", said)
    assert lost is not None and 5.0 <= float(lost.group(1)) < 60, said  # seconds, not the day
    # a checkpoint written while this command ran: the time since it
    os.utime(path, (time.time() - 60, time.time() - 60))
    assert "lost: the 1 min" in what_is_kept(tmp_path, began=time.time() - 3600)
    assert what_is_kept(tmp_path / "none", began=time.time()) is None
