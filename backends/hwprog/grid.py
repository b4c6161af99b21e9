"""The router view of a mesh or torus: ports, links by port, directions and datelines.

Every NPU has one router. Port 0 is the NPU itself (injection and ejection); port ``1 + 2d``
leads to the neighbour one step up in dimension ``d`` (``+d``) and port ``2 + 2d`` one step
down (``-d``). On a ring of two NPUs both neighbours are the same node and the single link
each way counts as ``+``. A port whose link failed, or that leaves a mesh's edge, does not
exist.

The dateline of a ring dimension is its wrap-around link: ``+d`` from coordinate ``k-1`` to
``0`` and ``-d`` from ``0`` to ``k-1``.
"""

from __future__ import annotations

from dataclasses import dataclass

from backends.hwprog.errors import HwProgError
from topologies.topology import Topology

TARGETS = ("mesh", "torus")
"""The targets and the dimension kind each accepts: ``mesh`` every dimension a line,
``torus`` every dimension a ring (``torus:``, ``ring:``, ``stack:ring*ring``)."""

_KIND = {"mesh": "line", "torus": "ring"}


@dataclass(frozen=True)
class GridLink:
    """A topology link seen from its source router."""

    index: int
    src: int
    port: int
    dst: int
    dim: int
    sign: int
    dateline: bool


@dataclass(frozen=True)
class Grid:
    target: str
    shape: tuple[int, ...]
    kinds: tuple[str, ...]
    strides: tuple[int, ...]
    links: tuple[GridLink, ...]
    """Indexed like `Topology.links`."""
    by_pair: dict[tuple[int, int], GridLink]
    by_port: dict[tuple[int, int], GridLink]

    @property
    def num_ports(self) -> int:
        return 1 + 2 * len(self.shape)

    def dor_path(self, src: int, dst: int) -> tuple[int, ...]:
        """The dimension-order path of the intact grid: lowest dimension first, a ring the
        shorter way (ties towards ``+``)."""
        path = [src]
        cur = src
        for d, (k, kind) in enumerate(zip(self.shape, self.kinds, strict=True)):
            stride = self.strides[d]
            c, t = (cur // stride) % k, (dst // stride) % k
            if c == t:
                continue
            if kind == "line":
                step, count = (1 if t > c else -1), abs(t - c)
            else:
                fwd = (t - c) % k
                step, count = (1, fwd) if fwd <= k - fwd else (-1, k - fwd)
            for _ in range(count):
                c = (c + step) % k
                cur = cur + (c - (cur // stride) % k) * stride
                path.append(cur)
        return tuple(path)


def port_name(port: int) -> str:
    """``local``, ``+0``, ``-0``, ``+1``..."""
    if port == 0:
        return "local"
    return f"{'+' if port % 2 == 1 else '-'}{(port - 1) // 2}"


def grid_of(topology: Topology, target: str) -> Grid:
    """The grid of ``topology`` for ``target``; refuses, in one line naming the topology,
    anything but a mesh (``target='mesh'``) or a torus (``'torus'``)."""
    if target not in _KIND:
        raise HwProgError(f"unknown hardware target {target!r} (one of {', '.join(TARGETS)})")
    want = _KIND[target]
    layout = topology.layout
    what = (
        "meshes (mesh:AxB...)"
        if target == "mesh"
        else "tori (torus:AxB..., ring:N, stack of rings)"
    )
    refuse = HwProgError(
        f"--target {target} accepts only {what}; {topology.spec!r} is a {topology.name} topology"
    )
    if (
        layout is None
        or topology.name in ("hypercube", "fc", "switch", "fred", "uniring")
        or topology.num_switches
        or any(k != want for k in layout.kinds)
        or layout.num_npus != topology.num_npus
    ):
        raise refuse
    shape = tuple(layout.shape)
    strides = tuple(layout.strides)
    links: list[GridLink] = []
    by_pair: dict[tuple[int, int], GridLink] = {}
    by_port: dict[tuple[int, int], GridLink] = {}
    for lk in topology.links:
        diff = [
            d
            for d in range(len(shape))
            if (lk.src // strides[d]) % shape[d] != (lk.dst // strides[d]) % shape[d]
        ]
        if len(diff) != 1:
            raise refuse
        d = diff[0]
        k = shape[d]
        cu, cv = (lk.src // strides[d]) % k, (lk.dst // strides[d]) % k
        if want == "line":
            if abs(cv - cu) != 1:
                raise refuse
            sign, dateline = (1 if cv > cu else -1), False
        else:
            step = (cv - cu) % k
            if step == 1:
                sign, dateline = 1, cu == k - 1
            elif step == k - 1:
                sign, dateline = -1, cu == 0
            else:
                raise refuse
        port = 1 + 2 * d if sign > 0 else 2 + 2 * d
        g = GridLink(lk.index, lk.src, port, lk.dst, d, sign, dateline)
        if (lk.src, port) in by_port:  # parallel links: not a plain grid
            raise refuse
        by_port[(lk.src, port)] = g
        by_pair[(lk.src, lk.dst)] = g
        links.append(g)
    return Grid(target, shape, tuple(layout.kinds), strides, tuple(links), by_pair, by_port)
