"""Mutation campaigns for the MSCCLang front end and the MSCCL-IR XML reader (issue 10).

Each mutant (`tests.mscclang.mutants`) runs through the real CLI (``collc compile`` or
``collc import``, default limits) in a forked child, so a hang is cut at ``--timeout`` seconds
and each case's peak resident memory is measured on its own. Prints, per campaign and per
mutant class, how many cases ended with a result (ok), a one-line error (refused), a
traceback, a hang or a peak over ``--memory-gib``; then the slowest case and the largest peak,
and every bad case with its class and seed::

    python -m benchmarks.bench_msccl_mutants [--cases 1000] [--seed 1] [--campaign both]
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
from tests.mscclang.mutants import (
    SOURCE_CLASSES,
    XML_CLASSES,
    classify,
    mutate_source,
    mutate_xml,
    run_cli,
    source_bases,
    write_mutant,
    xml_bases,
)

ARGV = {"inplace_allgather_pairs.py": ["3", "2"]}


def _child(args: list[str], write_fd: int) -> None:
    reset_peak()
    status, out = run_cli(args)
    verdict = classify(status, out)
    report = {"verdict": verdict, "peak_mib": peak_mib(), "tail": out[-300:]}
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
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_fd)
            return {"verdict": "hang", "peak_mib": float("nan"), "seconds": timeout}
        time.sleep(0.005)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    seconds = time.perf_counter() - start
    if not data:
        return {"verdict": "traceback", "peak_mib": float("nan"), "seconds": seconds}
    report: dict[str, object] = json.loads(data)
    report["seconds"] = seconds
    return report


def campaign(name: str, cases: int, seed: int, timeout: float, memory_gib: float) -> None:
    rng = random.Random(seed)
    classes = SOURCE_CLASSES if name == "mscclang" else XML_CLASSES
    bases = source_bases() if name == "mscclang" else xml_bases()
    counts: dict[str, Counter[str]] = {k: Counter() for k in classes}
    bad: list[str] = []
    slowest = (0.0, "")
    largest = (0.0, "")
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(cases):
            kind = classes[i % len(classes)]
            case_seed = rng.randrange(2**32)
            crng = random.Random(case_seed)
            base_name, text = crng.choice(bases)
            if name == "mscclang":
                mutant, what = mutate_source(text, kind, crng)
                path = Path(tmp) / base_name
                args = ["compile", str(path), "-o", str(Path(tmp) / f"out{i}")]
                args += ["--", *ARGV.get(base_name, [])]
            else:
                mutant, what = mutate_xml(text, kind, crng)
                path = Path(tmp) / "m.xml"
                args = ["import", str(path), "-o", str(Path(tmp) / f"out{i}")]
            write_mutant(path, mutant)
            r = run_case(args, timeout)
            verdict = str(r["verdict"])
            peak = float(r["peak_mib"])  # type: ignore[arg-type]
            seconds = float(r["seconds"])  # type: ignore[arg-type]
            if peak > memory_gib * 1024:
                verdict = "memory"
            counts[kind][verdict] += 1
            label = f"{kind} seed={case_seed} {base_name}: {what}"
            if verdict in ("traceback", "hang", "memory"):
                bad.append(f"  {verdict}: {label} {str(r.get('tail', ''))[-200:]!r}")
            if seconds > slowest[0]:
                slowest = (seconds, label)
            if peak == peak and peak > largest[0]:
                largest = (peak, label)
    total: Counter[str] = Counter()
    print(f"{name}: {cases} mutants")
    for kind, c in counts.items():
        total.update(c)
        print(f"  {kind:18} " + " ".join(f"{v}={c[v]}" for v in _VERDICTS))
    print(f"  {'all':18} " + " ".join(f"{v}={total[v]}" for v in _VERDICTS))
    print(f"  slowest {slowest[0]:.2f} s ({slowest[1][:100]})")
    print(f"  largest peak {largest[0]:.0f} MiB ({largest[1][:100]})")
    for line in bad:
        print(line)


_VERDICTS = ("ok", "refused", "traceback", "hang", "memory")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000, help="mutants per campaign")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--campaign", choices=["mscclang", "xml", "both"], default="both")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a hang")
    ap.add_argument("--memory-gib", type=float, default=2.0)
    a = ap.parse_args()
    for name in ("mscclang", "xml"):
        if a.campaign in (name, "both"):
            campaign(name, a.cases, a.seed, a.timeout, a.memory_gib)


if __name__ == "__main__":
    main()
