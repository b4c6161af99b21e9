"""The layering (docs/architecture.md): a package imports only from packages to its left."""

from __future__ import annotations

import ast
from pathlib import Path

ORDER = [
    "topologies",
    "chakra_ir",
    "tacos",
    "mscclang_frontend",
    "baselines",
    "backends",
    "workloads",
    "collc",
]
ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_packages_import_only_to_their_left() -> None:
    wrong = []
    for i, pkg in enumerate(ORDER):
        files = sorted((ROOT / pkg).rglob("*.py"))
        assert files, pkg
        for f in files:
            for name in _imports(f) & set(ORDER[i + 1 :]):
                wrong.append(f"{f.relative_to(ROOT)} imports {name}")
    assert wrong == []
