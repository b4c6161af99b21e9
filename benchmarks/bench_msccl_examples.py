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
import subprocess
import tempfile
from pathlib import Path

from mscclang_frontend import CompileError, compile_file
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", type=Path, required=True)
    ap.add_argument("--msccl-python", default=None, help="a Python with msccl-tools installed")
    ap.add_argument("--all", action="store_true", help="every example, not only the CI runs")
    ap.add_argument("--args-file", type=Path, default=None)
    a = ap.parse_args()
    base = a.upstream / "examples" / "mscclang"
    counts = {"runs": 0, "compile": 0, "reference": 0, "import": 0, "equivalent": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for rel, argv in _runs(a.upstream, a.all, a.args_file):
            counts["runs"] += 1
            path = base / rel
            try:
                ours = compile_file(path, argv).program
                ok = "compiles"
                counts["compile"] += 1
            except CompileError as e:
                ours = None
                ok = f"refused: {str(e).splitlines()[0]}"
            ref = "no reference"
            if a.msccl_python:
                xml = Path(tmp) / (rel.replace("/", "_") + ".xml")
                done = subprocess.run(
                    [a.msccl_python, str(path), *argv],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                start = done.stdout.find("<algo")
                if done.returncode != 0 or start < 0:
                    ref = "msccl-tools fails"
                else:
                    counts["reference"] += 1
                    end = done.stdout.rfind("</algo>") + len("</algo>")
                    xml.write_text(done.stdout[start:end] + "\n")
                    try:
                        theirs = read_xml(xml).program
                        counts["import"] += 1
                        ref = "imports"
                        if ours is not None:
                            diff = compare(ours, theirs)
                            if diff.equivalent:
                                counts["equivalent"] += 1
                                ref += ", equivalent"
                            elif compare(ours, theirs, scratch_offsets=False).equivalent:
                                n = len(diff.ranks) + len(diff.pairs)
                                ref += f", equivalent but for scratch offsets ({n} differences)"
                            else:
                                ref += f", differs: {diff.summary(3)}"
                    except CollcError as e:
                        ref = f"import refused: {str(e).splitlines()[0]}"
            print(f"{rel} {' '.join(argv)}: {ok}; {ref}", flush=True)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
