"""Inputs that used to end in a traceback or a blow-up: each is one line and exit status 2.

An out-of-range buffer in a field the operation does not use; a topology file nested 1,000
deep (YAML and JSON); a YAML file whose aliases expand exponentially (in an ignored field it
is never walked, elsewhere it is refused within a budget); a workload node id of 2^63.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from chakra_ir.et import et_def_pb2 as pb
from collc.cli import cli
from tests.et.helpers import attr, et_stream, pb_messages
from topologies import parse_topology
from topologies.errors import SpecError


def _one_line_exit_2(args: list[str], text: str) -> None:
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("collc: error: ") and text in r.output, r.output
    assert "Traceback" not in r.output


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ring") / "out"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out


@pytest.mark.parametrize("field", ["collc_dst_buf", "collc_src_buf"])
def test_a_buffer_out_of_range_in_an_unused_field_is_refused(
    ring: Path, tmp_path: Path, field: str
) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(ring, bad)
    path = bad / "allreduce.1.et"
    meta, nodes = pb_messages(path.read_bytes())
    # A send has no destination, a receive no source.
    kind = pb.COMM_SEND_NODE if field == "collc_dst_buf" else pb.COMM_RECV_NODE
    node = next(n for n in nodes if n.type == kind)
    node.attr.append(attr(field, "int32_val", 99))
    path.write_bytes(et_stream(meta, [n.SerializeToString() for n in nodes]))
    want = f"node {node.id}: {field} 99 names no buffer"
    for args in (
        ["verify", str(bad)],
        ["simulate", str(bad)],
        ["export", str(bad), "--target", "astra-sim", "-o", str(tmp_path / "a")],
        ["export", str(bad), "--target", "msccl-xml", "-o", str(tmp_path / "x")],
        ["inspect", str(bad)],
    ):
        _one_line_exit_2(args, want)


def test_the_verifier_never_reads_a_field_an_operation_does_not_use() -> None:
    """A Program from anywhere (not only an ET file) with garbage in an unused buffer field
    still verifies: the field is never read."""
    import numpy as np

    from chakra_ir.program import Program
    from chakra_ir.verify import verify
    from tests.hwprog.helpers import made

    p, _, _ = made("ring:4", "allreduce", "ring", 4096)
    dst_buf = p.dst_buf.copy()
    dst_buf[np.flatnonzero(p.kind == 0)] = 99  # every send
    cols = {c: getattr(p, c) for c in ("kind", "peer", "src_buf", "src_index", "dst_index")}
    cols.update(count=p.count, tag=p.tag, dst_buf=dst_buf)
    q = Program.from_columns(
        p.collective, p.rank_offsets, cols, p.dep_offsets, p.deps, p.buffer_sizes
    )
    verify(q)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_topology_file_nested_1000_deep_is_refused(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"deep{suffix}"
    if suffix == ".json":
        path.write_text('{"npus": 4, "links": ' + "[" * 1000 + "]" * 1000 + "}")
    else:
        path.write_text("npus: 4\nlinks: " + "[" * 1000 + "]" * 1000 + "\n")
    _one_line_exit_2(["bounds", "-t", str(path), "-c", "allreduce"], "nested")


def _bomb(key: str) -> str:
    """A file of about 700 bytes whose aliases under ``key`` expand to 10^10 nodes."""
    lines = ["npus: 4", "links:"]
    lines += [f"  - {{src: {i}, dst: {(i + 1) % 4}, bidirectional: true}}" for i in range(4)]
    lines += [f"{key}:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_an_ignored_field_is_never_walked(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb("description"))
    assert path.stat().st_size < 1000
    t0 = time.perf_counter()
    top = parse_topology(str(path))
    assert top.num_npus == 4 and time.perf_counter() - t0 < 30  # was 47 s and 4 GiB


def test_an_alias_bomb_elsewhere_is_refused_within_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb("extra"))
    with pytest.raises(SpecError) as e:
        parse_topology(str(path))
    assert "YAML aliases repeat more than 100,000 nodes" in str(e.value)
    _one_line_exit_2(["bounds", "-t", str(path), "-c", "allreduce"], "aliases repeat")


def test_a_few_anchors_reused_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    link = "{src: %d, dst: %d, bandwidth: *bw, latency: *lat, bidirectional: true}"
    lines = ["npus: 64", "defaults: {bandwidth: &bw 100GB/s, latency: &lat 1us}", "links:"]
    lines += ["  - " + link % (i, (i + 1) % 64) for i in range(64)]
    path.write_text("\n".join(lines) + "\n")
    assert parse_topology(str(path)).num_npus == 64


def test_a_workload_node_id_of_2_to_the_63_is_refused(tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    args = [
        "workload",
        "generate",
        "gpt3-13b",
        "--npus",
        "8",
        "--dp",
        "2",
        "--tp",
        "2",
        "--pp",
        "2",
        "-o",
    ]
    r = CliRunner().invoke(cli, [*args, str(wl)])
    assert r.exit_code == 0, r.output
    path = wl / "workload.0.et"
    meta, nodes = pb_messages(path.read_bytes())
    big = 2**63 + 5
    first = nodes[0].id
    for n in nodes:
        n.data_deps[:] = [big if d == first else d for d in n.data_deps]
        n.ctrl_deps[:] = [big if d == first else d for d in n.ctrl_deps]
    nodes[0].id = big
    path.write_bytes(et_stream(meta, [n.SerializeToString() for n in nodes]))
    for model in ("analytical", "congestion"):
        _one_line_exit_2(
            ["workload", "simulate", str(wl), "-t", "stack:fc2*ring4", "--model", model],
            f"the value {big} is out of range",
        )


def test_a_control_character_in_a_yaml_topology_is_refused_at_its_position(
    tmp_path: Path,
) -> None:
    """Found by the mutation campaign: YAML's reader refuses it before parsing starts."""
    path = tmp_path / "ctl.yaml"
    path.write_bytes(b"npus: 4\nlinks: [\x02]\n")
    _one_line_exit_2(
        ["bounds", "-t", str(path), "-c", "allreduce"],
        f"{path}:2:9: invalid YAML: character #x0002 is not allowed",
    )
