"""Run ``easyfirst train`` as one of torchrun's processes, recording every file this process creates or
writes (Python audit events), and write them at exit as a JSON list into ``$WRITES_DIR/<rank>.json``
(a file per process: two processes' long lines on one stdout pipe interleave).

Used by tests/training/test_distributed.py:  python -m torch.distributed.run --nproc_per_node 2 THIS train ...
"""

from __future__ import annotations

import atexit
import json
import os
import sys

WRITTEN: list[str] = []


def audit(event: str, args: tuple) -> None:
    if event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        mode, flags = args[1] or "r", args[2] or 0
        if any(c in mode for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            WRITTEN.append(os.fsdecode(args[0]))
    elif event in ("os.rename", "os.replace"):  # (src, dst, src_dir_fd, dst_dir_fd)
        WRITTEN.append(os.fsdecode(args[1]))
    elif event in ("os.mkdir", "tempfile.mkstemp"):  # (path, ...)
        WRITTEN.append(os.fsdecode(args[0]))


def report() -> None:
    written = list(WRITTEN)  # before the report's own file is opened
    with open(os.path.join(os.environ["WRITES_DIR"], f"{os.environ.get('RANK')}.json"), "w") as out:
        json.dump(written, out)


if __name__ == "__main__":
    sys.addaudithook(audit)
    atexit.register(report)
    from easyfirst.cli import main

    sys.argv = ["easyfirst", *sys.argv[1:]]
    main()
