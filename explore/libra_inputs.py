"""LIBRA's own input files, read as they are (docs/libra.md, section 7).

- network YAML: ``Topology`` (Ring, FullyConnected, Switch per dimension), ``NpusCount``,
  ``CostDimension`` (the cost level of each dimension);
- communicator YAML: ``Forward``, ``InputGrad``, ``WeightGrad``: the group size on each
  dimension (-1: not used) of the collectives of each phase;
- cost-model YAML: `explore.cost.read_cost_model`;
- workload: ASTRA-sim 1.0 text, one layer a line of 12 fields (name, reserved, then compute
  ns, collective, bytes for the forward, input-gradient and weight-gradient phases, then a
  delay), with or without ASTRA-sim 1.0's two header lines (parallelism and layer count);
- constraints: LIBRA's Python files are *read*, never run: each ``addLConstr(...)`` or
  ``addConstr(...)`` call is translated into collc's constraint language when its argument is
  a comparison of linear expressions in ``bw[i]``, ``gp.quicksum(bw)`` (or ``sum(bw)``) and
  numbers (``+``, ``-``, ``*`` by a number); anything else is an error naming the line;
- ``libra_configs.py``: which files its ``libra_configs()`` parses, which constraint set and
  training loop it takes and its objective (string literals and names, read the same way).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from explore.constraints import LinearConstraint, linear_text
from explore.network import ExploreError, Network, network_from_kinds
from explore.timing import Phase
from topologies.errors import SourcePos
from workloads.model import CollKind

COLLECTIVES = {
    "none": None,
    "allreduce": CollKind.ALL_REDUCE,
    "allgather": CollKind.ALL_GATHER,
    "reducescatter": CollKind.REDUCE_SCATTER,
    "alltoall": CollKind.ALL_TO_ALL,
}
"""ASTRA-sim 1.0's collective names (case-insensitive, as LIBRA reads them)."""

PHASES = ("Forward", "InputGrad", "WeightGrad")


def read_network(path: str | Path) -> tuple[Network, tuple[str, ...]]:
    """LIBRA's network YAML: the network and each dimension's cost level."""
    from topologies.files import YamlDocument

    doc = YamlDocument(str(path), Path(path).read_text(encoding="utf-8"))
    data = doc.mapping((), ("Topology", "NpusCount", "CostDimension"))
    for key in ("Topology", "NpusCount", "CostDimension"):
        if not isinstance(data.get(key), list):
            raise doc.error((key,) if key in data else (), f"expected a list {key}")
    kinds, sizes, levels = data["Topology"], data["NpusCount"], data["CostDimension"]
    if not len(kinds) == len(sizes) == len(levels):
        raise doc.error(("NpusCount",), "Topology, NpusCount and CostDimension differ in length")
    try:
        net = network_from_kinds(kinds, sizes)
    except ExploreError as e:
        raise ExploreError(e.message, doc.pos(("Topology",))) from None
    return net, tuple(str(x) for x in levels)


def read_communicator(path: str | Path, net: Network) -> dict[str, tuple[int, ...]]:
    """LIBRA's communicator YAML: per phase, the group's span of each dimension (1: unused)."""
    from topologies.files import YamlDocument

    doc = YamlDocument(str(path), Path(path).read_text(encoding="utf-8"))
    data = doc.mapping((), PHASES)
    out = {}
    for ph in PHASES:
        if ph not in data:
            raise doc.error((), f"missing {ph}")
        v = data[ph]
        if not isinstance(v, list) or len(v) != net.ndims:
            raise doc.error((ph,), f"expected a list of {net.ndims} group sizes (-1: unused)")
        shape = []
        for d, g in enumerate(v):
            if (
                isinstance(g, bool)
                or not isinstance(g, int)
                or not (g == -1 or 1 <= g <= net.dims[d].size)
            ):
                raise doc.error(
                    (ph, d), f"group size {g!r} is not -1 or 1..{net.dims[d].size} (dimension {d})"
                )
            if g > 1 and net.dims[d].size % g:
                raise doc.error(
                    (ph, d), f"group size {g} does not divide dimension {d}'s {net.dims[d].size}"
                )
            shape.append(max(g, 1))
        out[ph] = tuple(shape)
    return out


@dataclass(frozen=True)
class TextLayer:
    """One layer of an ASTRA-sim 1.0 text workload: per phase (compute ns, collective or
    None, bytes)."""

    name: str
    phases: tuple[tuple[float, CollKind | None, float], ...]
    line: int


