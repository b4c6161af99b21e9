"""`collc view` and `collc bench --html` without a browser: the page's data against the
simulator and ``collc inspect --json``, the layouts, the binning, and bad input."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backends.view.binning import bin_busy, bin_counts
from backends.view.layout import STUB, layout
from collc.viewing import folder_panel
from tests.view.helpers import expected_messages, run, synthesize
from topologies import parse_topology

FLOW_DETAILS = (9, 10, 11)


def page_messages(panel: dict[str, Any]) -> dict[int, Counter[tuple[str, int, int]]]:
    """Per link, the messages the panel lists for it (exact panels)."""
    rec, t = panel["records"], panel["tasks"]
    out: dict[int, Counter[tuple[str, int, int]]] = {}
    for link, task in zip(rec["link"], rec["task"], strict=True):
        if t["detail"][task] in FLOW_DETAILS:
            key = ("flow", t["tag"][task], -1)
        else:
            key = ("op", t["rank"][task], t["op"][task])
        out.setdefault(link, Counter())[key] += 1
    return out


def embedded(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="collc-data">(.*?)</script>', text, re.S)
    assert m is not None
    doc: dict[str, Any] = json.loads(m.group(1).replace("<\\/", "</"))
    return doc


@pytest.mark.parametrize(
    ("topology", "collective", "extra"),
    [
        ("ring:8", "allreduce", ("--chunks-per-npu", "2")),
        ("mesh:4x4", "allgather", ()),
        ("torus:4x4", "allreduce", ("-a", "ring")),
        ("fred:8", "allreduce", ("-a", "fred-innetwork")),
        ("switch:4", "reduce_scatter", ()),
    ],
)
def test_each_link_lists_exactly_the_messages_that_cross_it(
    tmp_path: Path, topology: str, collective: str, extra: tuple[str, ...]
) -> None:
    folder = synthesize(tmp_path / "out", topology, collective, *extra)
    panel, topo = folder_panel(folder, max_records=10**6)
    assert panel["exact"]
    want_topo, want = expected_messages(folder)
    assert topo == want_topo
    assert page_messages(panel) == want
    assert panel["links"]["count"] == [
        sum(want.get(i, Counter()).values()) for i in range(len(topo.links))
    ]
    assert len(panel["nodes"]["x"]) == topo.num_nodes
    assert len(panel["links"]["src"]) == len(topo.links)


def test_an_aggregated_panel_counts_every_message_per_link_and_bin(tmp_path: Path) -> None:
    folder = synthesize(tmp_path / "out", "torus:4x4", "allreduce", "--chunks-per-npu", "2")
    panel, topo = folder_panel(folder, max_records=10)
    assert not panel["exact"] and "records" not in panel and "tasks" not in panel
    _, want = expected_messages(folder)
    B = panel["bins"]
    counts = np.asarray(panel["link_bin_counts"]).reshape(len(topo.links), B)
    assert counts.sum(axis=1).tolist() == [
        sum(want.get(i, Counter()).values()) for i in range(len(topo.links))
    ]
    heat = np.asarray(panel["heat"]).reshape(len(topo.links), B)
    busy = np.asarray(panel["links"]["busy"])
    # per mille of each bin, rounded: the sum over bins is the busy time to within rounding
    assert np.allclose(
        heat.sum(axis=1) * panel["bin_ns"] / 1000, busy, atol=B * panel["bin_ns"] / 1000
    )


def test_the_critical_path_ends_when_the_program_ends(tmp_path: Path) -> None:
    folder = synthesize(tmp_path / "out", "mesh:3x3", "allreduce")
    panel, _ = folder_panel(folder, max_records=10**6)
    steps = panel["critical"]["steps"]
    assert steps and steps[-1][5] == pytest.approx(panel["finish_ns"], abs=1e-3)
    ends = [s[5] for s in steps]
    assert ends == sorted(ends)  # each step finished no earlier than the one it waited for
    assert steps[0][4] == 0.0  # it starts at a task that waited for nothing
    assert panel["critical"]["links"] and set(panel["critical"]["links"]) <= set(
        range(len(panel["links"]["src"]))
    )


def test_binning_matches_a_direct_sum() -> None:
    rng = np.random.default_rng(3)
    n, E, B, span = 400, 5, 7, 100.0
    ent = rng.integers(0, E, n)
    start = rng.uniform(0, 90, n)
    dur = rng.uniform(0, 40, n) * (rng.random(n) < 0.9)
    end = np.minimum(start + dur, span)
    dur = end - start
    got = bin_busy(ent, start, dur, E, B, span)
    w = span / B
    want = np.zeros((E, B))
    for e, s, t in zip(ent, start, end, strict=True):
        for b in range(B):
            want[e, b] += max(0.0, min(t, (b + 1) * w) - max(s, b * w))
    assert np.allclose(got, want)
    assert bin_counts(ent, start, E, B, span).sum() == n


@pytest.mark.parametrize(
    "spec",
    [
        "ring:6",
        "uniring:5",
        "fc:4",
        "switch:5",
        "mesh:3x4",
        "torus:4x4x4",
        "hypercube:3",
        "stack:ring4*switch2",
        "fred:8",
        "graph:4,links=0-1;1-2;2-3;3-0;0-2",
        "mesh:5",
    ],
)
def test_every_node_and_link_is_placed(spec: str) -> None:
    topo = parse_topology(spec)
    lay = layout(topo)
    assert len(lay.xy) == topo.num_nodes and len(lay.links) == len(topo.links)
    assert all(np.isfinite(c) for xy in lay.xy for c in xy)
    pos = {xy for xy in lay.xy[: topo.num_npus]}
    assert len(pos) == topo.num_npus  # no two NPUs on one spot


def test_a_torus_draws_its_wraparound_and_layer_links_as_stubs() -> None:
    topo = parse_topology("torus:4x4x2")
    lay = layout(topo)
    stubs = [lk for lk, s in zip(topo.links, lay.links, strict=True) if s.kind == STUB]
    # 4 rows and 4 columns per layer, 2 directions, 2 layers; dimension 2 has size 2 (one pair)
    wraps = 2 * (4 + 4) * 2
    between_layers = 16 * 2
    assert len(stubs) == wraps + between_layers


def test_view_writes_one_page_and_compare_shows_both(tmp_path: Path) -> None:
    a = synthesize(tmp_path / "t", "mesh:3x3", "allreduce")
    b = synthesize(tmp_path / "r", "mesh:3x3", "allreduce", "-a", "ring")
    page = tmp_path / "cmp.html"
    res = run("view", str(a), "--compare", str(b), "-o", str(page), "--json")
    assert res.exit_code == 0, res.output
    doc = embedded(page)
    assert [p["algorithm"] for p in doc["panels"]] == ["tacos", "ring"]
    assert json.loads(res.output)["bytes"] == page.stat().st_size
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text and "<script src" not in text


def test_bench_html_charts_every_algorithm_that_ran(tmp_path: Path) -> None:
    page = tmp_path / "bench.html"
    res = run(
        "bench",
        "-t",
        "ring:4",
        "-c",
        "allreduce",
        "--sizes",
        "1MiB:4MiB:x4",
        "--html",
        str(page),
        "--json",
        "--algorithms",
        "tacos,ring,direct",
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    bench = embedded(page)["bench"]
    assert set(bench["series"]) == {r["algorithm"] for r in report["rows"] if r["time_ns"]}
    for r in report["rows"]:
        if r["time_ns"]:
            assert [r["size_bytes"], r["time_ns"], r["busbw_gb_per_s"]] in bench["series"][
                r["algorithm"]
            ]
    assert bench["bounds"] == {k: v["ns"] for k, v in report["lower_bounds"].items()}


def test_a_folder_that_is_not_collcs_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.txt").write_text("x")
    page = tmp_path / "p.html"
    res = run("view", str(tmp_path / "junk"), "-o", str(page))
    assert res.exit_code == 2
    assert res.output.startswith("collc: error: ") and "Traceback" not in res.output
    assert not page.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["junk"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_output_is_refused_before_any_work(tmp_path: Path) -> None:
    folder = synthesize(tmp_path / "out", "ring:4", "allreduce")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        res = run("view", str(folder), "-o", str(ro / "p.html"))
    finally:
        ro.chmod(0o700)
    assert res.exit_code == 2 and "permission denied" in res.output
    assert list(ro.iterdir()) == []


@pytest.mark.parametrize("where", ["missing/p.html", ".", "/proc/collc-view.html"])
def test_an_output_that_cannot_be_a_file_is_refused_in_one_line(tmp_path: Path, where: str) -> None:
    folder = synthesize(tmp_path / "out", "ring:4", "allreduce")
    before = sorted(p.name for p in tmp_path.iterdir())
    res = run("view", str(folder), "-o", str(tmp_path / where))
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("collc: error: cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_compare_refuses_another_topology(tmp_path: Path) -> None:
    a = synthesize(tmp_path / "a", "ring:4", "allreduce")
    b = synthesize(tmp_path / "b", "mesh:2x2", "allreduce")
    res = run("view", str(a), "--compare", str(b), "-o", str(tmp_path / "p.html"))
    assert res.exit_code == 2 and "topology" in res.output
    assert not (tmp_path / "p.html").exists()
