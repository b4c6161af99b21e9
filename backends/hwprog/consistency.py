"""The header of a hardware program against its links and routes (`read_hwprog` calls these).

`check_grid`: the grid the header describes (``target``, ``shape``, ``dims``) has exactly
the links listed, apart from the ``failed`` pairs: every link joins grid neighbours through
the port of its direction, with its ``dim``, ``dir`` and ``dateline``; every failed pair is a
pair of neighbours, listed once, with no link; a mesh's dimensions are lines and a torus's
rings; ``vc_rule`` and ``vcs_per_class`` are the ones `backends.hwprog.vcs.per_class` gives.

`check_routes`: every ``dor`` send takes the dimension-order path of the intact grid with
the dateline VCs a dimension-order router gives it (a router routes such a flow by its own
rule, so a send that says otherwise would be replayed along a route the hardware never
takes); the ``deadlock`` record is the channel-dependency graph of the routes (channels,
dependencies, a cycle exactly when it is not acyclic, and that cycle one of the graph's);
the ``counts`` of commands, messages and source-routed flows are what the NPU files hold.
"""

from __future__ import annotations

import itertools
from typing import Any

from backends.hwprog.errors import HwProgError
from backends.hwprog.grid import Grid, GridLink
from backends.hwprog.vcs import assign, find_cycle, per_class

_KIND = {"mesh": "line", "torus": "ring"}


