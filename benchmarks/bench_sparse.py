"""Sparse payloads: the size model, fill-in, and sparse all-reduce on tori and switches.

    python -m benchmarks.bench_sparse [--parts 123] [--encode-vector 16777216] [--quick]

1. Size model. For 4096x4096, 65536x256, 256x65536 and a 1-D vector of 2^28 FP16 elements at
   densities 100% .. 0.01%, a random tensor is encoded for real in every format
   (`payloads.encoders`: scipy.sparse for CSR/CSC/COO) and the closed forms of
   `payloads.formats` are evaluated on its counted statistics: the table prints bits per
   element of the real encodings, whether every closed form equals its encoding's bytes, the
   best format, and the best by the expected (statistical) closed forms. The 1-D vector is
   encoded at ``--encode-vector`` elements (2^28 FP16 values are 512 MiB, and CSR's int32
   indices at 100% another GiB), its closed forms evaluated at 2^28.
2. Fill-in. The measured density of the union of k random supports (2^26 elements) against
   1-(1-rho)^k, k = 2..64.
3. All-reduce of a 2^28-element FP16 gradient (512 MiB) on torus:4x4x4 and switch:64 at
   density 0.1%, 1% and 10%: every sparse producer, ring, direct, TACOS as planned for dense
   chunks (tacos-dense) and TACOS planned with the payload's sizes (tacos, one plan per
   payload and format), simulated under the payload with format auto and with each fixed
   format; the dense times without a payload;
   Ok-Topk's values sent per rank against its bounds 2k(P-1)/P and 6k(P-1)/P.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from backends.sim import simulate
from baselines import ALGORITHMS as BASELINES
from chakra_ir.collective import CollectiveKind
from chakra_ir.outdir import chunk_bytes_for
from chakra_ir.program import Program
from chakra_ir.verify import message_contents, verify_routes
from collc.pipeline import ALGORITHMS, Request, generate, make_collective
from payloads.describe import parse_payload
from payloads.encoders import encode
from payloads.formats import FORMATS, BlockStats, FormatParams, best_format, fill_in, format_bytes
from payloads.sizes import message_sizes
from topologies import Topology, parse_topology

DENSITIES = (1.0, 0.5, 0.1, 0.01, 0.001, 0.0001)
SHAPES = ((4096, 4096), (65536, 256), (256, 65536), (1, 1 << 28))


def _tensor(shape: tuple[int, int], density: float, rng: np.random.Generator) -> np.ndarray:
    n = shape[0] * shape[1]
    a = np.zeros(n, dtype=np.float16)
    nnz = rng.binomial(n, density)
    pos = rng.choice(n, size=nnz, replace=False) if nnz < n else np.arange(n)
    a[pos] = rng.uniform(0.5, 2.0, size=pos.size).astype(np.float16)
    return a.reshape(shape)


def part1(encode_vector: int, quick: bool) -> None:
    print(
        "1. size model: bits per element of the real encodings (FP16, RLC 4-bit runs, blocks of 256)"
    )
    params = FormatParams()
    rng = np.random.default_rng(1)
    head = "".join(f"{f:>9}" for f in FORMATS)
    print(f"  {'shape':<14}{'density':>9}{head}   closed=real  best     best(expected)")
    cases = equal = agree = 0
    for shape in SHAPES:
        real_shape = shape if shape[0] > 1 else (1, encode_vector)
        if quick:
            real_shape = (
                max(1, real_shape[0] // 16),
                real_shape[1] // 16,
            )
        for d in DENSITIES:
            t0 = time.perf_counter()
            a = _tensor(real_shape, d, rng)
            stats = BlockStats.of_positions(*real_shape, np.flatnonzero(a.ravel()), params)
            real = {f: encode(a, f, params).nbytes for f in FORMATS}
            del a
            closed = {f: format_bytes(f, stats, params) for f in FORMATS}
            same = real == closed
            best = min(FORMATS, key=lambda f: real[f])
            expected = best_format(BlockStats.expected(*shape, d, params), params)
            cases += 1
            equal += same
            agree += best == expected
            n = real_shape[0] * real_shape[1]
            bits = "".join(f"{8 * real[f] / n:>9.4f}" for f in FORMATS)
            name = f"{shape[0]}x{shape[1]}" if shape[0] > 1 else "1-D 2^28"
            print(
                f"  {name:<14}{d:>9.2%}{bits}   {'yes' if same else 'NO':>11}  {best:<8} {expected:<8}"
                f" ({time.perf_counter() - t0:.1f} s)"
            )
    print(
        f"  {equal}/{cases} cases: every closed form equals its real encoding's bytes; "
        f"{agree}/{cases}: the real best format is the expected one"
    )
    v = (1, 1 << 28)
    print("  1-D vector of 2^28 by the expected closed forms (bits per element):")
    for d in DENSITIES:
        s = BlockStats.expected(*v, d, params)
        print(
            f"    {d:>8.2%} "
            + " ".join(f"{f} {8 * format_bytes(f, s, params) / v[1]:.4f}" for f in FORMATS)
            + f"  best {best_format(s, params)}"
        )


def part2() -> None:
    print("\n2. fill-in: union density of k random supports of 2^26 elements against 1-(1-rho)^k")
    n = 1 << 26
    rng = np.random.default_rng(2)
    worst = 0.0
    for rho in (0.001, 0.01, 0.1):
        mask = np.zeros(n, dtype=bool)
        row = []
        for k in range(1, 65):
            cnt = rng.binomial(n, rho)
            mask[rng.choice(n, size=cnt, replace=False)] = True
            if k in (2, 4, 8, 16, 32, 64):
                got = mask.sum() / n
                want = fill_in(rho, k)
                err = abs(got - want) / want
                worst = max(worst, err)
                row.append(f"k={k} {got:.5f}/{want:.5f} ({err:.2%})")
        print(f"  rho {rho:.1%}: " + ", ".join(row))
    print(f"  largest relative error {worst:.3%}")


def _program(name: str, spec: str, topo: Topology, size: int, payload: str = "") -> Program:
    req = Request(spec, CollectiveKind.ALLREDUCE, size_bytes=size, payload=payload)
    producer = ALGORITHMS[name](req, None)
    program = generate(producer, make_collective(req, producer, topo), topo)
    verify_routes(program, topo)
    return program


def part3(size: int, densities: tuple[float, ...]) -> None:
    print(f"\n3. all-reduce of {size // 2:,} FP16 elements ({size >> 20} MiB)")
    # tacos-dense: TACOS planned for dense chunks, weighed under the payload; tacos: planned
    # with the payload's message sizes (tacos.sized), a plan per payload and format.
    names = ["ring", "tacos-dense", "tacos", "direct", "sparcml-rd", "sparcml-split", "oktopk"]
    for spec in ("torus:4x4x4", "switch:64"):
        topo = parse_topology(spec)
        progs = {}
        for name in names:
            t0 = time.perf_counter()
            progs[name] = _program("tacos" if name == "tacos-dense" else name, spec, topo, size)
            print(f"  {spec} {name}: produced and verified in {time.perf_counter() - t0:.1f} s")
        traces = {name: message_contents(p) for name, p in progs.items()}
        dense = {}
        for name, p in progs.items():
            dense[name] = simulate(p, topo, chunk_bytes_for(p.collective, size)).finish_ns
        best_dense = min(dense["ring"], dense["tacos"])
        planning = 0.0
        print(
            f"  {spec}: dense ring {dense['ring'] / 1e3:,.1f} us, dense TACOS {dense['tacos'] / 1e3:,.1f} us"
        )
        for rho in densities:
            print(f"  {spec}, density {rho:.1%}:")
            print(
                f"    {'algorithm':<15}{'auto us':>11}{'best fixed':>18}{'auto<=fixed':>12}"
                f"{'dense us':>11}{'vs dense best':>14}  formats (auto)"
            )
            for name, p in progs.items():
                cb = chunk_bytes_for(p.collective, size)
                base = BASELINES.get(name)
                topk = base is not None and base.topk
                times = {}
                for fmt in ("auto", *FORMATS):
                    text = f"sparse:density={rho},format={fmt}"
                    pl = parse_payload(text)
                    if topk:
                        pl = pl.with_topk()
                    trace = traces[name]
                    if name == "tacos":
                        t0 = time.perf_counter()
                        p = _program(name, spec, topo, size, text)
                        planning += time.perf_counter() - t0
                        trace = message_contents(p)
                    sizes = message_sizes(p, pl, cb, trace=trace, topology=topo)
                    times[fmt] = simulate(p, topo, cb, sizes=sizes).finish_ns
                    if fmt == "auto":
                        used = sizes.formats_used(p)
                        if topk:
                            P = p.num_ranks
                            k = size // 2 * rho
                            vals = sizes.sent_nnz(p)
                            vol = (vals.min() / (k * (P - 1) / P), vals.max() / (k * (P - 1) / P))
                fixed = min(FORMATS, key=lambda f: times[f])
                ok = times["auto"] <= times[fixed] * (1 + 1e-9)
                fmts = ", ".join(f"{f} {c}" for f, c in used.items())
                print(
                    f"    {name:<15}{times['auto'] / 1e3:>11,.1f}{times[fixed] / 1e3:>11,.1f} {fixed:<6}"
                    f"{'yes' if ok else 'NO':>12}{dense[name] / 1e3:>11,.1f}"
                    f"{best_dense / times['auto']:>13.2f}x  {fmts}"
                )
            print(
                f"    oktopk values sent per rank: {vol[0]:.2f} .. {vol[1]:.2f} x k(P-1)/P "
                "(bounds 2 and 6)"
            )
        print(f"  {spec}: TACOS planned with the payloads in {planning:.1f} s (8 plans a density)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="123")
    ap.add_argument(
        "--encode-vector", type=int, default=1 << 24, help="elements of the encoded 1-D vector"
    )
    ap.add_argument("--quick", action="store_true", help="smaller tensors and one density")
    a = ap.parse_args()
    t0 = time.perf_counter()
    if "1" in a.parts:
        part1(a.encode_vector, a.quick)
    if "2" in a.parts:
        part2()
    if "3" in a.parts:
        part3(1 << 29, (0.01,) if a.quick else (0.001, 0.01, 0.1))
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
