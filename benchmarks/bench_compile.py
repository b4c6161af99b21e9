"""Compile a MSCCLang ring all-reduce (default 64 ranks, 8 instances); print the seconds.

    python benchmarks/bench_compile.py [--ranks 64] [--instances 8] [--repeat 3]

Target (issue 3): under 5 s for 64 ranks and 8 instances. Prints the time of each phase
(parse, interpret, lower, verify are all inside compile_source) and the time per 1,000
recorded operations (copy/reduce calls of the program) and per 1,000 lowered operations.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mscclang_frontend import compile_source
from mscclang_frontend.errors import Source
from mscclang_frontend.interpreter import Interpreter
from mscclang_frontend.lowering import lower
from mscclang_frontend.parse import parse_program

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "allreduce_ring.py"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--instances", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    text = EXAMPLE.read_text()
    argv = [str(args.ranks), str(args.instances)]
    best = float("inf")
    compiled = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        compiled = compile_source(text, str(EXAMPLE), argv)
        best = min(best, time.perf_counter() - t0)
    assert compiled is not None
    recorded = compiled.recorded_ops
    lowered = compiled.program.num_ops

    # The phases separately, once.
    t0 = time.perf_counter()
    module = parse_program(text, str(EXAMPLE))
    t1 = time.perf_counter()
    interp = Interpreter(Source(text, str(EXAMPLE)), argv)
    interp.run(module)
    t2 = time.perf_counter()
    lower(interp.api.programs[0], Source(text, str(EXAMPLE)))
    t3 = time.perf_counter()

    print(f"ring all-reduce, {args.ranks} ranks, {args.instances} instances")
    print(f"compile (best of {args.repeat}) {best:8.3f} s   (target < 5 s)")
    print(f"  parse                  {t1 - t0:8.3f} s")
    print(f"  interpret              {t2 - t1:8.3f} s   {interp.steps:,} evaluation steps")
    print(f"  lower + verify         {t3 - t2:8.3f} s")
    print(f"recorded operations      {recorded:8,}   {best / recorded * 1000:8.3f} s per 1,000")
    print(f"lowered operations       {lowered:8,}   {best / lowered * 1000:8.3f} s per 1,000")


if __name__ == "__main__":
    main()
