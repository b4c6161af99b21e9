"""collc's packet replay against BookSim2 (optional: runs only when ``COLLC_BOOKSIM`` names a
BookSim2 binary built outside the repository).

Both tools get the same ring: 1-cycle channels, 4-flit packets of 16-byte flits, virtual
cut-through, dimension order with dateline VCs, BookSim's 4-stage router against collc's
R = 4 (docs/hardware.md, "Calibration against BookSim2"). BookSim's latencies include its
injection and ejection channels, 2 cycles that collc's model does not have.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from backends.replay import replay
from tests.replay.helpers import one_message, write
from tests.replay.shift import shift_program
from tests.replay.test_booksim_cases import LINK, hw

ENV = "COLLC_BOOKSIM"
BINARY = os.environ.get(ENV, "")
pytestmark = pytest.mark.skipif(
    not (BINARY and os.path.isfile(BINARY) and os.access(BINARY, os.X_OK)),
    reason=f"set {ENV} to a BookSim2 binary",
)
CHANNELS = 2


def booksim(tmp: Path, k: int, traffic: str, extra: str) -> str:
    cfg = tmp / f"{k}-{traffic}.cfg"
    cfg.write_text(
        f"topology = torus;\nk = {k};\nn = 1;\ntraffic = {traffic};\n"
        "routing_function = dim_order;\nuse_noc_latency = 0;\nvct = 1;\npacket_size = 4;\n" + extra
    )
    done = subprocess.run([BINARY, str(cfg)], capture_output=True, text=True, timeout=300)
    return done.stdout


def last(text: str, label: str) -> float:
    found = re.findall(rf"{label} = ([0-9.]+)", text)
    assert found, text[-2000:]
    return float(found[-1])


@pytest.mark.parametrize(
    ("hops", "k", "traffic"), [(1, 8, "neighbor"), (2, 5, "tornado"), (3, 7, "tornado")]
)
def test_zero_load_latency(tmp_path: Path, hops: int, k: int, traffic: str) -> None:
    text = booksim(
        tmp_path,
        k,
        traffic,
        "num_vcs = 2;\nvc_buf_size = 64;\nsim_type = latency;\ninjection_rate = 0.0005;\n"
        "sample_period = 20000;\n",
    )
    program, _ = one_message(hops)
    res = replay(write(program, f"torus:{k},{LINK}", tmp_path / "hw", 64, hw(), target="torus"))
    assert last(text, "Packet latency average") == pytest.approx(res.cycles + CHANNELS, abs=0.1)


def test_neighbor_batch(tmp_path: Path) -> None:
    """With two VCs per dateline class BookSim hides its per-packet VC allocation and streams
    at the link rate, as collc's router does."""
    text = booksim(
        tmp_path,
        8,
        "neighbor",
        "num_vcs = 4;\nvc_buf_size = 64;\nsim_type = batch;\nbatch_size = 16;\n"
        "batch_count = 1;\ninjection_rate = 1.0;\n",
    )
    out = write(
        shift_program(8, 1, 16), f"torus:8,{LINK}", tmp_path / "hw", 64, hw(), target="torus"
    )
    assert last(text, "Overall min batch duration") == pytest.approx(
        replay(out).cycles + CHANNELS, abs=2
    )
