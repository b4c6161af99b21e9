"""Mutation campaigns for ET output folders and topology specs (issue 10).

Folder campaign: mutants of two small output folders (`tests.hardening.mutants`: truncated,
bit-flipped, swapped and deleted rank files, edited manifests), each given to ``collc
verify``, ``simulate``, ``inspect`` and ``inspect --json``. Spec campaign: mutated topology
specs given to ``collc bounds``, ``synthesize`` (TACOS) and ``synthesize -a ring``. Every CLI
call runs in a forked child, so a hang is cut at ``--timeout`` seconds and each call's peak
resident memory is measured on its own. Prints, per class, how many calls ended with a result
(ok), a wrong-program verdict or one-line error (refused), a traceback, a hang or a peak over
``--memory-gib``; then the slowest call, the largest peak, and every bad case with its seed::

    python -m benchmarks.bench_mutants [--cases 1000] [--seed 1] [--campaign both]

``--cases`` is per class for folders (5 classes) and in all for specs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.memory import peak_mib, reset_peak
from tests.hardening.mutants import (
    FOLDER_CLASSES,
    SPEC_COMMANDS,
    acceptable,
    make_base,
    mutate_folder,
    mutate_spec,
    run_cli,
)

FOLDER_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("verify",),
    ("simulate",),
    ("inspect",),
    ("inspect", "--json"),
)
SPEC_NAMES = ("bounds", "synthesize", "synthesize-ring")
_VERDICTS = ("ok", "refused", "traceback", "hang", "memory")


def _child(args: list[str], write_fd: int) -> None:
    reset_peak()
    outcome = run_cli(args)
    if not acceptable(outcome):
        verdict = "traceback"
    else:
        verdict = "ok" if outcome.exit_code == 0 else "refused"
    tail = (outcome.traceback or outcome.output)[-300:]
    report = {"verdict": verdict, "peak_mib": peak_mib(), "tail": tail}
    os.write(write_fd, json.dumps(report).encode())
    os._exit(0)


def run_case(args: list[str], timeout: float) -> dict[str, object]:
    """Run one CLI call in a forked child; its verdict, peak memory and seconds."""
    read_fd, write_fd = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            _child(args, write_fd)
        finally:
            os._exit(3)
    os.close(write_fd)
    deadline = start + timeout
    data = b""
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return {"verdict": "hang", "peak_mib": float("nan"), "seconds": timeout}
        time.sleep(0.002)
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    seconds = time.perf_counter() - start
    if not data:
        return {"verdict": "traceback", "peak_mib": float("nan"), "seconds": seconds}
    report: dict[str, object] = json.loads(data)
    report["seconds"] = seconds
    return report


class Tally:
    """Counts per class, the slowest call, the largest peak and the bad cases."""

    def __init__(self, classes: tuple[str, ...], memory_gib: float) -> None:
        self.counts: dict[str, Counter[str]] = {k: Counter() for k in classes}
        self.memory_mib = memory_gib * 1024
        self.bad: list[str] = []
        self.slowest = (0.0, "")
        self.largest = (0.0, "")

    def add(self, kind: str, label: str, r: dict[str, object]) -> None:
        verdict = str(r["verdict"])
        peak = float(r["peak_mib"])  # type: ignore[arg-type]
        seconds = float(r["seconds"])  # type: ignore[arg-type]
        if peak > self.memory_mib:
            verdict = "memory"
        self.counts[kind][verdict] += 1
        if verdict in ("traceback", "hang", "memory"):
            self.bad.append(f"  {verdict}: {label} {str(r.get('tail', ''))[-200:]!r}")
        if seconds > self.slowest[0]:
            self.slowest = (seconds, label)
        if peak == peak and peak > self.largest[0]:
            self.largest = (peak, label)

    def print(self, title: str) -> None:
        total: Counter[str] = Counter()
        print(title)
        for kind, c in self.counts.items():
            total.update(c)
            print(f"  {kind:16} " + " ".join(f"{v}={c[v]}" for v in _VERDICTS))
        print(f"  {'all':16} " + " ".join(f"{v}={total[v]}" for v in _VERDICTS))
        print(f"  slowest call {self.slowest[0]:.2f} s ({self.slowest[1][:120]})")
        print(f"  largest peak {self.largest[0]:.0f} MiB ({self.largest[1][:120]})")
        for line in self.bad:
            print(line)


def folder_campaign(cases: int, seed: int, timeout: float, memory_gib: float) -> None:
    rng = random.Random(seed)
    tally = Tally(FOLDER_CLASSES, memory_gib)
    with tempfile.TemporaryDirectory() as tmp:
        bases = make_base(Path(tmp) / "bases")
        for i in range(cases * len(FOLDER_CLASSES)):
            kind = FOLDER_CLASSES[i % len(FOLDER_CLASSES)]
            case_seed = rng.randrange(2**32)
            crng = random.Random(case_seed)
            base = crng.choice(bases)
            dest = Path(tmp) / "m"
            what = mutate_folder(base, dest, kind, crng)
            for cmd in FOLDER_COMMANDS:
                r = run_case([*cmd, str(dest)], timeout)
                tally.add(kind, f"{kind} seed={case_seed} {base.name} {' '.join(cmd)}: {what}", r)
    tally.print(
        f"ET folders: {cases} mutants per class x {len(FOLDER_COMMANDS)} commands "
        "(verify, simulate, inspect, inspect --json)"
    )


def spec_campaign(cases: int, seed: int, timeout: float, memory_gib: float) -> None:
    rng = random.Random(seed)
    tally = Tally(SPEC_NAMES, memory_gib)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(cases):
            case_seed = rng.randrange(2**32)
            spec = mutate_spec(random.Random(case_seed))
            for name, make in zip(SPEC_NAMES, SPEC_COMMANDS, strict=True):
                r = run_case(make(spec, Path(tmp) / "o"), timeout)
                shown = spec if len(spec) <= 80 else spec[:77] + "..."
                tally.add(name, f"{name} seed={case_seed} {shown!r}", r)
    tally.print(f"topology specs: {cases} mutants x {len(SPEC_NAMES)} commands")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--campaign", choices=["folders", "specs", "both"], default="both")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a hang")
    ap.add_argument("--memory-gib", type=float, default=2.0)
    a = ap.parse_args()
    if a.campaign in ("folders", "both"):
        folder_campaign(a.cases, a.seed, a.timeout, a.memory_gib)
    if a.campaign in ("specs", "both"):
        spec_campaign(a.cases, a.seed, a.timeout, a.memory_gib)


if __name__ == "__main__":
    main()
