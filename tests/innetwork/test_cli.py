"""In-network collectives through the CLI, and the one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import one_error_line, run


def synth(out: Path, *extra: str, spec: str = "fred:20") -> dict[str, object]:
    res = run(
        "synthesize",
        "-t",
        spec,
        "-c",
        "allreduce",
        "--algorithm",
        "fred-innetwork",
        "--size",
        "64MiB",
        "-o",
        str(out),
        "--json",
        *extra,
    )
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.output)
    return data


def test_synthesize_simulate_verify_inspect(tmp_path: Path) -> None:
    out = tmp_path / "f20"
    s = synth(out)
    assert s["flows"] == 1 and s["messages"] == 0 and s["lower_bound"] == "in-network"
    res = run("simulate", str(out), "--json")
    assert res.exit_code == 0, res.output
    sim = json.loads(res.output)
    assert sim["finish_ns"] <= 1.02 * float(s["lower_bound_ns"])  # type: ignore[arg-type]
    res = run("verify", str(out), "--json")
    assert res.exit_code == 0 and json.loads(res.output)["flows"] == 1
    res = run("inspect", str(out))
    assert "0 flow-in flow=0 src=input[0]" in res.output
    res = run("simulate", str(out), "--timeline", str(tmp_path / "t.json"))
    assert res.exit_code == 0, res.output
    events = json.loads((tmp_path / "t.json").read_text())
    assert "flow-in" in json.dumps(events)


def test_groups_spanning_l1_switches(tmp_path: Path) -> None:
    s = synth(tmp_path / "dp", "--groups", "stride:4")
    assert s["flows"] == 4
    res = run("simulate", str(tmp_path / "dp"), "--json")
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("export", "{out}", "--target", "astra-sim", "-o", "{tmp}/a"), "an ASTRA-sim bundle"),
        (("export", "{out}", "--target", "msccl-xml", "-o", "{tmp}/x"), "MSCCL-IR XML"),
        (("export", "{out}", "--target", "torus", "-o", "{tmp}/t"), "torus hardware program"),
        (("simulate", "{out}", "--model", "analytical"), "cannot run in-network flows"),
        (
            ("simulate", "{out}", "-t", "fred:20,innet=no", "--force"),
            "needs switches that reduce and multicast",
        ),
    ],
)
def test_consumers_that_cannot_express_flows(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    out = tmp_path / "f"
    synth(out)
    res = run(*(a.format(out=out, tmp=tmp_path) for a in args))
    assert res.exit_code == 2, res.output
    text = one_error_line(res)
    assert says in text and len(text.strip().splitlines()) == 1
    assert not (tmp_path / "a").exists() and not (tmp_path / "x").exists()


def test_topology_without_reducing_switches(tmp_path: Path) -> None:
    res = run(
        "synthesize",
        "-t",
        "fred:20,cfg=C",
        "-c",
        "allreduce",
        "--algorithm",
        "fred-innetwork",
        "-o",
        str(tmp_path / "o"),
    )
    assert res.exit_code == 2
    assert "no switches that reduce and multicast" in one_error_line(res)
    assert not (tmp_path / "o").exists()


def test_bench_in_network_against_endpoint() -> None:
    res = run(
        "bench",
        "-t",
        "fred:20",
        "-c",
        "allreduce",
        "--sizes",
        "64MiB:256MiB:x4",
        "--algorithms",
        "fred-innetwork,ring-bidir,direct,hierarchical",
        "--json",
    )
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)["rows"]
    for size in (64 << 20, 256 << 20):
        by = {r["algorithm"]: r for r in rows if r["size_bytes"] == size}
        inn = by.pop("fred-innetwork")
        assert inn["ratio"] < 1.02
        assert all(inn["time_ns"] * 1.8 < r["time_ns"] for r in by.values())
    res = run("bench", "-t", "mesh:5x4", "-c", "allreduce", "--sizes", "1MiB:1MiB:x2", "--json")
    rows = json.loads(res.output)["rows"]
    inn = next(r for r in rows if r["algorithm"] == "fred-innetwork")
    assert "no switches that reduce" in inn["error"] and inn["time_ns"] is None


def test_hand_written_flow_across_groups(tmp_path: Path) -> None:
    """ET files whose flow mixes two process groups: verify fails (exit 1), the commands that
    need a correct program refuse in one line (exit 2) and write nothing."""
    from chakra_ir import Buffer, ProgramBuilder, Slice
    from chakra_ir.collective import Collective, CollectiveKind
    from chakra_ir.outdir import Manifest, write_output

    c = Collective(CollectiveKind.ALLREDUCE, 4, 1, groups=((0, 1), (2, 3)))
    b = ProgramBuilder(c)
    for r in range(4):
        b.flow_in(r, 0, Slice(Buffer.INPUT, 0, 1))
        b.flow_out(r, 0, Slice(Buffer.OUTPUT, 0, 1))
    m = Manifest(
        collective=c,
        topology="fred:4",
        size_bytes=1024,
        chunk_bytes=1024,
        et_prefix="allreduce",
        algorithm="hand",
    )
    bad = tmp_path / "bad"
    write_output(bad, b.build(), m)
    res = run("verify", str(bad))
    assert res.exit_code == 1 and "spans ranks of groups 0, 1" in res.output
    for args in (
        ("simulate", str(bad)),
        ("export", str(bad), "--target", "astra-sim", "-o", str(tmp_path / "a")),
    ):
        res = run(*args)
        assert res.exit_code == 2
        assert "flow 0 spans ranks of groups 0, 1" in one_error_line(res)
    assert not (tmp_path / "a").exists()