def _neighbours(shape: list[int], dims: list[str]) -> dict[tuple[int, int], tuple[int, int, bool]]:
    """``(src, port) -> (dst, dim, dateline)`` of every link of the intact grid."""
    strides = [1]
    for k in shape[:-1]:
        strides.append(strides[-1] * k)
    total = strides[-1] * shape[-1]
    out: dict[tuple[int, int], tuple[int, int, bool]] = {}
    for n in range(total):
        for d, (k, kind) in enumerate(zip(shape, dims, strict=True)):
            s = strides[d]
            c = (n // s) % k
            if kind == "line":
                if c + 1 < k:
                    out[(n, 1 + 2 * d)] = (n + s, d, False)
                if c > 0:
                    out[(n, 2 + 2 * d)] = (n - s, d, False)
            elif k >= 2:
                out[(n, 1 + 2 * d)] = (n + (((c + 1) % k) - c) * s, d, c == k - 1)
                if k > 2:  # on a ring of two the single link each way is "+"
                    out[(n, 2 + 2 * d)] = (n + (((c - 1) % k) - c) * s, d, c == 0)
    return out


def check_grid(header: dict[str, Any], where: str) -> Grid:
    """Check the header's grid fields against its links (see the module's docstring) and
    return the grid they describe (links indexed as the header lists them)."""
    target, shape, dims = header["target"], header["shape"], header["dims"]
    bad = [d for d, kind in enumerate(dims) if kind != _KIND[target]]
    if bad:
        raise HwProgError(
            f"{where}: $.dims[{bad[0]}]: {dims[bad[0]]!r}, but every dimension of a {target} "
            f"is a {_KIND[target]}"
        )
    intact = _neighbours(shape, dims)
    pairs = {(s, v[0]): (s, p) for (s, p), v in intact.items()}
    failed: set[tuple[int, int]] = set()
    for i, (u, v) in enumerate(header["failed"]):
        if (u, v) not in pairs or (u, v) in failed:
            why = "listed twice" if (u, v) in failed else "not a link of the grid"
            raise HwProgError(f"{where}: $.failed[{i}]: {u}>{v} is {why}")
        failed.add((u, v))
    links: list[GridLink] = []
    for i, lk in enumerate(header["links"]):
        s, pt, d = lk["src"], lk["port"], lk["dst"]
        want = intact.get((s, pt))
        dim = (pt - 1) // 2
        sign = "+" if pt % 2 == 1 else "-"
        problem = ""
        if want is None or want[0] != d:
            problem = f"link {s}>{d} port {pt} is not a link of the grid"
        elif (s, d) in failed:
            problem = f"link {s}>{d} is listed as failed"
        elif (lk["dim"], lk["dir"], lk["dateline"]) != (dim, sign, want[2]):
            problem = (
                f"link {s}>{d} port {pt} says dim {lk['dim']} dir {lk['dir']} dateline "
                f"{str(lk['dateline']).lower()}; the grid has dim {dim} dir {sign} dateline "
                f"{str(want[2]).lower()}"
            )
        if problem or want is None:
            raise HwProgError(f"{where}: $.links[{i}]: {problem}")
        links.append(GridLink(i, s, pt, d, dim, 1 if sign == "+" else -1, want[2]))
    if len(links) + len(failed) != len(intact):
        have = {(lk.src, lk.dst) for lk in links}
        u, v = min(p for p in pairs if p not in have and p not in failed)
        raise HwProgError(f"{where}: $.links: no link {u}>{v}, and it is not listed as failed")
    strides = [1]
    for k in shape[:-1]:
        strides.append(strides[-1] * k)
    grid = Grid(
        target,
        tuple(shape),
        tuple(dims),
        tuple(strides),
        tuple(links),
        {(g.src, g.dst): g for g in links},
        {(g.src, g.port): g for g in links},
    )
    pc = per_class(grid, header["num_vcs"])
    rule = "dateline" if pc == 2 else "single"
    if (header["vc_rule"], header["vcs_per_class"]) != (rule, pc):
        raise HwProgError(
            f"{where}: $.vc_rule: {header['vc_rule']} with {header['vcs_per_class']} VC(s) per "
            f"class; a {target} with {header['num_vcs']} VC(s) has {rule} with {pc}"
        )
    return grid


def check_routes(
    header: dict[str, Any],
    grid: Grid,
    sends: dict[int, tuple[int, int, dict[str, Any]]],
    commands: int,
    where: str,
    npu_file: list[str],
) -> None:
    """Check ``dor`` sends, the ``deadlock`` record and the ``counts`` (see the module's
    docstring). ``sends`` maps a flow to ``(npu, command id, send)``; ``commands`` is how
    many commands the NPU files hold."""
    V = header["num_vcs"]
    edges: set[tuple[int, int]] = set()
    source = 0
    # Sends share a few routes: each distinct one is checked once.
    checked: set[tuple[int, int, str, tuple[int, ...], tuple[int, ...]]] = set()
    for f in sorted(sends):
        n, cid, s = sends[f]
        if s["routing"] == "source":
            source += 1
        key = (n, s["to"], s["routing"], tuple(s["ports"]), tuple(s["vcs"]))
        if key in checked:
            continue
        checked.add(key)
        hops: list[GridLink] = []
        cur = n
        for pt in s["ports"]:
            h = grid.by_port[(cur, pt)]
            hops.append(h)
            cur = h.dst
        if s["routing"] != "source":
            path = grid.dor_path(n, s["to"])
            want_ports = (
                [grid.by_pair[p].port for p in itertools.pairwise(path)]
                if all(p in grid.by_pair for p in itertools.pairwise(path))
                else None
            )
            want_vcs = assign(grid, hops, V) if want_ports == s["ports"] else None
            if want_ports != s["ports"] or want_vcs != s["vcs"]:
                what = "ports" if want_ports != s["ports"] else "VCs"
                raise HwProgError(
                    f"{npu_file[n]}: npu {n} command {cid}: routing dor, but its {what} "
                    f"{s['ports'] if what == 'ports' else s['vcs']} are not the "
                    f"dimension-order {'route' if what == 'ports' else 'VCs'} "
                    f"{want_ports if what == 'ports' else want_vcs} (a router takes those)"
                )
        chans = [h.index * V + v for h, v in zip(hops, s["vcs"], strict=True)]
        edges.update(itertools.pairwise(chans))
    counts = header["counts"]
    have = (counts["commands"], counts["messages"], counts["source_routed"])
    want = (commands, len(sends), source)
    if have != want:
        raise HwProgError(
            f"{where}: $.counts: {have[0]} commands, {have[1]} messages, {have[2]} "
            f"source-routed; the NPU files hold {want[0]}, {want[1]}, {want[2]}"
        )
    dl = header["deadlock"]
    channels = len(grid.links) * V
    if (dl["channels"], dl["dependencies"]) != (channels, len(edges)):
        raise HwProgError(
            f"{where}: $.deadlock: {dl['channels']} channels and {dl['dependencies']} "
            f"dependencies; the links and routes make {channels} and {len(edges)}"
        )
    cycle = find_cycle(edges)
    acyclic = cycle is None
    if dl["acyclic"] != acyclic or dl["forced"] == acyclic:
        state = "acyclic" if acyclic else "has a cycle"
        raise HwProgError(
            f"{where}: $.deadlock: acyclic {str(dl['acyclic']).lower()}, forced "
            f"{str(dl['forced']).lower()}, but the channel-dependency graph {state}"
        )
    named: list[int] = []
    for c in dl["cycle"]:
        at = grid.by_port.get((c["src"], c["port"]))
        if at is None or at.dst != c["dst"] or c["vc"] >= V:
            named = []
            break
        named.append(at.index * V + c["vc"])
    closed = bool(named) and all(
        (a, b) in edges for a, b in zip(named, named[1:] + named[:1], strict=True)
    )
    if (acyclic and dl["cycle"]) or (not acyclic and not closed):
        raise HwProgError(
            f"{where}: $.deadlock.cycle: not a cycle of the channel-dependency graph"
            if not acyclic
            else f"{where}: $.deadlock.cycle: the channel-dependency graph is acyclic"
        )