def read_text_workload(path: str | Path) -> list[TextLayer]:
    """An ASTRA-sim 1.0 text workload's layers (module docstring)."""
    name = str(path)
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    layers = []
    start = 0
    if lines and len(lines[0].split()) != 12:
        start = 1  # ASTRA-sim 1.0's parallelism line
        if len(lines) > 1 and re.fullmatch(r"\s*\d+\s*", lines[1]):
            start = 2
    for no in range(start, len(lines)):
        text = lines[no]
        if not text.strip():
            continue
        f = text.split()
        pos = SourcePos(file=name, line=no + 1, column=1, text=text)
        if len(f) != 12:
            raise ExploreError(
                f"a layer has 12 fields (name, reserved, then compute, collective and bytes of "
                f"three phases, delay); this line has {len(f)}",
                pos,
            )
        phases = []
        for k in range(3):
            comp, coll, size = f[2 + 3 * k : 5 + 3 * k]
            col = text.index(comp) + 1
            try:
                c, s = float(comp), float(size)
            except ValueError:
                raise ExploreError(
                    f"phase {PHASES[k]}: compute {comp!r} and size {size!r} must be numbers",
                    SourcePos(file=name, line=no + 1, column=col, text=text),
                ) from None
            if not (c >= 0 and s >= 0) or c == float("inf") or s == float("inf"):
                raise ExploreError(
                    f"phase {PHASES[k]}: compute and size must be finite and >= 0", pos
                )
            kind = coll.lower()
            if kind not in COLLECTIVES:
                raise ExploreError(
                    f"unknown collective {coll!r} (expected NONE, ALLREDUCE, ALLGATHER, "
                    "REDUCESCATTER or ALLTOALL)",
                    SourcePos(file=name, line=no + 1, column=text.index(coll) + 1, text=text),
                )
            phases.append((c, COLLECTIVES[kind], s))
        layers.append(TextLayer(f[0], tuple(phases), no + 1))
    if not layers:
        raise ExploreError("the workload has no layers", SourcePos(file=name))
    return layers


def layer_phases(
    layers: list[TextLayer], comm: dict[str, tuple[int, ...]]
) -> list[tuple[str, Phase, Phase, Phase]]:
    """The layers as `explore.timing.serial_graph` takes them."""
    out = []
    for layer in layers:
        ph = [
            Phase(c, k if s > 0 else None, s, comm[PHASES[i]])
            for i, (c, k, s) in enumerate(layer.phases)
        ]
        out.append((layer.name, ph[0], ph[1], ph[2]))
    return out


class _Linear:
    """A linear expression in bw: coefficients and a constant."""

    def __init__(self, coeffs: list[float], const: float) -> None:
        self.coeffs, self.const = coeffs, const


def _translate(node: ast.expr, ndims: int, fail: object) -> _Linear:
    assert callable(fail)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return _Linear([0.0] * ndims, float(node.value))
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "bw"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, int)
    ):
        d = node.slice.value
        if not 0 <= d < ndims:
            raise fail(node, f"unknown dimension bw[{d}]: the network has {ndims}")
        c = [0.0] * ndims
        c[d] = 1.0
        return _Linear(c, 0.0)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        fn = node.func
        name = (
            fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
        )
        arg = node.args[0]
        if name in ("quicksum", "sum") and isinstance(arg, ast.Name) and arg.id == "bw":
            return _Linear([1.0] * ndims, 0.0)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        e = _translate(node.operand, ndims, fail)
        s = -1.0 if isinstance(node.op, ast.USub) else 1.0
        return _Linear([s * c for c in e.coeffs], s * e.const)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
        a = _translate(node.left, ndims, fail)
        b = _translate(node.right, ndims, fail)
        if isinstance(node.op, ast.Mult):
            if any(a.coeffs) and any(b.coeffs):
                raise fail(node, "a product of bandwidths is not linear")
            k, e = (a.const, b) if not any(a.coeffs) else (b.const, a)
            return _Linear([k * c for c in e.coeffs], k * e.const)
        s = 1.0 if isinstance(node.op, ast.Add) else -1.0
        return _Linear(
            [x + s * y for x, y in zip(a.coeffs, b.coeffs, strict=True)], a.const + s * b.const
        )
    raise fail(
        node,
        "not a linear expression collc translates (bw[i], gp.quicksum(bw), numbers, +, -, * by "
        "a number)",
    )


