"""`collc view`: page size, build time and first paint in headless Chromium.

    python benchmarks/bench_view.py [--only 16,64] [--keep DIR]

For 16, 64 and 512 NPUs (tori 4x4, 4x4x4, 8x8x8; TACOS all-reduce, 3 chunks per NPU, 32 KiB
chunks) it synthesizes the program, builds the page (`collc view`: read, verify, simulate,
render) and opens it in Debian's chromium through Playwright. Printed per case: messages,
whether the page keeps every message or aggregates, the page size (the issue's target: under
25 MB), the seconds `collc view` took, and in the browser the first contentful paint and the
time until the page has drawn everything (the target: under 3 s), measured from navigation
start. The 512-NPU synthesis takes about a minute and a half and 2 GB.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from click.testing import CliRunner

from collc.cli import cli
from tests.view.helpers import CHROMIUM_ARGS, chromium

CASES = {16: "torus:4x4", 64: "torus:4x4x4", 512: "torus:8x8x8"}


def run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if res.exit_code != 0:
        raise SystemExit(res.output)
    return res.output


def paint(ctx: object, page_path: Path) -> tuple[float, float]:
    """(first contentful paint, everything drawn) in seconds from navigation start."""
    page = ctx.new_page()  # type: ignore[attr-defined]
    page.goto(page_path.resolve().as_uri())
    page.wait_for_function("window.collcPainted !== undefined", timeout=60_000)
    fcp = page.evaluate(
        "() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || -1"
    )
    drawn = page.evaluate("() => window.collcPainted")
    page.close()
    return fcp / 1000, drawn / 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="16,64,512", help="NPU counts to run")
    ap.add_argument("--keep", type=Path, default=None, help="keep folders and pages here")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    exe = chromium()
    if exe is None:
        raise SystemExit("no chromium: apt-get install chromium")
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_view."))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"{'NPUs':>5} {'topology':<12} {'messages':>10} {'page':<11} {'MB':>7} "
        f"{'view s':>7} {'FCP s':>6} {'drawn s':>8}"
    )
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=exe,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        for n in (int(x) for x in args.only.split(",")):
            spec = CASES[n]
            folder = work / f"t{n}"
            if not (folder / "manifest.json").exists():
                run(
                    "synthesize",
                    "-t",
                    spec,
                    "-c",
                    "allreduce",
                    "--chunks-per-npu",
                    "3",
                    "--size",
                    f"{n * 3 * 32}KiB",
                    "--max-work",
                    "1000000000",
                    "-o",
                    str(folder),
                    "-q",
                )
            html = work / f"t{n}.html"
            t0 = time.perf_counter()
            out = run("view", str(folder), "-o", str(html), "--json")
            secs = time.perf_counter() - t0
            doc = json.loads(out)
            exact = doc["panels"][0]["exact"]
            data = html.read_text(encoding="utf-8")
            messages = data.split('"messages":', 1)[1].split(",", 1)[0]
            fcp, drawn = paint(ctx, html)
            print(
                f"{n:>5} {spec:<12} {int(messages):>10,} {'exact' if exact else 'aggregated':<11} "
                f"{doc['bytes'] / 1e6:>7.2f} {secs:>7.1f} {fcp:>6.2f} {drawn:>8.2f}",
                flush=True,
            )
        ctx.close()


if __name__ == "__main__":
    main()
