"""Scale: time and peak memory of synthesize + verify + simulate (+ write) as NPUs grow.

    python benchmarks/bench_scale.py [--big] [--general] [--mesh 16x16,32x32] [--size 1GiB]

Rows, each in a child process of its own (so each peak is its own), All-Gather and All-Reduce
with one chunk per NPU:

- ``symmetric``: tori 8x8x8, 8x8x16, 16x16x16 (and 32x32x16 with ``--big``, by hand: minutes)
  in orbit form (docs/symmetric.md): `tacos.symmetric.synthesize_symmetric`,
  `chakra_ir.verify_symmetric.verify_symmetric`, `tacos.symmetric_timing.replay_symmetric`
  and writing the compact program file (`chakra_ir.progfile`).
- ``general`` (``--general``): the general path on tori 8x8x8 and 8x8x16 (`tacos.synthesize`,
  `chakra_ir.verify.verify`, `backends.sim.simulate`): the figures before.
- ``mesh`` (``--mesh``): meshes, which have no symmetric form, on the general path.

Prints one line per row and the growth exponents (least squares of log time and log memory
against log NPUs) per path and kind.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.memory import peak_mib, reset_peak

TORI = ["8x8x8", "8x8x16", "16x16x16"]
BIG = ["32x32x16"]


def _row(path: str, spec: str, kind: str, size: int) -> dict[str, float]:
    from chakra_ir.collective import Collective, CollectiveKind
    from topologies import parse_topology

    reset_peak()
    topo = parse_topology(spec)
    n = topo.num_npus
    ck = CollectiveKind(kind)
    c = Collective(ck, n, n if ck is CollectiveKind.ALLREDUCE else 1)
    chunk = -(-size // c.size_chunks)
    out: dict[str, float] = {"npus": n}
    t0 = time.perf_counter()
    if path == "symmetric":
        from chakra_ir.progfile import write_program_file
        from chakra_ir.verify_symmetric import verify_symmetric
        from tacos.symmetric import synthesize_symmetric
        from tacos.symmetric_timing import replay_symmetric

        sp = synthesize_symmetric(c, topo, chunk)
        t1 = time.perf_counter()
        verify_symmetric(sp)
        t2 = time.perf_counter()
        ns = replay_symmetric(sp, topo, chunk)
        t3 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            target = Path(tmp) / "p.collcp"
            write_program_file(target, sp, chunk_bytes=chunk, topology=spec)
            out["file_kb"] = target.stat().st_size / 1024
        t4 = time.perf_counter()
    else:
        from backends.sim import simulate
        from chakra_ir.verify import verify
        from tacos import synthesize

        syn = synthesize(c, topo, chunk)
        t1 = time.perf_counter()
        verify(syn.program)
        t2 = time.perf_counter()
        ns = simulate(syn.program, topo, chunk).finish_ns
        t3 = time.perf_counter()
        t4 = t3
    from tacos.bounds import lower_bounds

    out.update(
        synth_s=t1 - t0,
        verify_s=t2 - t1,
        sim_s=t3 - t2,
        write_s=t4 - t3,
        total_s=t4 - t0,
        ratio=ns / lower_bounds(ck, topo, size).best[1],
        peak_mib=peak_mib(),
    )
    return out


def _fit(xs: list[float], ys: list[float]) -> float:
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / den if den else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="add torus 32x32x16 (16,384 NPUs)")
    ap.add_argument("--general", action="store_true", help="the general path at 512/1,024")
    ap.add_argument("--mesh", default="", help="mesh shapes for the general path, comma-separated")
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--row", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    from topologies.units import parse_size_bytes

    size = parse_size_bytes(args.size)
    if args.row:
        print(json.dumps(_row(args.row[0], args.row[1], args.row[2], size)))
        return
    rows = [("symmetric", f"torus:{s}") for s in TORI + (BIG if args.big else [])]
    if args.general:
        rows += [("general", f"torus:{s}") for s in TORI[:2]]
    rows += [("general", f"mesh:{s}") for s in args.mesh.split(",") if s]
    got: dict[tuple[str, str], list[dict[str, float]]] = {}
    for path, spec in rows:
        for kind in ("allgather", "allreduce"):
            cmd = [sys.executable, __file__, "--size", args.size, "--row", path, spec, kind]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ, check=False)
            if proc.returncode:
                print(f"{path:9} {spec:16} {kind:9} failed: {proc.stderr.strip()[-200:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"{path:9} {spec:16} {kind:9} npus={int(r['npus']):6} synth={r['synth_s']:8.2f}s "
                f"verify={r['verify_s']:7.2f}s sim={r['sim_s']:7.2f}s write={r['write_s']:6.2f}s "
                f"total={r['total_s']:8.2f}s peak={r['peak_mib']:8.0f}MiB ratio={r['ratio']:.3f}",
                flush=True,
            )
            got.setdefault((path, kind), []).append(r)
    for (path, kind), rs in got.items():
        if len(rs) >= 2:
            xs = [r["npus"] for r in rs]
            print(
                f"growth {path} {kind}: time N^{_fit(xs, [r['total_s'] for r in rs]):.2f}, "
                f"memory N^{_fit(xs, [r['peak_mib'] for r in rs]):.2f} over {int(xs[0])}-{int(xs[-1])}"
            )


if __name__ == "__main__":
    main()
