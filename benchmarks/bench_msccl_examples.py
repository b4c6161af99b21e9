"""Compile msccl-tools' MSCCLang examples with collc and compare with msccl-tools' own XML.

Nothing of msccl-tools ships with collc: point this script at a checkout of msccl-tools (the
Azure fork has ``tests/configs/test-config.json``, the runs its CI tests) and, to make the
reference XML, at a Python that has msccl-tools installed::

    python -m benchmarks.bench_msccl_examples --upstream /tmp/msccl-tools \\
        --msccl-python /tmp/venv/bin/python [--all]

For every run it prints whether collc compiles the program unchanged (and verifies it),
whether msccl-tools' XML imports into collc, whether the two are equivalent at chunk level
(`mscclang_frontend.compare`), whether the XML headers agree (``coll``, ``inplace``,
``outofplace``, ``nchunksperloop``, ``nchannels`` aside, and each GPU's ``i_chunks``,
``o_chunks``, ``s_chunks``) and how many fused steps (``rcs``, ``rrs``, ``rrcs``) each XML
has. ``--all`` adds every other ``.py`` under ``examples/mscclang`` (not ``mscclpp/``) with the
arguments given in ``--args-file`` (lines ``relative/path.py arg ...``) or none; ``--extra
"path arg ..."`` (repeatable) adds programs outside the checkout, by default collc's own
broadcast tree (tests/mscclang/programs/broadcast_tree.py 7 1 1).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import collc.exporters  # noqa: F401  (registers the XML writer that XML() and emit_xml use)
from chakra_ir.program import Program
from chakra_ir.verify import verify
from mscclang_frontend import CompiledProgram, CompileError, compile_file_all, hooks
from mscclang_frontend.compare import compare
from mscclang_frontend.xml import read_xml
from topologies.errors import CollcError


def _runs(upstream: Path, all_files: bool, args_file: Path | None) -> list[tuple[str, list[str]]]:
    config = upstream / "tests" / "configs" / "test-config.json"
    runs: list[tuple[str, list[str]]] = []
    for entry in json.loads(config.read_text()):
        name = str(entry["filename"])
        if not name.startswith("mscclpp/"):
            runs.append((name, [str(a) for a in entry["args"]]))
    if all_files:
        extra: dict[str, list[str]] = {}
        if args_file is not None:
            for line in args_file.read_text().splitlines():
                if line.strip():
                    head, *rest = line.split()
                    extra[head] = rest
        seen = {n for n, _ in runs}
        base = upstream / "examples" / "mscclang"
        for p in sorted(base.rglob("*.py")):
            rel = str(p.relative_to(base))
            if rel not in seen and not rel.startswith("mscclpp/"):
                runs.append((rel, extra.get(rel, [])))
    return runs


def _reference(python: str, path: Path, argv: list[str]) -> list[str] | None:
    """The XML documents msccl-tools prints for the program (None when it fails)."""
    done = subprocess.run(
        [python, str(path), *argv], capture_output=True, text=True, timeout=600, check=False
    )
    docs = re.findall(r"<algo\b.*?</algo>", done.stdout, flags=re.S)
    if done.returncode != 0 or not docs:
        return None
    return [d + "\n" for d in docs]


def _compile(path: Path, argv: list[str]) -> tuple[list[CompiledProgram] | None, str]:
    try:
        return compile_file_all(path, argv), "compiles"
    except CompileError as e:
        reason = str(e).splitlines()[0]
    try:
        programs = compile_file_all(path, argv, as_custom=True)
        return programs, f"refused by default ({reason}); compiles with --as-custom"
    except CompileError:
        return None, f"refused: {reason}"


FUSED = ("rcs", "rrs", "rrcs")
GPU_SIZES = ("i_chunks", "o_chunks", "s_chunks")
HEADER = ("coll", "inplace", "outofplace", "nchunksperloop", "ngpus", "proto")


def fused_steps(doc: str) -> int:
    """How many steps of the XML are fused receive-and-send steps."""
    root = ET.fromstring(doc)
    return sum(1 for st in root.iter("step") if st.get("type") in FUSED)


def header_differences(mine: str, theirs: str) -> list[str]:
    """The header and per-GPU buffer-size attributes on which two XML documents differ."""
    a, b = ET.fromstring(mine), ET.fromstring(theirs)
    out = [f"{k} {a.get(k)} vs {b.get(k)}" for k in HEADER if a.get(k) != b.get(k)]
    ga = {g.get("id"): g for g in a.iter("gpu")}
    for g in b.iter("gpu"):
        m = ga.get(g.get("id"))
        for k in GPU_SIZES:
            if m is None or m.get(k) != g.get(k):
                out.append(f"gpu {g.get('id')} {k} {None if m is None else m.get(k)} vs {g.get(k)}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--msccl-python", default=None, help="a Python with msccl-tools installed")
    ap.add_argument("--all", action="store_true", help="every example, not only the CI runs")
    ap.add_argument("--args-file", type=Path, default=None)
    ap.add_argument("--extra", action="append", default=None, help='"path arg ..." to add')
    a = ap.parse_args()
    base = a.upstream / "examples" / "mscclang"
    counts = {"runs": 0, "compile": 0, "as_custom": 0, "reference": 0, "import": 0}
    counts.update({"equivalent": 0, "equivalent_but_scratch": 0})
    counts.update({"same_header": 0, "same_header_but_scratch": 0})
    counts.update({"fused_collc": 0, "fused_msccl": 0})
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(base / rel, rel, argv) for rel, argv in _runs(a.upstream, a.all, a.args_file)]
        for spec in a.extra if a.extra is not None else [DEFAULT_EXTRA]:
            head, *rest = spec.split()
            runs.append((Path(head), head, rest))
        for path, rel, argv in runs:
            counts["runs"] += 1
            ours, how = _compile(path, argv)
            if ours is not None:
                counts["compile" if how == "compiles" else "as_custom"] += 1
            ref = "no reference"
            docs = _reference(a.msccl_python, path, argv) if a.msccl_python else None
            if a.msccl_python and docs is None:
                ref = "msccl-tools fails"
            elif docs is not None:
                counts["reference"] += 1
                stem = Path(tmp) / rel.replace("/", "_")
                ref = _against(docs, ours, stem, counts, as_custom=how != "compiles")
            print(f"{rel} {' '.join(argv)}: {how}; {ref}", flush=True)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


DEFAULT_EXTRA = str(
    Path(__file__).parent.parent / "tests/mscclang/programs/broadcast_tree.py 7 1 1"
)


def _against(
    docs: list[str],
    compiled: list[CompiledProgram] | None,
    stem: Path,
    counts: dict[str, int],
    as_custom: bool = False,
) -> str:
    """msccl-tools' XML (read ``--as-custom`` when collc compiled the program so, and
    verified) against collc's compiled programs."""
    ours = None if compiled is None else [c.program for c in compiled]
    theirs: list[Program] = []
    unverified = ""
    for k, doc in enumerate(docs):
        xml = stem.with_suffix(f".{k}.xml")
        xml.write_text(doc)
        try:
            theirs.append(read_xml(xml, as_custom=as_custom).program)
        except CollcError as e:
            return f"import refused: {str(e).splitlines()[0]}"
        try:
            verify(theirs[-1])
        except CollcError as e:
            unverified = (
                unverified or f"; msccl-tools' XML fails verification: {getattr(e, 'check', e)}"
            )
    counts["import"] += 1
    if ours is None:
        return f"{len(docs)} reference XML imports"
    if len(ours) != len(theirs):
        return f"{len(ours)} programs against {len(theirs)} XML documents"
    verdicts = []
    for mine, other in zip(ours, theirs, strict=True):
        diff = compare(mine, other)
        if diff.equivalent:
            verdicts.append("equivalent")
        elif compare(mine, other, scratch_offsets=False).equivalent:
            n = len(diff.ranks) + len(diff.pairs)
            verdicts.append(f"equivalent but for scratch offsets ({n} differences)")
        else:
            verdicts.append(f"differs: {diff.summary(3)}")
    if all(v == "equivalent" for v in verdicts):
        counts["equivalent"] += 1
    elif all(v.startswith("equivalent") for v in verdicts):
        counts["equivalent_but_scratch"] += 1
    assert compiled is not None
    mine = [hooks.emit_xml(c) or "" for c in compiled]
    diffs = [d for m, t in zip(mine, docs, strict=True) for d in header_differences(m, t)]
    if not diffs:
        counts["same_header"] += 1
    elif all("s_chunks" in d for d in diffs):
        counts["same_header_but_scratch"] += 1
    fused = (sum(map(fused_steps, mine)), sum(map(fused_steps, docs)))
    counts["fused_collc"] += fused[0]
    counts["fused_msccl"] += fused[1]
    head = "same header" if not diffs else f"header differs ({len(diffs)}: {'; '.join(diffs[:3])})"
    fused_text = f"fused steps {fused[0]} vs {fused[1]}"
    return f"imports{unverified}, {'; '.join(verdicts)}; {head}; {fused_text}"


if __name__ == "__main__":
    main()
