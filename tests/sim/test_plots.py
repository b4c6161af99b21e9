"""Figures. They need matplotlib (the ``plot`` extra); only that absence skips them."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from backends.sim import SimError, plot_gantt, plot_links, simulate
from tests.sim.helpers import direct_allgather, ring_allreduce, topo

CB = 1000


def test_missing_matplotlib_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_import = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    r = simulate(ring_allreduce(4), topo("ring:4"), CB, keep_timeline=True)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(SimError, match=r"pip install 'collc\[plot\]'"):
        plot_links(r, topo("ring:4"), tmp_path / "l.png")
    with pytest.raises(SimError, match=r"pip install 'collc\[plot\]'"):
        plot_gantt(r, tmp_path / "g.png")


@pytest.mark.parametrize("spec", ["mesh:3x3", "torus:4x4", "torus:2x2x2", "switch:4", "ring:4"])
def test_link_plots(spec: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    t = topo(spec)
    r = simulate(direct_allgather(t.num_npus), t, CB, keep_timeline=True)
    for name in ("links.png", "links.svg"):
        plot_links(r, t, tmp_path / name)
        assert (tmp_path / name).stat().st_size > 1000
    plot_gantt(r, tmp_path / "gantt.png")
    assert (tmp_path / "gantt.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gantt.png", "links.png", "links.svg"]


def test_plot_errors(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    t = topo("ring:4")
    analytical = simulate(ring_allreduce(4), t, CB, model="analytical", keep_timeline=True)
    with pytest.raises(SimError, match="no link loads"):
        plot_links(analytical, t, tmp_path / "l.png")
    with pytest.raises(SimError, match="no link occupancy"):
        plot_gantt(analytical, tmp_path / "g.png")
    plain = simulate(ring_allreduce(4), t, CB)
    with pytest.raises(SimError, match="keep_timeline"):
        plot_gantt(plain, tmp_path / "g.png")
    with pytest.raises(SimError, match="not the one"):
        plot_links(plain, topo("ring:8"), tmp_path / "l.png")
    assert not list(tmp_path.iterdir())
