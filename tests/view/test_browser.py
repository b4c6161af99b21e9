"""`collc view` pages driven in headless Chromium (Debian's ``chromium``, launched through
Playwright; no browser is downloaded): a ring, a 4x4 mesh, a FRED in-network program and a
512-NPU torus, exact and aggregated, a comparison and a bench chart.

Each page must load without console errors, draw as many NPUs, switches and links as the
topology has, advance its clock when played, list for a clicked link exactly the messages
``collc inspect --json`` routes over it, and take a screenshot. The tests skip, saying why,
only where no browser can be had (`.ci/run` installs it)."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.view.helpers import (
    CHROMIUM_ARGS,
    chromium,
    expected_messages,
    inspect_json,
    run,
    synthesize,
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run does)")
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=exe,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        yield ctx
        ctx.close()


class Page:
    """One loaded page and the errors its console reported."""

    def __init__(self, ctx: Any, path: Path) -> None:
        self.page = ctx.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_function("window.collcPainted !== undefined", timeout=30_000)

    def count(self, selector: str) -> int:
        n: int = self.page.eval_on_selector_all(selector, "es => es.length")
        return n

    def click_link(self, panel: int, link: int) -> list[tuple[str, int, int]]:
        self.page.eval_on_selector(
            f'#panel-{panel} path.link[data-link="{link}"]',
            "e => e.dispatchEvent(new MouseEvent('click', {bubbles: true}))",
        )
        rows = self.page.eval_on_selector_all(
            f"#info-{panel} tr.msg",
            "rs => rs.map(r => [r.dataset.rank, r.dataset.op, r.dataset.flow])",
        )
        out = []
        for rank, op, flow in rows:
            out.append(("flow", int(flow), -1) if int(flow) >= 0 else ("op", int(rank), int(op)))
        return out


def make_page(tmp_path: Path, folder: Path, *extra: str) -> Path:
    page = tmp_path / (folder.name + ".html")
    res = run("view", str(folder), "-o", str(page), *extra)
    assert res.exit_code == 0, res.output
    return page


def check_schedule_page(ctx: Any, tmp_path: Path, folder: Path, *extra: str) -> Page:
    topo, want = expected_messages(folder)
    pg = Page(ctx, make_page(tmp_path, folder, *extra))
    assert pg.count("#panel-0 svg.topology circle.npu") == topo.num_npus
    assert pg.count("#panel-0 svg.topology rect.switch") == topo.num_switches
    assert pg.count("#panel-0 svg.topology path.link") == len(topo.links)
    # the busiest link, and the first link that carries anything
    busiest = max(want, key=lambda i: (sum(want[i].values()), -i))
    aggregated = pg.count("#panel-0 .aggregated") > 0
    for link in sorted({busiest, min(want)}):
        if aggregated:
            pg.page.eval_on_selector(
                f'#panel-0 path.link[data-link="{link}"]',
                "e => e.dispatchEvent(new MouseEvent('click', {bubbles: true}))",
            )
            counts = pg.page.eval_on_selector_all(
                "#info-0 tr.bin", "rs => rs.map(r => Number(r.dataset.count))"
            )
            assert sum(counts) == sum(want[link].values())
        else:
            assert Counter(pg.click_link(0, link)) == want[link]
    # a link that carries nothing lists nothing
    idle = [i for i in range(len(topo.links)) if i not in want]
    if idle and not aggregated:
        assert pg.click_link(0, idle[0]) == []
    before = float(pg.page.get_attribute("#clock", "data-t") or "nan")
    pg.page.click("#play")
    pg.page.wait_for_timeout(600)
    after = float(pg.page.get_attribute("#clock", "data-t") or "nan")
    assert after > before
    pg.page.check("#critical")
    assert pg.count("#panel-0 path.link.crit") > 0
    shot = tmp_path / (folder.name + ".png")
    pg.page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pg.errors == []
    return pg


def test_ring(browser: Any, tmp_path: Path) -> None:
    folder = synthesize(tmp_path / "ring8", "ring:8", "allreduce", "--chunks-per-npu", "2")
    pg = check_schedule_page(browser, tmp_path, folder)
    # hovering an NPU lists its operations (the first 40)
    ops = len(inspect_json(folder)["ranks"][3]["ops"])
    pg.page.hover('#panel-0 circle.npu[data-node="3"]')
    assert pg.page.is_visible("#panel-0 .tip")
    assert pg.count("#panel-0 .tip tr.op") == min(40, ops)


def test_mesh_4x4(browser: Any, tmp_path: Path) -> None:
    folder = synthesize(tmp_path / "mesh44", "mesh:4x4", "allreduce", "--chunks-per-npu", "3")
    check_schedule_page(browser, tmp_path, folder)


def test_fred_in_network(browser: Any, tmp_path: Path) -> None:
    folder = synthesize(tmp_path / "fred16", "fred:16", "allreduce", "-a", "fred-innetwork")
    check_schedule_page(browser, tmp_path, folder)


@pytest.fixture(scope="module")
def torus512(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthesize(
        tmp_path_factory.mktemp("t512") / "torus512", "torus:8x8x8", "broadcast", "-a", "dbt"
    )


def test_torus_512(browser: Any, tmp_path: Path, torus512: Path) -> None:
    check_schedule_page(browser, tmp_path, torus512)


def test_torus_512_aggregated(browser: Any, tmp_path: Path, torus512: Path) -> None:
    pg = check_schedule_page(browser, tmp_path, torus512, "--max-messages", "1000")
    text = pg.page.inner_text("#panel-0 .aggregated")
    assert "Aggregated" in text and "1,000" in text


def test_compare_shares_one_clock(browser: Any, tmp_path: Path) -> None:
    a = synthesize(tmp_path / "tacos", "mesh:4x4", "allreduce")
    b = synthesize(tmp_path / "ring", "mesh:4x4", "allreduce", "-a", "ring")
    page = tmp_path / "cmp.html"
    assert run("view", str(a), "--compare", str(b), "-o", str(page)).exit_code == 0
    pg = Page(browser, page)
    assert pg.count("section.panel") == 2
    assert pg.count("p.differ") == 0  # same collective, size and rule
    assert pg.count("#panel-1 svg.topology path.link") == 48
    _, want = expected_messages(b)
    link = max(want, key=lambda i: sum(want[i].values()))
    assert Counter(pg.click_link(1, link)) == want[link]
    pg.page.eval_on_selector(
        "#slider", "e => { e.value = 1000; e.dispatchEvent(new Event('input')); }"
    )
    assert "of" in pg.page.inner_text("#clock")
    pg.page.screenshot(path=str(tmp_path / "cmp.png"), full_page=True)
    assert pg.errors == []


def test_bench_chart(browser: Any, tmp_path: Path) -> None:
    page = tmp_path / "bench.html"
    res = run(
        "bench",
        "-t",
        "ring:4",
        "-c",
        "allreduce",
        "--sizes",
        "1MiB:16MiB:x4",
        "--html",
        str(page),
        "--algorithms",
        "tacos,ring,direct",
        "-q",
    )
    assert res.exit_code == 0, res.output
    pg = Page(browser, page)
    assert pg.count("svg.chart") == 2
    for name in ("tacos", "ring", "direct"):
        assert pg.count(f'svg.chart path.series[data-series="{name}"]') == 2
        assert pg.count(f'svg.chart circle.point[data-series="{name}"]') == 2 * 3
    assert pg.count('svg.chart path.bound[data-series="lower bound"]') == 2
    pg.page.screenshot(path=str(tmp_path / "bench.png"), full_page=True)
    assert pg.errors == []
