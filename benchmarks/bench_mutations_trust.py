"""Mutation campaigns for what collc certifies (issue 25), run by hand, printing counts.

``PYTHONPATH=. python3 benchmarks/bench_mutations_trust.py [--cases N] [--seed S] [CLASS ...]``
with CLASS among ``hwprog``, ``et``, ``topology``, ``folders`` (default: all, N = 1,000 each).

- **hwprog**: hardware programs exported from five algorithms, one to three waits removed at
  random. The timing-independent race check (`backends.hwprog.races.check_races`) must agree
  with a brute-force oracle (the transitive closure of waits and messages, every
  conflicting pair tested); every program it accepts is replayed under three random timings
  (link latencies scaled 1-40x, router delays 0-8 cycles) and must hold its postcondition
  each time.
- **et**: collc ET files with one Chakra-visible field of one node changed (type, comm_src,
  comm_dst, comm_tag, comm_size, chunk counts, data_deps, duration, is_cpu_op, the oneof
  member, an attribute dropped or added). Each set is decoded and verified; a set that is
  accepted must be, field for field (compared through the protobuf bindings, not collc's
  reader), exactly what collc writes for the program it decodes to, so ASTRA-sim runs what
  collc checked.
- **topology**: collc YAML/JSON and ASTRA-sim YAML topology files with random byte edits,
  nesting up to 3,000 deep, alias bombs (in the ignored ``description`` and elsewhere),
  integers of up to 6,000 digits, values of the wrong type and duplicated keys; each parsed
  with a 20 s alarm and a 3 GiB address-space limit.
- **folders**: two writers of different kinds (ET output folder, MSCCL XML, ASTRA-sim
  bundle, torus hardware program) forked at once into one folder, one of them killed at a
  random moment (SIGTERM or SIGKILL) in half the cases; then the folder must be missing or
  wholly one kind, two different kinds never both succeed, and no temporary is left once
  the next write's cleanup has run.

Outcomes: ``ok``, ``refused`` (one-line CollcError), ``race found``, ``traceback`` (any other
exception), ``hang``, ``memory``, and per class the failures it exists to find (``wrong
accepted``, ``oracle disagrees``, ``mixed folder``...), which must stay 0.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from backends.hwprog import build_hwprog
from backends.hwprog.races import check_races
from backends.replay.grid import GridReplay
from backends.replay.types import ReplayOptions
from chakra_ir.collective import CollectiveKind
from chakra_ir.et import decode_program, encode_program
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.framing import split_frames
from chakra_ir.et.wire import varint
from chakra_ir.verify import verify
from collc import pipeline
from topologies import parse_topology
from topologies.errors import CollcError

# -- hardware programs -------------------------------------------------------------------------

HW_PROGRAMS = [
    ("torus:4x4", "allreduce", "rhd", 64 << 10),
    ("mesh:3x3", "allreduce", "ring", 18 << 10),
    ("torus:4x4", "allreduce", "tacos", 64 << 10),
    ("mesh:4x4", "allgather", "tacos", 32 << 10),
    ("ring:8", "allgather", "ring", 32 << 10),
]


def _made(spec: str, coll: str, algo: str, size: int) -> pipeline.Result:
    return pipeline.synthesize(pipeline.Request(spec, CollectiveKind(coll), algo, size))


def _race_oracle(hw: Any) -> bool:
    """Whether two conflicting accesses of an NPU are unordered (brute force, no aliases:
    the programs used are not in place)."""
    succ: dict[tuple[int, int], list[tuple[int, int]]] = {}
    send_of: dict[int, tuple[int, int]] = {}
    recv_of: dict[int, tuple[int, int]] = {}
    for n, doc in enumerate(hw.npus):
        pos = {c["id"]: i for i, c in enumerate(doc["commands"])}
        for i, c in enumerate(doc["commands"]):
            succ.setdefault((n, i), [])
            for w in c["waits"]:
                succ.setdefault((n, pos[w]), []).append((n, i))
            if c["op"] == "send":
                send_of[c["flow"]] = (n, i)
            elif c["op"] == "recv":
                recv_of[c["flow"]] = (n, i)
    for f, s in send_of.items():
        succ[s].append(recv_of[f])
    after: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for start in succ:
        seen: set[tuple[int, int]] = set()
        q = deque(succ[start])
        while q:
            x = q.popleft()
            if x not in seen:
                seen.add(x)
                q.extend(succ[x])
        after[start] = seen
    for n, doc in enumerate(hw.npus):
        acc = []
        for i, c in enumerate(doc["commands"]):
            if "src" in c:
                acc.append((i, c["src"][0], c["src"][1], c["src"][1] + c["src"][2], False))
            if "dst" in c:
                acc.append((i, c["dst"][0], c["dst"][1], c["dst"][1] + c["dst"][2], True))
        for j, (a, ba, sa, ea, wa) in enumerate(acc):
            for b, bb, sb, eb, wb in acc[j + 1 :]:
                if a == b or ba != bb or ea <= sb or eb <= sa or not (wa or wb):
                    continue
                if (n, b) not in after[(n, a)] and (n, a) not in after[(n, b)]:
                    return True
    return False


def _retimed(hw: Any, rng: random.Random) -> Any:
    h = copy.deepcopy(hw.header)
    for lk in h["links"]:
        lk["latency_cycles"] = lk["latency_cycles"] * rng.randint(1, 40) + rng.randint(0, 50)
    h["router_pipeline_cycles"] = rng.randint(0, 8)
    return type(hw)(h, hw.routers, hw.npus)


def campaign_hwprog(cases: int, rng: random.Random) -> Counter[str]:
    out: Counter[str] = Counter()
    bases = []
    for spec, coll, algo, size in HW_PROGRAMS:
        res = _made(spec, coll, algo, size)
        target = "mesh" if spec.startswith("mesh") else "torus"
        hw = build_hwprog(res.program, parse_topology(spec), res.manifest, target)
        waits = [
            (n, i, w)
            for n, doc in enumerate(hw.npus)
            for i, c in enumerate(doc["commands"])
            for w in c["waits"]
        ]
        bases.append((hw, waits))
    for _ in range(cases):
        base, waits = bases[rng.randrange(len(bases))]
        hw = type(base)(base.header, base.routers, copy.deepcopy(base.npus))
        for n, i, w in rng.sample(waits, rng.choice((1, 1, 1, 2, 3))):
            hw.npus[n]["commands"][i]["waits"].remove(w)
        try:
            try:
                check_races(hw)
                raced = False
            except CollcError as e:
                if "no wait or message orders them" not in e.message:
                    out["refused (not a race)"] += 1
                    continue
                raced = True
            if raced != _race_oracle(hw):
                out["oracle disagrees"] += 1
                continue
            if raced:
                out["race found"] += 1
                continue
            results = [
                GridReplay(_retimed(hw, rng), "mutant", ReplayOptions()).run() for _ in range(3)
            ]
            if all(r.completed and r.postcondition == "holds" for r in results):
                out["ok (holds under 3 timings)"] += 1
            else:
                out["wrong accepted"] += 1
        except Exception as e:
            out["traceback"] += 1
            print(f"  traceback: {type(e).__name__}: {e}", file=sys.stderr)
    return out


# -- ET files ----------------------------------------------------------------------------------

_VISIBLE = (
    "is_cpu_op",
    "comm_src",
    "comm_dst",
    "comm_tag",
    "comm_size",
    "msg_chunk_cnt",
    "total_chunk_cnt",
    "num_ops",
    "tensor_size",
)


def _messages(data: bytes) -> tuple[pb.GlobalMetadata, list[pb.Node]]:
    starts, ends = split_frames(data, "<bench>")
    meta = pb.GlobalMetadata.FromString(data[starts[0] : ends[0]])
    nodes = [pb.Node.FromString(data[a:b]) for a, b in zip(starts[1:], ends[1:], strict=True)]
    return meta, nodes


def _stream(meta: pb.GlobalMetadata, nodes: list[pb.Node]) -> bytes:
    out = [meta.SerializeToString(), *(n.SerializeToString() for n in nodes)]
    return b"".join(varint(len(m)) + m for m in out)


def _visible(n: pb.Node) -> tuple[Any, ...]:
    attrs = {}
    for a in n.attr:
        if a.name in _VISIBLE:
            member = a.WhichOneof("value")
            attrs[a.name] = (member, getattr(a, member) if member else None)
    return (n.type, tuple(n.data_deps), tuple(n.ctrl_deps), n.duration_micros, attrs)


def _mutate_node(n: pb.Node, count: int, rng: random.Random) -> str:
    kind = rng.choice(
        (
            "type",
            "int",
            "int",
            "int",
            "deps",
            "duration",
            "cpu",
            "member",
            "drop",
            "add",
        )
    )
    ints = [a for a in n.attr if a.name in _VISIBLE and a.WhichOneof("value") != "bool_val"]
    if kind == "type":
        n.type = rng.choice([t for t in range(8) if t != n.type])  # type: ignore[assignment]
    elif kind == "int" and ints:
        a = rng.choice(ints)
        member = a.WhichOneof("value")
        assert member is not None
        value = getattr(a, member) + rng.choice((-2, -1, 1, 1, 2, 7))
        if member.startswith("uint"):
            value = abs(value)
        setattr(a, member, value)
    elif kind == "deps":
        deps = list(n.data_deps)
        if deps and rng.random() < 0.5:
            deps.pop(rng.randrange(len(deps)))
        elif n.id > 0:
            deps.append(rng.randrange(n.id))
        n.data_deps[:] = deps
    elif kind == "duration":
        n.duration_micros = rng.choice((0, 1, 2, 5, 1000))
    elif kind == "cpu":
        for a in n.attr:
            if a.name == "is_cpu_op":
                a.bool_val = not a.bool_val
    elif kind == "member" and ints:
        a = rng.choice(ints)
        member = a.WhichOneof("value")
        assert member is not None
        value = getattr(a, member)
        other = "int64_val" if member != "int64_val" else "int32_val"
        if other == "int32_val" and not -(2**31) <= value < 2**31:
            other = "uint64_val"
        setattr(a, other, value)
    elif kind == "drop" and n.attr:
        named = [a for a in n.attr if a.name in _VISIBLE]
        if named:
            gone = rng.choice(named).name
            keep = [a for a in n.attr if a.name != gone]
            del n.attr[:]
            n.attr.extend(keep)
    else:
        a = pb.AttributeProto(name=rng.choice(_VISIBLE))
        a.int32_val = rng.randrange(count + 3)
        n.attr.append(a)
    return kind


def campaign_et(cases: int, rng: random.Random) -> Counter[str]:
    out: Counter[str] = Counter()
    sets = []
    for spec, coll, algo, size, micros in (
        ("ring:4", "allreduce", "ring", 16 << 10, 0),
        ("mesh:2x2", "allreduce", "rhd", 16 << 10, 0),
        ("switch:4", "allreduce", "tacos", 16 << 10, 0),
        ("ring:4", "allreduce", "ring", 16 << 10, 3),
        ("fc:4", "alltoall", "direct", 16 << 10, 0),
    ):
        res = _made(spec, coll, algo, size)
        chunk = res.manifest.chunk_bytes
        files = encode_program(res.program, chunk, reduce_micros=micros)
        sets.append((files, chunk, micros))
    for _ in range(cases):
        files, chunk, micros = sets[rng.randrange(len(sets))]
        rank = rng.randrange(len(files))
        meta, nodes = _messages(files[rank])
        node = rng.randrange(len(nodes))
        _mutate_node(nodes[node], len(nodes), rng)
        mutated = list(files)
        mutated[rank] = _stream(meta, nodes)
        try:
            try:
                program = decode_program(mutated)
            except CollcError as e:
                named = f"<source {rank}>" in str(e) and "node" in e.message
                out["refused (file, node, field)" if named else "refused (other)"] += 1
                continue
            try:
                verify(program)
            except CollcError:
                out["refused by verify (the program is wrong)"] += 1
                continue
            again = encode_program(program, chunk, reduce_micros=micros)
            same = all(
                [_visible(n) for n in _messages(a)[1]] == [_visible(n) for n in _messages(b)[1]]
                for a, b in zip(again, mutated, strict=True)
            )
            out["ok (what collc writes)" if same else "wrong accepted"] += 1
        except Exception as e:
            out["traceback"] += 1
            print(f"  traceback: {type(e).__name__}: {e}", file=sys.stderr)
    return out


# -- topology files ----------------------------------------------------------------------------

_COLLC_YAML = """npus: 4
defaults: {bandwidth: 100GB/s, latency: 1us}
links:
  - {src: 0, dst: 1, bidirectional: true}
  - {src: 1, dst: 2, bidirectional: true, latency: 500ns}
  - {src: 2, dst: 3, bidirectional: true}
  - {src: 3, dst: 0, bidirectional: true, bandwidth: 50GB/s}
