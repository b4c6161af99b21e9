"""Entry points that make a `Topology`: `parse_topology`, `load_topology_file`, `from_networkx`.

A spec is read in three steps: `topologies.spec` splits it, a generator (or a file reader) makes
the `Blueprint`, and the link overrides and failures of the spec are applied here. The canonical
spec of the result lists every option explicitly, in the order bw, lat, l1, l2bw, links (the
generator's, always), then linkbw, linklat, fail, fail_random, seed (when used).
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from topologies import generators
from topologies.errors import SourcePos, SpecError
from topologies.generators import Blueprint
from topologies.routing import FC, LINE, RING, SWITCH, UNIRING
from topologies.spec import (
    Pair,
    SpecReader,
    SpecSyntax,
    Token,
    format_bandwidth,
    format_latency,
    format_pairs,
)
from topologies.topology import LinkSpec, Topology
from topologies.units import parse_bandwidth_bytes_per_ns, parse_time_ns

# Start-up (issue 12): networkx is needed only by the caller of `from_networkx`, who has it.
if TYPE_CHECKING:
    import networkx as nx

_MODIFIERS = ("linkbw", "linklat", "fail", "fail_random", "seed")
_ALLOWED_OPTIONS: dict[str, tuple[str, ...]] = {
    **{
        kind: ("bw", "lat", *_MODIFIERS)
        for kind in ("ring", "uniring", "fc", "mesh", "torus", "hypercube", "stack")
    },
    "switch": ("bw", "lat", "innet", *_MODIFIERS),
    "fred": ("bw", "lat", "l1", "l2bw", "innet", "cfg", *_MODIFIERS),
    "graph": ("bw", "lat", "links", "innet", *_MODIFIERS),
    "file": _MODIFIERS,
}
_PER_DIMENSION = ("mesh", "torus", "hypercube", "stack")
_STACK_DIM = re.compile(r"(ring|fc|fullyconnected|switch)(.*)", re.IGNORECASE)
_STACK_KINDS = {"ring": RING, "fc": FC, "fullyconnected": FC, "switch": SWITCH}
_MAX_HYPERCUBE = 20


def parse_topology(spec: str) -> Topology:
    """Build the topology a spec string describes (grammar: `topologies.spec`, SPEC.md).

    ``spec`` may also be ``file:PATH`` or a bare path ending .yaml/.yml/.json. Raises SpecError
    (with the column of the bad token) for a malformed spec and TopologyError when the result
    is disconnected.
    """
    reader = SpecReader(spec)
    syntax = reader.syntax()
    allowed = _ALLOWED_OPTIONS[syntax.kind]
    for name, option in syntax.options.items():
        if name not in allowed:
            raise reader.error(
                f"unknown option {name!r} for {syntax.kind} (expected one of {', '.join(allowed)})",
                option.key.col,
            )
    blueprint = _generate(reader, syntax)
    topology = _finish(reader, syntax, blueprint)
    topology.check_connected()
    return topology


def load_topology_file(path: str | os.PathLike[str]) -> Topology:
    """The topology in a collc link-list file or an ASTRA-sim network YAML (see SPEC.md)."""
    from topologies.files import read_topology_file  # only for files (start-up time)

    blueprint = read_topology_file(os.fspath(path))
    topology = _make(blueprint, blueprint.head, set())
    topology.check_connected()
    return topology


def from_networkx(g: nx.DiGraph[Any] | nx.Graph[Any], num_npus: int | None = None) -> Topology:
    """A topology from a networkx graph whose nodes are the integers ``0..N-1``.

    Nodes below ``num_npus`` (default: the graph attribute ``num_npus``, else every node) are
    NPUs, the rest switches. Undirected edges become a link each way; multigraph edges each
    become a link. Edge attributes ``latency_ns`` and ``bandwidth_bytes_per_ns`` (numbers, or
    strings with units) default to 500 ns and 50 GB/s; ``dim`` defaults to -1. The spec is a
    ``graph:`` spec listing every link.
    """
    nodes = list(g.nodes)
    n = len(nodes)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in nodes) or set(nodes) != set(
        range(n)
    ):
        raise SpecError(f"from_networkx: nodes must be the integers 0..{n - 1}")
    npus = num_npus if num_npus is not None else g.graph.get("num_npus", n)
    if isinstance(npus, bool) or not isinstance(npus, int) or not 2 <= npus <= n:
        raise SpecError(f"from_networkx: num_npus must be between 2 and {n}, not {npus!r}")
    links: list[LinkSpec] = []
    for u, v, data in g.edges(data=True):
        if u == v:
            raise SpecError(f"from_networkx: self-loop at node {u}")
        lat = _attribute(data, "latency_ns", generators.DEFAULT_LATENCY, parse_time_ns, 0.0)
        bw = _attribute(
            data,
            "bandwidth_bytes_per_ns",
            generators.DEFAULT_BANDWIDTH,
            parse_bandwidth_bytes_per_ns,
        )
        dim = data.get("dim", -1)
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise SpecError(f"from_networkx: edge {u}-{v}: dim must be an integer, not {dim!r}")
        links.append((u, v, lat, bw, dim))
        if not g.is_directed():
            links.append((v, u, lat, bw, dim))
    generators.check_size(npus, len(links), None)
    blueprint = generators.graph(
        npus, n - npus, links, in_network=bool(g.graph.get("in_network", False))
    )
    topology = _make(blueprint, blueprint.head, set())
    topology.check_connected()
    return topology


def _attribute(
    data: dict[str, Any],
    name: str,
    default: float,
    parse: Callable[[str, SourcePos | None], float],
    minimum: float | None = None,
) -> float:
    value = data.get(name, default)
    if isinstance(value, str):
        return parse(value, None)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SpecError(f"from_networkx: {name} must be a finite number, not {value!r}")
    if (minimum is None and value <= 0) or (minimum is not None and value < minimum):
        bound = "> 0" if minimum is None else f">= {minimum:g}"
        raise SpecError(f"from_networkx: {name} must be {bound}, not {value!r}")
    return float(value)


# --- generator part -------------------------------------------------------------------------


def _generate(reader: SpecReader, syntax: SpecSyntax) -> Blueprint:
    kind = syntax.kind
    shape = syntax.shape
    if kind == "file":
        from topologies.files import read_topology_file  # only for files (start-up time)

        return read_topology_file(shape.text, reader.pos(shape.col))
    if kind in ("ring", "uniring", "fc", "switch", "fred"):
        n = reader.integer(shape, f"{kind} NPU count", 2)
        if kind == "fred":
            return _fred(reader, syntax, n)
        bw, lat = _values(reader, syntax, 1, generators.DEFAULT_BANDWIDTH)
        makers = {
            "ring": (generators.ring, RING),
            "uniring": (generators.uniring, UNIRING),
            "fc": (generators.fully_connected, FC),
            "switch": (generators.switch, SWITCH),
        }
        make, dim_kind = makers[kind]
        generators.check_size(
            n, generators.grid_link_count((n,), (dim_kind,)), reader.pos(shape.col)
        )
        if kind == "switch":
            return generators.switch(n, bw[0], lat[0], _innet(reader, syntax, False))
        return make(n, bw[0], lat[0])
    if kind in ("mesh", "torus"):
        sizes = tuple(
            reader.integer(part, f"{kind} dimension", 2) for part in reader.split(shape, "x")
        )
        bw, lat = _values(reader, syntax, len(sizes), generators.DEFAULT_BANDWIDTH)
        dim_kind = LINE if kind == "mesh" else RING
        _check_grid(reader, shape, sizes, (dim_kind,) * len(sizes))
        return (generators.mesh if kind == "mesh" else generators.torus)(sizes, bw, lat)
    if kind == "hypercube":
        d = reader.integer(shape, "hypercube dimension", 1)
        if d > _MAX_HYPERCUBE:
            raise reader.error(
                f"hypercube dimension {d} is too large (at most {_MAX_HYPERCUBE})", shape.col
            )
        bw, lat = _values(reader, syntax, d, generators.DEFAULT_BANDWIDTH)
        _check_grid(reader, shape, (2,) * d, (LINE,) * d)
        return generators.hypercube(d, bw, lat)
    if kind == "stack":
        dims: list[tuple[int, str]] = []
        for part in reader.split(shape, "*"):
            m = _STACK_DIM.fullmatch(part.text)
            if m is None:
                raise reader.error(
                    f"stack dimension {part.text!r} is not ring<N>, fc<N> or switch<N>",
                    part.col,
                )
            size_token = Token(m.group(2), part.col + len(m.group(1)))
            size = reader.integer(size_token, f"stack dimension {part.text!r} size", 2)
            dims.append((size, _STACK_KINDS[m.group(1).lower()]))
        sizes = tuple(s for s, _ in dims)
        kinds = tuple(k for _, k in dims)
        bw, lat = _values(reader, syntax, len(dims), generators.DEFAULT_BANDWIDTH)
        _check_grid(reader, shape, sizes, kinds)
        return generators.stack(sizes, kinds, bw, lat)
    return _graph(reader, syntax)


def _check_grid(
    reader: SpecReader, shape: Token, sizes: tuple[int, ...], kinds: tuple[str, ...]
) -> None:
    generators.check_size(
        math.prod(sizes), generators.grid_link_count(sizes, kinds), reader.pos(shape.col)
    )


def _values(
    reader: SpecReader, syntax: SpecSyntax, ndims: int, default_bw: float
) -> tuple[list[float], list[float]]:
    """The ``bw`` and ``lat`` options, one value per dimension."""
    result: list[list[float]] = []
    for name, parse, default in (
        ("bw", reader.bandwidth, default_bw),
        ("lat", reader.latency, generators.DEFAULT_LATENCY),
    ):
        option = syntax.options.get(name)
        if option is None:
            result.append([default] * ndims)
            continue
        items = reader.value_list(option.value)
        if len(items) == 1:
            result.append([parse(items[0])] * ndims)
            continue
        if syntax.kind not in _PER_DIMENSION:
            raise reader.error(
                f"{name} takes one value for {syntax.kind} "
                f"(per-dimension lists are for {', '.join(_PER_DIMENSION)})",
                option.value.col,
            )
        if len(items) != ndims:
            raise reader.error(
                f"{name} has {len(items)} values but {syntax.kind}:{syntax.shape.text} has "
                f"{ndims} dimensions",
                option.value.col,
            )
        result.append([parse(item) for item in items])
    return result[0], result[1]


def _fred(reader: SpecReader, syntax: SpecSyntax, n: int) -> Blueprint:
    bw, lat = _values(reader, syntax, 1, generators.FRED_BANDWIDTH)
    per_l1 = generators.FRED_NPUS_PER_L1
    if "l1" in syntax.options:
        per_l1 = reader.integer(syntax.options["l1"].value, "l1 (NPUs per L1 switch)", 1)
    l2bw: float | None = None
    innet = _innet(reader, syntax, True)
    cfg = syntax.options.get("cfg")
    if cfg is not None:
        name = cfg.value.text.strip().upper()
        if name not in generators.FRED_CONFIGS:
            raise reader.error(
                f"cfg must be one of {', '.join(generators.FRED_CONFIGS)} (the FRED paper's "
                f"configurations), not {cfg.value.text!r}",
                cfg.value.col,
            )
        for clash in ("l2bw", "innet"):
            if clash in syntax.options:
                raise reader.error(
                    f"cfg={name} sets l2bw and innet itself; give either cfg or {clash}",
                    syntax.options[clash].value.col,
                )
        share, innet = generators.FRED_CONFIGS[name]
        l2bw = None if share == 1.0 else per_l1 * bw[0] * share
    if "l2bw" in syntax.options:
        token = syntax.options["l2bw"].value
        if token.text.lower() != "auto":
            l2bw = reader.bandwidth(token)
    generators.check_size(n, 4 * n, reader.pos(syntax.shape.col))
    return generators.fred(n, per_l1, bw[0], lat[0], l2bw, innet)


_YES = ("yes", "true", "on", "1")
_NO = ("no", "false", "off", "0")


def _innet(reader: SpecReader, syntax: SpecSyntax, default: bool) -> bool:
    """The ``innet=yes|no`` option: whether the switches reduce and multicast."""
    option = syntax.options.get("innet")
    if option is None:
        return default
    text = option.value.text.strip().lower()
    if text in _YES:
        return True
    if text in _NO:
        return False
    raise reader.error(f"innet must be yes or no, not {option.value.text!r}", option.value.col)


def _graph(reader: SpecReader, syntax: SpecSyntax) -> Blueprint:
    shape = syntax.shape
    npu_text, _, switch_text = shape.text.partition("+")
    npus = reader.integer(Token(npu_text.strip(), shape.col), "graph NPU count", 2)
    switches = 0
    if "+" in shape.text:
        switch_col = shape.col + len(npu_text) + 1
        switches = reader.integer(Token(switch_text.strip(), switch_col), "graph switch count", 0)
    generators.check_size(npus, 0, reader.pos(shape.col))
    bw, lat = _values(reader, syntax, 1, generators.DEFAULT_BANDWIDTH)
    nodes = npus + switches
    links: list[LinkSpec] = []
    option = syntax.options.get("links")
    if option is not None:
        for entry in reader.entries(option.value, "links"):
            pair, fields = reader.pair_with_fields(entry, "links")
            if len(fields) > 3:
                raise reader.error(
                    f"links entry {entry.text!r} has too many fields "
                    "(expected PAIR[:BANDWIDTH[:LATENCY[:DIM]]])",
                    fields[3].col,
                )
            _check_nodes(reader, pair, nodes, "links")
            link_bw = reader.bandwidth(fields[0]) if len(fields) > 0 else bw[0]
            link_lat = reader.latency(fields[1]) if len(fields) > 1 else lat[0]
            dim = reader.integer(fields[2], "link dimension", 0) if len(fields) > 2 else -1
            for a, b in pair.directed():
                links.append((a, b, link_lat, link_bw, dim))
    generators.check_size(npus, len(links), reader.pos(shape.col))
    return generators.graph(
        npus, switches, links, bw[0], lat[0], in_network=_innet(reader, syntax, False)
    )


def _check_nodes(reader: SpecReader, pair: Pair, nodes: int, what: str) -> None:
    for node in (pair.a, pair.b):
        if node >= nodes:
            raise reader.error(
                f"{what}: node {node} does not exist (nodes are 0..{nodes - 1})", pair.token.col
            )


# --- overrides and failures -----------------------------------------------------------------


def _finish(reader: SpecReader, syntax: SpecSyntax, blueprint: Blueprint) -> Topology:
    options = syntax.options
    existing = {(s, d) for s, d, *_ in blueprint.links}
    nodes = blueprint.num_npus + blueprint.num_switches
    parts = [blueprint.head]

    def named_pairs(
        name: str, with_value: Callable[[Token], float] | None
    ) -> dict[tuple[int, int], float]:
        """The existing directed pairs an option names (with their value)."""
        chosen: dict[tuple[int, int], float] = {}
        option = options.get(name)
        if option is None:
            return chosen
        for entry in reader.entries(option.value, name):
            fields: list[Token] = []
            if with_value is None:
                pair = reader.pair(entry, name)
            else:
                pair, fields = reader.pair_with_fields(entry, name)
                if len(fields) != 1:
                    what = "BANDWIDTH" if name == "linkbw" else "LATENCY"
                    raise reader.error(
                        f"{name} entry {entry.text!r} is not A-B:{what} or A>B:{what}", entry.col
                    )
            hit = [p for p in pair.directed() if p in existing]
            if not hit:
                where = (
                    f"between {pair.a} and {pair.b}" if pair.both else f"from {pair.a} to {pair.b}"
                )
                missing = [n for n in (pair.a, pair.b) if n >= nodes]
                note = (
                    f" (node {missing[0]} does not exist; nodes are 0..{nodes - 1})"
                    if missing
                    else ""
                )
                raise reader.error(f"{name}: no link {where}{note}", entry.col)
            value = with_value(fields[0]) if with_value is not None else 0.0
            for p in hit:
                chosen[p] = value
        return chosen

    bw_overrides = named_pairs("linkbw", reader.bandwidth)
    lat_overrides = named_pairs("linklat", reader.latency)
    explicit = set(named_pairs("fail", None))
    links = [
        (s, d, lat_overrides.get((s, d), lat), bw_overrides.get((s, d), bw), dim)
        for s, d, lat, bw, dim in blueprint.links
    ]
    removed = blueprint.failed | explicit

    if bw_overrides:
        parts.append(
            "linkbw=" + format_pairs({p: format_bandwidth(v) for p, v in bw_overrides.items()})
        )
    if lat_overrides:
        parts.append(
            "linklat=" + format_pairs({p: format_latency(v) for p, v in lat_overrides.items()})
        )
    if explicit:
        parts.append("fail=" + format_pairs(explicit))

    count = 0
    if "fail_random" in options:
        count = reader.integer(options["fail_random"].value, "fail_random", 0)
    seed = 0
    if "seed" in options:
        if "fail_random" not in options:
            raise reader.error("seed= is only used with fail_random=", options["seed"].key.col)
        seed = reader.integer(options["seed"].value, "seed", 0)
    if count:
        npus = blueprint.num_npus
        candidates = sorted(
            {(min(s, d), max(s, d)) for s, d in existing - removed if s < npus and d < npus}
        )
        if count > len(candidates):
            raise reader.error(
                f"fail_random={count} but only {len(candidates)} NPU-NPU link pairs can fail",
                options["fail_random"].value.col,
            )
        for a, b in random.Random(seed).sample(candidates, count):
            removed.update(p for p in ((a, b), (b, a)) if p in existing)
        parts.append(f"fail_random={count},seed={seed}")

    return _make(blueprint, ",".join(parts), removed, links)


def _make(
    blueprint: Blueprint,
    spec: str,
    removed: set[tuple[int, int]],
    links: list[LinkSpec] | None = None,
) -> Topology:
    removed = removed | blueprint.failed
    source = blueprint.links if links is None else links
    return Topology(
        spec=spec,
        name=blueprint.name,
        num_npus=blueprint.num_npus,
        num_switches=blueprint.num_switches,
        links=[lk for lk in source if (lk[0], lk[1]) not in removed],
        shape=blueprint.shape,
        dim_kinds=blueprint.dim_kinds,
        failed=removed,
        router=blueprint.router,
        layout=blueprint.layout,
        in_network=blueprint.in_network,
    )
