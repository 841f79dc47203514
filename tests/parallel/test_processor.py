"""The processor a run records beside its seconds per epoch (metrics.json, the model card)."""

from __future__ import annotations

import io

from easyfirst.parallel import cores

CPUINFO = "processor\t: 0\nvendor_id\t: Example\nmodel name\t: Example CPU 3000 @ 2.00GHz\nflags\t\t: fpu\n"


def test_the_processor_is_the_model_name_line_of_cpuinfo(monkeypatch):
    monkeypatch.setattr(cores, "open", lambda *a, **k: io.StringIO(CPUINFO), raising=False)
    assert cores.processor() == "Example CPU 3000 @ 2.00GHz"


def test_without_cpuinfo_the_processor_falls_back_to_what_platform_says(monkeypatch):
    def missing(*args, **kwargs):
        raise FileNotFoundError("/proc/cpuinfo")

    monkeypatch.setattr(cores, "open", missing, raising=False)
    monkeypatch.setattr(cores.platform, "processor", lambda: "")
    monkeypatch.setattr(cores.platform, "machine", lambda: "riscv64")
    assert cores.processor() == "riscv64"
