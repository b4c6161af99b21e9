"""Compile msccl-tools' MSCCLang examples with collc and compare with msccl-tools' own XML.

Nothing of msccl-tools ships with collc: point this script at a checkout of msccl-tools (the
Azure fork has ``tests/configs/test-config.json``, the runs its CI tests) and, to make the
reference XML, at a Python that has msccl-tools installed::

    python -m benchmarks.bench_msccl_examples --upstream /tmp/msccl-tools \\
        --msccl-python /tmp/venv/bin/python [--all]

For every run it prints whether collc compiles the program unchanged (and verifies it),
whether msccl-tools' XML imports into collc, and whether the two are equivalent at chunk level
(`mscclang_frontend.compare`). ``--all`` adds every other ``.py`` under
``examples/mscclang`` (not ``mscclpp/``) with the arguments given in ``--args-file`` (lines
``relative/path.py arg ...``) or none.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

from chakra_ir.program import Program
from mscclang_frontend import CompileError, compile_file_all
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


def _compile(path: Path, argv: list[str]) -> tuple[list[Program] | None, str]:
    try:
        return [c.program for c in compile_file_all(path, argv)], "compiles"
    except CompileError as e:
        reason = str(e).splitlines()[0]
    try:
        programs = [c.program for c in compile_file_all(path, argv, as_custom=True)]
        return programs, f"refused by default ({reason}); compiles with --as-custom"
    except CompileError:
        return None, f"refused: {reason}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--msccl-python", default=None, help="a Python with msccl-tools installed")
    ap.add_argument("--all", action="store_true", help="every example, not only the CI runs")
    ap.add_argument("--args-file", type=Path, default=None)
    a = ap.parse_args()
    base = a.upstream / "examples" / "mscclang"
    counts = {"runs": 0, "compile": 0, "as_custom": 0, "reference": 0, "import": 0}
    counts.update({"equivalent": 0, "equivalent_but_scratch": 0})
    with tempfile.TemporaryDirectory() as tmp:
        for rel, argv in _runs(a.upstream, a.all, a.args_file):
            counts["runs"] += 1
            path = base / rel
            ours, how = _compile(path, argv)
            if ours is not None:
                counts["compile" if how == "compiles" else "as_custom"] += 1
            ref = "no reference"
            docs = _reference(a.msccl_python, path, argv) if a.msccl_python else None
            if a.msccl_python and docs is None:
                ref = "msccl-tools fails"
            elif docs is not None:
                counts["reference"] += 1
                ref = _against(docs, ours, Path(tmp) / rel.replace("/", "_"), counts)
            print(f"{rel} {' '.join(argv)}: {how}; {ref}", flush=True)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


def _against(
    docs: list[str], ours: list[Program] | None, stem: Path, counts: dict[str, int]
) -> str:
    theirs: list[Program] = []
    for k, doc in enumerate(docs):
        xml = stem.with_suffix(f".{k}.xml")
        xml.write_text(doc)
        try:
            theirs.append(read_xml(xml).program)
        except CollcError as e:
            return f"import refused: {str(e).splitlines()[0]}"
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
    return "imports, " + "; ".join(verdicts)


if __name__ == "__main__":
    main()
