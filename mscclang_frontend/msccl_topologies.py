"""MSCCLang's topologies (``msccl.topologies`` and its submodules), as collc runs them.

A program uses a topology only for its number of nodes and to check that every copy or reduce
follows a link, so `Topology` holds just that, and each helper (``Topology(name, links)``, the
generic ``fully_connected``, ``ring``, ``line``, ``star``, ``hub_and_spoke``) builds one from
the same link table msccl-tools defines: ``links[dst][src]`` is the bandwidth from ``src`` to
``dst`` (0: no link). The machine tables (``dgx1``, ``dgx_a100``, ``amd4``, ``amd8``) are
facts about that hardware; ``distributed_*`` copy a local topology ``num_copies`` times and
join every pair of nodes of different copies with ``remote_bw``; ``reverse_topology``
transposes the table and ``binarize_topology`` keeps only connectivity. Switches only
constrain bandwidth in msccl-tools' synthesizer, which collc does not run, so they are
accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Callable

from mscclang_frontend.limits import ApiLimits
from mscclang_frontend.msccl_types import as_int
from mscclang_frontend.values import ApiError, Builtin, Unavailable, type_name


class Topology:
    """MSCCLang's topology: only the number of nodes and the existence of links matter.

    ``link(src, dst)`` is the bandwidth of the link from ``src`` to ``dst`` (0: none);
    MSCCLang stores it as ``links[dst][src]``.
    """

    def __init__(
        self,
        name: str,
        num_nodes: int,
        link_fn: Callable[[int, int], float],
    ) -> None:
        self.name = name
        self._n = num_nodes
        self._link = link_fn

    def num_nodes(self) -> int:
        return self._n

    def link(self, src: int, dst: int) -> float:
        src = as_int(src, "src", 0)
        dst = as_int(dst, "dst", 1)
        if not (0 <= src < self._n and 0 <= dst < self._n):
            raise ApiError(f"link({src}, {dst}): the topology has nodes 0..{self._n - 1}")
        return self._link(src, dst)

    @property
    def links(self) -> list[list[float]]:
        if self._n > 4096:
            raise ApiError(f"links of a {self._n}-node topology are too many to list")
        return [[self._link(s, d) for s in range(self._n)] for d in range(self._n)]

    def __repr__(self) -> str:
        return f"Topology({self.name!r}, {self._n} nodes)"


def _topology_size(n: object, limits: ApiLimits) -> int:
    size = as_int(n, "the number of nodes", 0, minimum=1)
    if size > limits.max_ranks:
        raise ApiError(f"topologies are limited to {limits.max_ranks} nodes, got {size}", 0)
    return size


def _user_topology(name: object, links: object, switches: object = None) -> Topology:
    if not isinstance(name, str):
        raise ApiError(f"the topology name must be a string, got {type_name(name)}", 0)
    if not isinstance(links, list | tuple) or not links:
        raise ApiError("links must be a non-empty list of lists (links[dst][src])", 1)
    n = len(links)
    table: list[list[float]] = []
    for d, row in enumerate(links):
        if not isinstance(row, list | tuple) or len(row) != n:
            raise ApiError(f"links[{d}] must be a list of {n} bandwidths", 1)
        vals: list[float] = []
        for x in row:
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise ApiError(f"links[{d}] holds {type_name(x)} {x!r}, expected a number", 1)
            vals.append(x)
        table.append(vals)
    return Topology(name, n, lambda s, d: table[d][s])


def _generic(kind: str, limits: ApiLimits) -> Callable[..., Topology]:
    """``msccl.topologies.generic``'s ``kind`` (``fully_connected``, ``ring``, ``line``,
    ``star`` or ``hub_and_spoke``), with links of bandwidth 1."""

    def make(num_nodes: object, non_blocking: object = True) -> Topology:
        n = _topology_size(num_nodes, limits)
        if kind in ("fully_connected", "hub_and_spoke"):
            return Topology(kind, n, lambda s, d: 1.0 if s != d else 0.0)
        if kind == "ring":
            return Topology(
                kind, n, lambda s, d: 1.0 if s != d and (s - d) % n in (1, n - 1) else 0.0
            )
        if kind == "line":
            return Topology(kind, n, lambda s, d: 1.0 if abs(s - d) == 1 else 0.0)
        return Topology(kind, n, lambda s, d: 1.0 if s != d and (s == 0 or d == 0) else 0.0)

    return make


# The tables msccl-tools ships, links[dst][src].
_DGX1 = (
    (0, 2, 1, 1, 2, 0, 0, 0),
    (2, 0, 1, 2, 0, 1, 0, 0),
    (1, 1, 0, 2, 0, 0, 2, 0),
    (1, 2, 2, 0, 0, 0, 0, 1),
    (2, 0, 0, 0, 0, 2, 1, 1),
    (0, 1, 0, 0, 2, 0, 1, 2),
    (0, 0, 2, 0, 1, 1, 0, 2),
    (0, 0, 0, 1, 1, 2, 2, 0),
)
_AMD4 = ((0, 1, 1, 0), (1, 0, 0, 1), (1, 0, 0, 1), (0, 1, 1, 0))
_AMD8 = (
    (0, 5, 6, 6, 5, 6, 5, 5),
    (5, 0, 5, 5, 6, 5, 6, 6),
    (6, 5, 0, 6, 5, 6, 5, 5),
    (6, 5, 6, 0, 5, 6, 5, 5),
    (5, 6, 5, 5, 0, 5, 6, 6),
    (6, 5, 6, 6, 5, 0, 5, 5),
    (5, 6, 5, 5, 6, 5, 0, 6),
    (5, 6, 5, 5, 6, 5, 6, 0),
)


def _table(name: str, links: tuple[tuple[int, ...], ...]) -> Topology:
    return Topology(name, len(links), lambda s, d: float(links[d][s]))


def _fixed(name: str, links: tuple[tuple[int, ...], ...]) -> Callable[[], Topology]:
    def make() -> Topology:
        return _table(name, links)

    return make


def _dgx_a100() -> Topology:
    return Topology("dgx_a100", 8, lambda s, d: 12.0 if s != d else 0.0)


def _as_topology(v: object, arg: int) -> Topology:
    if not isinstance(v, Topology):
        raise ApiError(f"expected a topology, got {type_name(v)}", arg)
    return v


def _distributed(kind: str, limits: ApiLimits) -> Callable[..., Topology]:
    def make(local_topology: object, num_copies: object, remote_bw: object) -> Topology:
        local = _as_topology(local_topology, 0)
        copies = as_int(num_copies, "num_copies", 1, minimum=1)
        if isinstance(remote_bw, bool) or not isinstance(remote_bw, int | float):
            raise ApiError(f"remote_bw must be a number, got {type_name(remote_bw)}", 2)
        nl = local.num_nodes()
        if nl * copies > limits.max_ranks:
            raise ApiError(f"{nl} x {copies} nodes is more than the limit of {limits.max_ranks}", 1)
        bw = float(remote_bw)

        def link(s: int, d: int) -> float:
            if s // nl != d // nl:
                return bw
            return local.link(s % nl, d % nl)

        return Topology(f"{kind}({local.name},{copies})", nl * copies, link)

    return make


def _reverse(topology: object) -> Topology:
    t = _as_topology(topology, 0)
    return Topology(f"reverse({t.name})", t.num_nodes(), lambda s, d: t.link(d, s))


def _binarize(topology: object) -> Topology:
    t = _as_topology(topology, 0)
    return Topology(
        f"binarize({t.name})", t.num_nodes(), lambda s, d: 1.0 if t.link(s, d) > 0 else 0.0
    )


def topology_modules(limits: ApiLimits) -> dict[str, dict[str, object]]:
    """The names of each ``msccl.topologies`` submodule; ``msccl.topologies.generic`` holds
    ``fully_connected``, ``ring``, ``line``, ``star``, ``hub_and_spoke``."""
    generic = {
        "Topology": Builtin("Topology", _user_topology),
        **{
            k: Builtin(k, _generic(k, limits))
            for k in ("fully_connected", "ring", "line", "star", "hub_and_spoke")
        },
    }
    nvidia: dict[str, object] = {
        "dgx1": Builtin("dgx1", _fixed("dgx1", _DGX1)),
        "dgx_a100": Builtin("dgx_a100", _dgx_a100),
        "nvlink_only": Unavailable(
            "nvlink_only",
            "msccl.topologies.nvidia",
            "it runs nvidia-smi on the machine; write the links with Topology(...)",
        ),
    }
    amd: dict[str, object] = {
        "amd4": Builtin("amd4", _fixed("amd4", _AMD4)),
        "amd8": Builtin("amd8", _fixed("amd8", _AMD8)),
    }
    distributed: dict[str, object] = {
        "distributed_fully_connected": Builtin(
            "distributed_fully_connected", _distributed("distributed_fully_connected", limits)
        ),
        "distributed_hub_and_spoke": Builtin(
            "distributed_hub_and_spoke", _distributed("distributed_hub_and_spoke", limits)
        ),
    }
    transformers: dict[str, object] = {
        "reverse_topology": Builtin("reverse_topology", _reverse),
        "binarize_topology": Builtin("binarize_topology", _binarize),
    }
    gen: dict[str, object] = {k: v for k, v in generic.items() if k != "Topology"}
    return {
        "msccl.topologies": {
            **gen,
            "Topology": generic["Topology"],
            **transformers,
            **amd,
            **nvidia,
            **distributed,
        },
        "msccl.topologies.generic": gen,
        "msccl.topologies.topology": {"Topology": generic["Topology"]},
        "msccl.topologies.nvidia": nvidia,
        "msccl.topologies.amd": amd,
        "msccl.topologies.distributed": distributed,
        "msccl.topologies.transformers": transformers,
    }
