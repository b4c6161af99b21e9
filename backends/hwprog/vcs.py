"""Virtual-channel assignment and the channel-dependency check.

**Assignment** (deadlock-free by construction for dimension-order routes). A route is cut
into *phases*: a phase is a stretch of hops that dimension-order routing could take, i.e.
dimensions ascending, one direction per dimension, and at most one crossing of each ring's
dateline. A new phase starts at a hop that goes to a lower dimension than the previous hop,
reverses direction within a dimension, or crosses the same dateline a second time. Phase
``p`` uses the VC class ``min(p, classes - 1)``; a class is one VC on a mesh and two on a
torus (``dateline`` rule: inside a dimension a packet uses the class's first VC until it
crosses the dateline, then the second, and returns to the first when it enters the next
dimension). Dimension-order routes are a single phase, so a mesh needs 1 VC and a torus 2.

With ``V`` VCs there are ``V // per_class`` classes (at least one). A torus given 1 VC has no
dateline: every hop uses VC 0.

**Lanes.** When the routes need fewer classes than ``V`` gives (``need``: the most phases of
any route), the spare VCs form ``V // (per_class * need)`` *lanes*, each a whole copy of the
``need`` classes, and route ``i`` (in the exporter's numbering) takes lane ``i mod lanes``.
Packets of different routes then queue in different buffers, so a packet waiting for a busy
port holds up only its own lane (less head-of-line blocking). Each lane is a copy of an
acyclic channel set and no dependency crosses lanes, so the union stays acyclic.

**Check.** The channel-dependency graph has a node per (link, VC) and an edge for every two
consecutive hops of a flow. It must be acyclic; `find_cycle` returns a cycle when there is
one. Within a class every edge goes to a higher dimension, or along one direction of one
dimension before (VC 0) or after (VC 1) its dateline, so the classes' graphs are acyclic, and
edges between classes only go up. Clamping phases to the last class is what can close a
cycle; the check then names it.
"""

from __future__ import annotations

from collections.abc import Iterable

from backends.hwprog.grid import Grid, GridLink

MAX_VCS = 16
"""The most virtual channels a hardware program may declare."""


def per_class(grid: Grid, num_vcs: int) -> int:
    """VCs per class: 2 on a torus with at least 2 VCs (the dateline pair), else 1."""
    return 2 if grid.target == "torus" and num_vcs >= 2 else 1


def phases(hops: list[GridLink]) -> list[int]:
    """The phase of every hop of a route (see the module's docstring)."""
    out: list[int] = []
    phase = 0
    prev: GridLink | None = None
    crossed = False
    for h in hops:
        if prev is not None:
            if h.dim < prev.dim or (
                h.dim == prev.dim and (h.sign != prev.sign or (h.dateline and crossed))
            ):
                phase += 1
                crossed = False
            elif h.dim != prev.dim:
                crossed = False
        if h.dateline:
            crossed = True
        out.append(phase)
        prev = h
    return out


def lanes(grid: Grid, num_vcs: int, need: int) -> int:
    """How many lanes ``num_vcs`` VCs give when the routes need ``need`` classes."""
    classes = max(1, num_vcs // per_class(grid, num_vcs))
    return max(1, classes // need) if need < classes else 1


def assign(
    grid: Grid, hops: list[GridLink], num_vcs: int, need: int = 0, lane: int = 0
) -> list[int]:
    """The VC of every hop of a route under ``num_vcs`` VCs: lane ``lane`` (modulo the lanes
    there are, see `lanes`) of the classes the program's routes ``need`` (0: every class the
    VCs give, one lane)."""
    pc = per_class(grid, num_vcs)
    classes = max(1, num_vcs // pc)
    n_lanes = lanes(grid, num_vcs, need) if need else 1
    if n_lanes > 1:
        classes = need
    base = (lane % n_lanes) * classes * pc
    out: list[int] = []
    crossed = False
    prev: GridLink | None = None
    prev_phase = -1
    for h, p in zip(hops, phases(hops), strict=True):
        if prev is None or h.dim != prev.dim or p != prev_phase:
            crossed = False
        if h.dateline:
            crossed = True
        within = 1 if (pc == 2 and crossed) else 0
        out.append(base + min(p, classes - 1) * pc + within)
        prev, prev_phase = h, p
    return out


def classes_needed(hops: list[GridLink]) -> int:
    """How many VC classes the route needs to keep its phases apart."""
    return (phases(hops)[-1] + 1) if hops else 1


def find_cycle(edges: Iterable[tuple[int, int]]) -> list[int] | None:
    """A cycle of the directed graph given by its edges (as the list of its nodes, first node
    not repeated), or None when the graph is acyclic. Iterative depth-first search."""
    adj: dict[int, list[int]] = {}
    for a, b in edges:
        adj.setdefault(a, []).append(b)
    state: dict[int, int] = {}  # 1 on the stack, 2 done
    for root in sorted(adj):
        if state.get(root):
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path: list[int] = [root]
        state[root] = 1
        while stack:
            node, i = stack[-1]
            nexts = adj.get(node, [])
            if i < len(nexts):
                stack[-1] = (node, i + 1)
                nxt = nexts[i]
                s = state.get(nxt, 0)
                if s == 1:
                    return path[path.index(nxt) :]
                if s == 0:
                    state[nxt] = 1
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                state[node] = 2
                stack.pop()
                path.pop()
    return None
