"""Start-up time of the CLI: the median of several runs of ``collc --version``, ``collc
--help`` and a small ``collc compile`` (a 4-rank ring all-reduce), each a fresh process, the
heavy modules ``import collc.cli`` loads (there should be none) and those the compile loads::

    python -m benchmarks.bench_startup [--runs 5]

Issue 12's targets: --version <= 0.3 s, --help <= 0.4 s, the small compile <= 0.8 s.
With ``PYTHONDONTWRITEBYTECODE`` set (the benchmark says so) no bytecode is cached: every run
compiles collc's own modules from source, which an installed collc does once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "networkx", "lark", "google.protobuf", "ortools", "matplotlib", "optuna", "ray")


def _median(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    collc = [sys.executable, "-m", "collc"]
    probe = (
        "import sys, collc.cli; "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or 'none')"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    print(f"heavy modules loaded by `import collc.cli`: {loaded}")
    print(f"collc --version    {_median([*collc, '--version'], a.runs):.3f} s (median of {a.runs})")
    print(f"collc --help       {_median([*collc, '--help'], a.runs):.3f} s")
    with tempfile.TemporaryDirectory() as tmp:
        args = ["compile", str(ROOT / "examples" / "allreduce_ring.py"), "-o"]
        args += [str(Path(tmp) / "out"), "--", "4", "1"]
        median = _median([*collc, *args], a.runs)
        print(f"collc compile      {median:.3f} s (examples/allreduce_ring.py 4 1)")
        probe = (
            "import sys\nfrom click.testing import CliRunner\nfrom collc.cli import cli\n"
            f"CliRunner().invoke(cli, {args!r})\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or 'none')"
        )
        loaded = subprocess.run(
            [sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        print(f"heavy modules loaded by that compile: {loaded}")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("PYTHONDONTWRITEBYTECODE is set: no bytecode cache, each run compiles the sources")


if __name__ == "__main__":
    main()
