"""How fast the MSCCL-IR XML writer refuses programs the runtime's limits cannot hold.

The runtime runs at most 64 steps per threadblock, 32 threadblocks per channel and 32
channels. Without hints the writer spreads messages over channels until the limits hold; a
program that no spreading can fit is refused by a count before that search (issue 27,
item 6). Prints the seconds to the verdict for each shape::

    python -m benchmarks.bench_xml_refusal [--steps 10000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from backends.msccl_xml import XmlOptions, program_to_xml
from chakra_ir import Collective, CollectiveKind, Program, ProgramBuilder, Slice
from chakra_ir.collective import Buffer
from topologies.errors import CollcError


def one_pair(n: int) -> Program:
    """Two ranks; each sends its n chunks to the other one by one (n messages per pair)."""
    b = ProgramBuilder(Collective(CollectiveKind.ALLGATHER, 2, n), auto_deps=True)
    for r in range(2):
        for j in range(n):
            b.copy(r, Slice(Buffer.INPUT, j), Slice(Buffer.OUTPUT, r * n + j))
            b.send(r, 1 - r, Slice(Buffer.INPUT, j))
            b.recv(1 - r, r, Slice(Buffer.OUTPUT, r * n + j))
    return b.build()


def local_chain(n: int) -> Program:
    """One message, then n local copies on the receiving rank (no peer to spread over)."""
    b = ProgramBuilder(Collective(CollectiveKind.ALLGATHER, 2, n), auto_deps=True)
    for r in range(2):
        b.send(r, 1 - r, Slice(Buffer.INPUT, 0, n))
        b.recv(1 - r, r, Slice(Buffer.OUTPUT, r * n, n))
        for j in range(n):
            b.copy(r, Slice(Buffer.INPUT, j), Slice(Buffer.OUTPUT, r * n + j))
    return b.build()


def borderline(n: int) -> Program:
    """One pair with just few enough messages to fit after spreading (the search runs)."""
    return one_pair(min(n, 32 * 64 // 2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10_000)
    a = ap.parse_args()
    shapes: dict[str, Callable[[int], Program]] = {
        "one pair": one_pair,
        "local chain": local_chain,
        "borderline": borderline,
    }
    for name, make in shapes.items():
        program = make(a.steps)
        t = time.perf_counter()
        try:
            program_to_xml(program, XmlOptions())
            verdict = "written"
        except CollcError as e:
            verdict = f"refused: {e.message[:90]}"
        print(f"{name:12s} {a.steps:6d} steps: {time.perf_counter() - t:7.2f} s  {verdict}")


if __name__ == "__main__":
    main()
