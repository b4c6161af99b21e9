"""The house rules of docs/architecture.md: a package imports only from packages to its left,
no two modules of the project import each other (directly or round a longer circle), and the
module map lists every module."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

ORDER = [
    "topologies",
    "chakra_ir",
    "payloads",
    "tacos",
    "mscclang_frontend",
    "baselines",
    "backends",
    "workloads",
    "explore",
    "collc",
]
ROOT = Path(__file__).resolve().parent.parent
GENERATED = {"chakra_ir/et/et_def_pb2.py"}


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


def _modules(root: Path, packages: list[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the packages under root."""
    out = {}
    for pkg in packages:
        for f in sorted((root / pkg).rglob("*.py")):
            parts = f.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


def _imported(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The project modules a module imports, wherever the import statement stands (a function
    body and `if TYPE_CHECKING:` included): an import inside a function is still a circle.
    `from pkg import sub` imports the submodule; `from pkg import name` the package itself."""

    def known(name: str) -> str:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (known(a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            for a in node.names:
                sub = f"{base}.{a.name}"
                yield sub if sub in modules else known(base)


def import_graph(root: Path, packages: list[str]) -> nx.DiGraph:
    """Module -> the project modules it imports (no edge to a module outside the packages)."""
    modules = _modules(root, packages)
    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        for target in _imported(module, path, modules):
            if target and target != module:
                graph.add_edge(module, target)
    return graph


def circles(root: Path, packages: list[str]) -> list[list[str]]:
    """Every import circle: the strongly connected sets of two or more modules, sorted."""
    graph = import_graph(root, packages)
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def test_no_module_imports_itself_round_a_circle() -> None:
    assert circles(ROOT, ORDER) == []


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_circle_check_sees_circles_wherever_the_import_stands(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "p/__init__.py": "from p.a import A\n",
            "p/a.py": "A = 1\ndef f():\n    from p import b\n",
            "p/b.py": "from .c import C\n",
            "p/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.a\nC = 1\n",
            "p/d.py": "from p import a\n",
        },
    )
    assert circles(tmp_path, ["p"]) == [["p.a", "p.b", "p.c"]]
    (tmp_path / "p/c.py").write_text("C = 1\n")
    assert circles(tmp_path, ["p"]) == []
    # a submodule that takes a name from its own package's __init__ closes a circle
    (tmp_path / "p/a.py").write_text("from p import A2\nA = 1\n")
    assert circles(tmp_path, ["p"]) == [["p", "p.a"]]


MAP = ROOT / "docs" / "architecture.md"


def test_the_module_map_lists_every_module_once() -> None:
    text = MAP.read_text()
    section = text[text.index("## 8. Module map") :]
    listed = re.findall(r"^- `([\w/]+\.py)`: \S", section, flags=re.MULTILINE)
    files = sorted(
        str(f.relative_to(ROOT))
        for pkg in ORDER
        for f in (ROOT / pkg).rglob("*.py")
        if str(f.relative_to(ROOT)) not in GENERATED
    )
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert sorted(set(listed) - set(files)) == [], "listed in docs/architecture.md, not a file"
    assert sorted(set(files) - set(listed)) == [], "a module missing from docs/architecture.md"
