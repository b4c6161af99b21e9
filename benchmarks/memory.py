"""Peak resident memory per step, for the benchmarks (Linux: /proc/self)."""

from __future__ import annotations

import contextlib
from pathlib import Path


def reset_peak() -> None:
    """Start a new peak-RSS window (writing 5 to clear_refs resets VmHWM)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_mib() -> float:
    """Peak resident memory of this process since the last reset, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