fail: "0>1"
description: a ring of four
"""
_COLLC_JSON = json.dumps(
    {
        "npus": 4,
        "links": [{"src": i, "dst": (i + 1) % 4, "bidirectional": True} for i in range(4)],
        "description": "a ring",
    },
    indent=1,
)
_ASTRA_YAML = """topology: [Ring, FullyConnected]
npus_count: [4, 2]
bandwidth: [100.0, 50.0]
latency: [500.0, 1000.0]
"""


def _bomb(key: str, levels: int, fan: int) -> str:
    lines = [f"{key}:", "  a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def _topology_case(rng: random.Random) -> tuple[str, str]:
    suffix, text = rng.choice(
        ((".yaml", _COLLC_YAML), (".json", _COLLC_JSON), (".yaml", _ASTRA_YAML))
    )
    kind = rng.choice(("bytes", "deep", "bomb", "digits", "type", "dup"))
    if kind == "bytes":
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 5)):
            op, at = rng.random(), rng.randrange(len(b))
            if op < 0.4:
                b[at] = rng.randrange(256)
            elif op < 0.7:
                b.insert(at, rng.choice(b"[]{}:,&*!- \n\"'0123456789"))
            else:
                del b[at]
        return suffix, b.decode("utf-8", errors="replace")
    if kind == "deep":
        depth = rng.choice((30, 65, 200, 999, 1000, 3000))
        nest = "[" * depth + "]" * depth
        if suffix == ".json":
            return suffix, text.replace('"a ring"', nest)
        return ".yaml", text.replace("a ring of four", nest) if "description" in text else (
            text + f"extra: {nest}\n"
        )
    if kind == "bomb":
        where = rng.choice(("description", "links2", "defaults"))
        base = _COLLC_YAML.replace("description: a ring of four\n", "")
        return ".yaml", base + _bomb(where, rng.randint(3, 12), rng.randint(2, 12))
    if kind == "digits":
        digits = "9" * rng.choice((10, 20, 300, 4301, 6000))
        target = rng.choice(("4", "1", "2", "100.0", "500.0"))
        return suffix, text.replace(target, digits, 1)
    if kind == "type":
        value = rng.choice(("[]", "{}", "null", "true", '"x"', "-1", "1.5", "[1, [2]]"))
        target = rng.choice(("4", "0", "1", "100GB/s", "Ring", "true"))
        return suffix, text.replace(target, value, 1)
    first = text.splitlines()[0]
    return suffix, first + "\n" + text if suffix == ".yaml" else text.replace(
        "{", '{"npus": 9, ', 1
    )


class _Alarm(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def ring(_signum: int, _frame: object) -> None:
        raise _Alarm

    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def campaign_topology(cases: int, rng: random.Random) -> Counter[str]:
    out: Counter[str] = Counter()
    limit = 3 << 30
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    slowest = 0.0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(cases):
                suffix, text = _topology_case(rng)
                path = Path(tmp) / f"t{i}{suffix}"
                path.write_text(text, encoding="utf-8", errors="replace")
                t0 = time.perf_counter()
                try:
                    with _deadline(20):
                        parse_topology(str(path))
                    out["ok"] += 1
                except CollcError as e:
                    one = "\n" not in e.message
                    out["refused" if one else "refused (several lines)"] += 1
                except _Alarm:
                    out["hang"] += 1
                except MemoryError:
                    out["memory"] += 1
                except Exception as e:
                    out["traceback"] += 1
                    print(f"  traceback: {type(e).__name__}: {e}", file=sys.stderr)
                slowest = max(slowest, time.perf_counter() - t0)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    print(f"  slowest case {slowest:.2f} s")
    return out


# -- folders written concurrently and killed ---------------------------------------------------

_MARKERS = {
    "collc_msccl.json": "msccl-xml",
    "collc_bundle.json": "astra-sim",
    "hwprog.json": "torus",
    "manifest.json": "output",
}


def _complete(out: Path) -> str:
    """The kind of a complete folder at ``out``, "missing", or "mixed"/"incomplete"."""
    if not out.exists():
        return "missing"
    names = {p.name for p in out.iterdir()}
    kinds = [k for m, k in _MARKERS.items() if m in names]
    if len(kinds) != 1:
        return "mixed" if kinds else ("missing" if not names else "incomplete")
    kind = kinds[0]
    if kind == "msccl-xml":
        listed = json.loads((out / "collc_msccl.json").read_text())["files"]
        ok = names == {*listed, "collc_msccl.json"}
    elif kind == "astra-sim":
        listed = json.loads((out / "collc_bundle.json").read_text())["files"]
        ok = all((out / f).is_file() for f in listed)
        ok = ok and {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == set(
            listed
        )
    elif kind == "torus":
        header = json.loads((out / "hwprog.json").read_text())
        ok = all((out / e["file"]).is_file() for e in header["npus"])
        ok = ok and names == {"hwprog.json", "routers.json", "npus"}
    else:
        manifest = json.loads((out / "manifest.json").read_text())
        ok = names == {*manifest["et_files"], "manifest.json"}
    return kind if ok else "incomplete"


def campaign_folders(cases: int, rng: random.Random) -> Counter[str]:
    from chakra_ir.outdir import remove_stale_temporaries, write_output
    from collc.exporters import EXPORTERS, ExportOptions

    out_c: Counter[str] = Counter()
    res = _made("torus:2x2", "allreduce", "ring", 64 << 10)
    topo = parse_topology("torus:2x2")
    writers: dict[str, Callable[[Path], object]] = {
        "msccl-xml": lambda o: EXPORTERS["msccl-xml"](
            res.program, topo, res.manifest, o, ExportOptions()
        ),
        "astra-sim": lambda o: EXPORTERS["astra-sim"](
            res.program, topo, res.manifest, o, ExportOptions()
        ),
        "torus": lambda o: EXPORTERS["torus"](res.program, topo, res.manifest, o, ExportOptions()),
        "output": lambda o: write_output(o, res.program, res.manifest),
    }

    def child(kind: str, out: Path) -> None:
        code = 0
        try:
            writers[kind](out)
        except CollcError:
            code = 2
        except SystemExit as e:
            code = int(e.code) if isinstance(e.code, int) else 1
        except BaseException as e:
            print(f"  {kind}: {type(e).__name__}: {e}", file=sys.stderr)
            code = 99
        os._exit(code)

    base = Path(tempfile.mkdtemp())
    try:
        for i in range(cases):
            case = base / f"c{i}"
            case.mkdir()
            out = case / "o"
            a, b = rng.sample(sorted(writers), 2)
            if rng.random() < 0.3:  # an earlier folder of one kind already there
                writers[a](out)
            pids = {}
            for kind in (a, b):
                pid = os.fork()
                if pid == 0:
                    child(kind, out)
                pids[pid] = kind
            killed = None
            if rng.random() < 0.5:
                time.sleep(rng.uniform(0, 0.04))
                killed = rng.choice(list(pids))
                with contextlib.suppress(ProcessLookupError):
                    os.kill(killed, rng.choice((signal.SIGTERM, signal.SIGKILL)))
            status = {}
            for pid, kind in pids.items():
                _, st = os.waitpid(pid, 0)
                status[kind] = os.waitstatus_to_exitcode(st)
            if any(code not in (0, 2, 143, -9, -15) for code in status.values()):
                out_c["traceback"] += 1
                print(f"  child status {status}", file=sys.stderr)
                continue
            state = _complete(out)
            succeeded = [k for k, code in status.items() if code == 0]
            remove_stale_temporaries(out)  # what the next write does first
            left = [p.name for p in case.iterdir() if p.name.startswith(".")]
            if state in ("mixed", "incomplete"):
                out_c[f"{state} folder"] += 1
            elif len(succeeded) == 2:
                out_c["two kinds both succeeded"] += 1
            elif left:
                out_c["temporaries left"] += 1
            elif state != "missing" and succeeded and state != succeeded[0]:
                out_c["a success not in the folder"] += 1
            else:
                died = killed is not None and status[pids[killed]] in (-9, -15, 143)
                how = "one killed mid-write, " if died else ""
                out_c[f"ok ({how}{len(succeeded)} succeeded, folder {state})"] += 1
            shutil.rmtree(case, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return out_c


CAMPAIGNS: dict[str, Callable[[int, random.Random], Counter[str]]] = {
    "hwprog": campaign_hwprog,
    "et": campaign_et,
    "topology": campaign_topology,
    "folders": campaign_folders,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("classes", nargs="*", help=f"any of {', '.join(CAMPAIGNS)} (default: all)")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=25)
    args = ap.parse_args()
    unknown = [c for c in args.classes if c not in CAMPAIGNS]
    if unknown:
        ap.error(f"unknown class {unknown[0]!r} (one of {', '.join(CAMPAIGNS)})")
    for name in args.classes or list(CAMPAIGNS):
        rng = random.Random(args.seed)
        t0 = time.perf_counter()
        counts = CAMPAIGNS[name](args.cases, rng)
        print(f"{name}: {sum(counts.values()):,} cases in {time.perf_counter() - t0:.1f} s")
        for outcome, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"  {outcome:<58} {n:>6,}")


if __name__ == "__main__":
    main()