def read_constraints_py(
    path: str | Path, ndims: int, function: str | None = None
) -> list[LinearConstraint]:
    """The constraints of a LIBRA constraint file (``function``: only that function's)."""
    name = str(path)
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()

    def where(node: ast.AST) -> SourcePos:
        line = getattr(node, "lineno", 0)
        return SourcePos(
            file=name,
            line=line,
            column=getattr(node, "col_offset", -1) + 1,
            text=lines[line - 1] if 0 < line <= len(lines) else "",
        )

    def fail(node: ast.AST, message: str) -> ExploreError:
        return ExploreError(message, where(node))

    try:
        tree = ast.parse(text, name)
    except SyntaxError as e:
        raise ExploreError(
            f"not Python: {e.msg}",
            SourcePos(file=name, line=e.lineno or 0, column=e.offset or 0, text=e.text or ""),
        ) from None
    out: list[LinearConstraint] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr not in ("addLConstr", "addConstr"):
            continue
        if function is not None and not any(
            isinstance(f, ast.FunctionDef)
            and f.name == function
            and f.lineno <= node.lineno <= (f.end_lineno or 0)
            for f in tree.body
        ):
            continue
        if len(node.args) != 1 or not isinstance(node.args[0], ast.Compare):
            raise fail(node, f"{node.func.attr} takes one comparison here (lhs ==, <= or >= rhs)")
        cmp = node.args[0]
        items = [cmp.left, *cmp.comparators]
        for k, op in enumerate(cmp.ops):
            sense = {ast.Eq: "==", ast.LtE: "<=", ast.GtE: ">="}.get(type(op))
            if sense is None:
                raise fail(cmp, "only ==, <= and >= are linear constraints")
            a = _translate(items[k], ndims, fail)
            b = _translate(items[k + 1], ndims, fail)
            coeffs = tuple(x - y for x, y in zip(a.coeffs, b.coeffs, strict=True))
            if not any(coeffs):
                raise fail(cmp, "the constraint names no bandwidth")
            rhs = b.const - a.const
            out.append(
                LinearConstraint(coeffs, sense, rhs, linear_text(coeffs, sense, rhs), where(cmp))
            )
    if not out:
        raise ExploreError("no addLConstr/addConstr call found", SourcePos(file=name))
    return out


@dataclass(frozen=True)
class LibraConfig:
    """What a ``libra_configs.py`` selects: file paths (as written), the constraint set's
    name, the training loop's and the objective (``perf`` or ``perf-per-cost``)."""

    files: dict[str, str]
    constraint: str | None
    training_loop: str | None
    objective: str | None


def read_configs(path: str | Path) -> LibraConfig:
    """The selections of LIBRA's ``libra_configs.py`` (read, never run): the path literal of
    each ``parse(path=...)`` by the variable it is assigned to, ``constraints['NAME']``,
    ``training_loops['NAME']`` and ``SolverObjective.X`` assignments (commented-out lines
    are comments)."""
    name = str(path)
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), name)
    except SyntaxError as e:
        raise ExploreError(
            f"not Python: {e.msg}", SourcePos(file=name, line=e.lineno or 0)
        ) from None
    files: dict[str, str] = {}
    constraint = loop = objective = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if not isinstance(target, ast.Name):
            continue
        v = node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "parse":
            for kw in v.keywords:
                if (
                    kw.arg == "path"
                    and isinstance(kw.value, ast.Constant)
                    and isinstance(kw.value.value, str)
                ):
                    files[target.id] = kw.value.value
            if v.args and isinstance(v.args[0], ast.Constant) and isinstance(v.args[0].value, str):
                files[target.id] = v.args[0].value
        elif isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name):
            key = v.slice.value if isinstance(v.slice, ast.Constant) else None
            if isinstance(key, str) and v.value.id == "constraints":
                constraint = key
            elif isinstance(key, str) and v.value.id == "training_loops":
                loop = key
        elif (
            isinstance(v, ast.Attribute)
            and isinstance(v.value, ast.Name)
            and v.value.id == "SolverObjective"
        ):
            objective = {"PerfOpt": "perf", "PerfPerCostOpt": "perf-per-cost"}.get(v.attr)
    return LibraConfig(files, constraint, loop, objective)
