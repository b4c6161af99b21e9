"""How long a unit of `collc.pipeline.estimate_work` takes: the rate behind ``--max-work``.

Runs ``collc synthesize`` (produce, verify, bound, write; the topology build is timed apart, it
is limited by ``COLLC_MAX_LINKS``) for cases near the default limit `collc.pipeline.MAX_WORK`
on the topologies that cost the most per transfer (TACOS on switches, fully connected networks
and FRED; all-to-all on rings; baselines), each in a forked child, and prints the estimate, the
seconds and the microseconds per unit. The default limit is meant to stay near 10 s on a busy
machine, so nothing under it comes near the 20 s that the mutation campaigns count as a hang::

    python -m benchmarks.bench_work [--case SPEC:ALGORITHM:COLLECTIVE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

CASES = (
    "fc:100:tacos:allreduce",
    "switch:90:tacos:allreduce",
    "fred:72:tacos:allreduce",
    "mesh:16x14:tacos:allreduce",
    "torus:8x8x3:tacos:allreduce",
    "uniring:240:tacos:allreduce",
    "ring:64:tacos:alltoall",
    "ring:64:direct:alltoall",
    "fc:300:ring:allgather",
    "switch:350:ring:allgather",
)


def _run(case: str, out: Path) -> dict[str, float]:
    from chakra_ir.collective import CollectiveKind
    from collc import pipeline
    from tacos import Tacos
    from topologies import parse_topology

    spec, algorithm, kind = case.rsplit(":", 2)
    t0 = time.perf_counter()
    topology = parse_topology(spec)
    built = time.perf_counter() - t0
    req = pipeline.Request(spec, CollectiveKind(kind), algorithm, max_work=1 << 62)
    producer = pipeline.ALGORITHMS[algorithm](req, None)
    work = pipeline.estimate_work(
        pipeline.make_collective(req, producer, topology),
        topology,
        tacos=isinstance(producer, Tacos),
    )
    t1 = time.perf_counter()
    pipeline.write(pipeline.synthesize(req), out)
    return {"units": work.units, "build": built, "seconds": time.perf_counter() - t1}


def run_case(case: str) -> dict[str, float]:
    """One case in a forked child (a fresh heap, nothing cached from the previous case)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                os.write(write_fd, json.dumps(_run(case, Path(tmp) / "o")).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 65536):
        data += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    result: dict[str, float] = json.loads(data)
    return result


def main() -> None:
    from collc.pipeline import MAX_WORK

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="SPEC:ALGORITHM:COLLECTIVE (repeatable)")
    a = ap.parse_args()
    print(f"default --max-work {MAX_WORK:,}")
    print(f"{'case':36} {'units':>12} {'build s':>8} {'run s':>7} {'us/unit':>8}")
    for case in a.case or CASES:
        r = run_case(case)
        rate = r["seconds"] / r["units"] * 1e6
        print(
            f"{case:36} {r['units']:>12,.0f} {r['build']:>8.2f} {r['seconds']:>7.2f} {rate:>8.2f}"
        )


if __name__ == "__main__":
    main()
