"""The threads a library call computes with, and gives back afterwards: :func:`held_threads`.

A :class:`~easyfirst.api.Tagger` runs inside other people's programs, on cores other work shares. With
torch's default (one intra-op thread per core) each operation is split among OpenMP threads that wait
for one another, spinning, and a thread whose core is busy elsewhere makes the others wait: on the
project's loaded 2-core machine, ``Tagger.tag`` on torch's two threads did a sixteenth of the work per
CPU second that it did on one, and a twenty-ninth with a spinning process on the other core
(docs/api.md, "Threads"). So a call computes with the Tagger's own count, one by default.

torch has no per-call setting: ``torch.set_num_threads`` is the process's. So the count is set when a
call starts and what the call found is set back when it ends, also when it raises; the BLAS libraries
that NumPy (and SciPy) load (through threadpoolctl) are held at the same count and set back likewise.
The inter-op pool (``torch.set_num_interop_threads``) is never touched. Calls that overlap, from several
threads of the caller (the server's worker, a web app's handlers), share one hold: the first to start
saves the settings, the last to end sets them back. While a call runs, other torch work of the process
computes with the call's count too; a library first loaded during a call (SciPy's BLAS, by Numba's
kernels) is not set back, as its setting before the call did not exist.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_holds = 0  # calls running with a hold now
_found: tuple[int, object] | None = None  # what the first of them found: torch's count, the BLAS limiter
_controller: ThreadpoolController | None = None
_modules = -1  # len(sys.modules) when _controller looked for libraries: a new import may bring a BLAS


def check_threads(threads: int | None) -> int | None:
    """``threads`` if it is a count of threads (an int ≥ 1) or None; a ValueError otherwise."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(
            f"threads: a whole number of at least 1, or None (the process's own), not {threads!r}"
        )
    return threads


def _blas() -> ThreadpoolController:
    """The thread pools of the libraries loaded in this process, looked for again after an import (a
    look costs about 0.2 ms, a tenth of tagging one sentence; reading and setting them, microseconds)."""
    global _controller, _modules
    if _controller is None or len(sys.modules) != _modules:
        _controller, _modules = ThreadpoolController(), len(sys.modules)
    return _controller


@contextmanager
def held_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads and the BLAS libraries' held at ``threads`` inside the block, and set back
    to what the first of the overlapping blocks found when the last ends (also on an exception). None:
    nothing is touched (the verbs, which set their own)."""
    global _holds, _found
    if threads is None:
        yield
        return
    with _lock:
        if _holds == 0:
            limiter = _blas().limit(limits=threads, user_api="blas")  # saves what it changes
            _found = (torch.get_num_threads(), limiter)
        else:
            _blas().limit(limits=threads, user_api="blas")  # what the first hold saved is set back
        _holds += 1
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
    try:
        yield
    finally:
        with _lock:
            _holds -= 1
            if _holds == 0 and _found is not None:
                count, limiter = _found
                _found = None
                limiter.restore_original_limits()
                if torch.get_num_threads() != count:
                    torch.set_num_threads(count)
