"""Every refusal: one line with the reason, an AstraExportError (a CollcError), and nothing
written (not the bundle, not a temporary folder, not a parent folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backends.astrasim import AstraExportError, AstraOptions, export
from chakra_ir import Buffer, Collective, CollectiveKind, Program, ProgramBuilder, Slice
from chakra_ir.collective import chunk, custom_collective
from tests.astrasim.helpers import AR, baseline
from topologies import CollcError, load_topology_file, parse_topology


def refused(tmp_path: Path, program: Program, spec: str, match: str, **options: object) -> str:
    t = parse_topology(spec)
    out = tmp_path / "parent" / "bundle"
    with pytest.raises(AstraExportError, match=match) as info:
        export(program, t, out, AstraOptions(**{"chunk_bytes": 1024, **options}))  # type: ignore[arg-type]
    err = info.value
    assert isinstance(err, CollcError)
    assert "\n" not in str(err)
    assert list(tmp_path.iterdir()) == [], "a refusal wrote something"
    return str(err)


def empty(collective: Collective) -> Program:
    return ProgramBuilder(collective).build()


@pytest.mark.parametrize(
    "collective",
    [
        Collective(CollectiveKind.REDUCE, 4, root=0),
        Collective(CollectiveKind.BROADCAST, 4, root=1),
        Collective(CollectiveKind.GATHER, 4, root=2),
        Collective(CollectiveKind.SCATTER, 4, root=3),
    ],
    ids=lambda c: c.kind.value,
)
def test_rooted_collectives(tmp_path: Path, collective: Collective) -> None:
    msg = refused(
        tmp_path,
        empty(collective),
        "ring:4",
        f"ASTRA-sim has no custom-collective key for {collective.kind.value} ",
    )
    assert "allreduce, allgather, reduce_scatter, alltoall" in msg


def test_custom_collective(tmp_path: Path) -> None:
    inputs = [[chunk(r, 0)] for r in range(4)]
    outputs = [[chunk((r + 1) % 4, 0)] for r in range(4)]
    c = custom_collective(4, inputs, outputs, name="shift")
    refused(
        tmp_path, empty(c), "ring:4", r"no custom-collective key for a custom collective \(shift\)"
    )


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("mesh:4x4", "dimension 0 is a line of 4 NPUs without wraparound"),
        ("mesh:2x3", "dimension 1 is a line of 3 NPUs without wraparound"),
        ("uniring:16", "dimension 0 is a one-way ring"),
        ("fred:16", r"is not a stack of Ring, FullyConnected and Switch dimensions \(fred"),
        (
            "graph:16,links=" + ";".join(f"{i}-{(i + 1) % 16}" for i in range(16)),
            r"not a stack of .* \(graph",
        ),
        ("ring:16,fail=0-1", r"has failed links \(0>1, 1>0\)"),
        ("torus:4x4,fail=0>1", r"has failed links \(0>1\)"),
        ("stack:ring4*switch4,fail_random=2,seed=3", "has failed links"),
        (
            "ring:16,linkbw=3-4:25GB/s",
            r"dimension 0 \(Ring\) has links of different bandwidth .*25GB/s on 3->4",
        ),
        (
            "torus:4x4,linklat=5-6:1us",
            r"dimension 0 \(Ring\) has links of different latency .*1000ns on 5->6",
        ),
        (
            "stack:ring4*fc2*switch2,linkbw=0>16:1GB/s",
            r"dimension 2 \(Switch\) has links of different bandwidth",
        ),
    ],
)
def test_topologies(tmp_path: Path, spec: str, match: str) -> None:
    n = parse_topology(spec).num_npus
    t = parse_topology("ring:16" if n == 16 else f"ring:{n}")
    program = baseline(AR, t)
    refused(tmp_path, program, spec, match)


def test_link_list_file(tmp_path: Path) -> None:
    src = tmp_path / "net.yaml"
    src.write_text(
        "npus: 4\nlinks:\n"
        + "".join(f"  - {{src: {i}, dst: {(i + 1) % 4}, bidirectional: true}}\n" for i in range(4))
    )
    t = load_topology_file(src)
    program = baseline(AR, parse_topology("ring:4"))
    out = tmp_path / "bundle"
    with pytest.raises(AstraExportError, match=r"not a stack of .* \(file has no ASTRA-sim"):
        export(program, t, out, AstraOptions(chunk_bytes=8))
    assert not out.exists()


@pytest.mark.parametrize(
    ("placement", "match"),
    [
        ((1, 0, 2, 3, 4, 5, 6, 7), r"placement \[1, 0, 2, .*\] is not ascending"),
        ((6, 4, 2, 0), "is not ascending"),
    ],
)
def test_placements(tmp_path: Path, placement: tuple[int, ...], match: str) -> None:
    t = parse_topology("ring:8")
    refused(tmp_path, baseline(AR, t, placement=placement), "ring:8", match)


def test_placement_outside_the_topology(tmp_path: Path) -> None:
    p = baseline(AR, parse_topology("ring:8"))
    refused(tmp_path, p, "ring:4", r"placement puts a rank on NPU 4, but topology ring:4")


def test_group_of_one(tmp_path: Path) -> None:
    p = empty(Collective(CollectiveKind.ALLREDUCE, 1, placement=(3,)))
    refused(tmp_path, p, "ring:4", "communicator group of 1 NPU")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"chunk_bytes": 0}, "chunk bytes must be at least 1"),
        ({"chunk_bytes": 1, "reduce_micros": -1}, "reduction time"),
        ({"chunk_bytes": 1, "name": "a/b"}, "plain file name stem"),
        ({"chunk_bytes": 1, "scheduling_policy": "RANDOM"}, "scheduling policy"),
        ({"chunk_bytes": 1, "collective_optimization": "themis"}, "collective optimization"),
        ({"chunk_bytes": 1, "preferred_dataset_splits": 0}, "divides by it"),
        ({"chunk_bytes": 1, "active_chunks_per_dimension": 0}, "active chunks"),
        ({"chunk_bytes": 1, "endpoint_delay_ns": -1}, "endpoint delay"),
        ({"chunk_bytes": 1, "local_mem_bw_gb_per_s": -1.0}, "local memory bandwidth"),
        ({"chunk_bytes": 1, "native_implementation": "oneRing"}, "native implementation"),
    ],
)
def test_options(options: dict[str, object], match: str) -> None:
    with pytest.raises(AstraExportError, match=match) as info:
        AstraOptions(**options)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_options_are_required(tmp_path: Path) -> None:
    t = parse_topology("ring:4")
    with pytest.raises(AstraExportError, match="needs AstraOptions"):
        export(baseline(AR, t), t, tmp_path / "b", None)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_refusal_leaves_a_previous_bundle_alone(tmp_path: Path) -> None:
    t = parse_topology("ring:4")
    out = tmp_path / "b"
    export(baseline(AR, t), t, out, AstraOptions(chunk_bytes=8))
    before = {f: f.read_bytes() for f in out.rglob("*") if f.is_file()}
    with pytest.raises(AstraExportError):
        export(baseline(AR, t), parse_topology("ring:4,fail=0-1"), out, AstraOptions(chunk_bytes=8))
    assert {f: f.read_bytes() for f in out.rglob("*") if f.is_file()} == before
    assert [x.name for x in tmp_path.iterdir()] == ["b"]


def test_sizes_past_int64(tmp_path: Path) -> None:
    # Reduce-scatter of 2 ranks: messages of 1 chunk of 2^62 bytes, an input of 2 chunks, so
    # the workload's comm_size is 2^63.
    b = ProgramBuilder(Collective(CollectiveKind.REDUCE_SCATTER, 2))
    b.send(0, 1, Slice(Buffer.INPUT, 1))
    b.recv(1, 0, Slice(Buffer.INPUT, 1), reduce=True)
    refused(
        tmp_path,
        b.build(),
        "ring:2",
        "comm_size 9223372036854775808 does not fit in int64",
        chunk_bytes=2**62,
    )


def test_messages_past_int64(tmp_path: Path) -> None:
    t = parse_topology("ring:4")
    p = baseline(CollectiveKind.ALLGATHER, t, algorithm="direct")
    b = ProgramBuilder(p.collective)
    for r in range(4):
        b.send(r, (r + 1) % 4, Slice(Buffer.INPUT, 0))
        b.recv((r + 1) % 4, r, Slice(Buffer.OUTPUT, r))
    big = b.build()
    refused(
        tmp_path, big, "ring:4", "cannot be written as custom-collective ETs", chunk_bytes=2**63
    )


@pytest.mark.parametrize("where", [".", "sub/.."])
def test_refuses_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    t = parse_topology("ring:4")
    with pytest.raises(AstraExportError, match="a folder of its own"):
        export(baseline(AR, t), t, Path(where), AstraOptions(chunk_bytes=8))
    assert list(tmp_path.iterdir()) == []


def test_long_placements_are_shortened(tmp_path: Path) -> None:
    placement = tuple(reversed(range(64)))
    p = baseline(AR, parse_topology("torus:8x8"), placement=placement)
    msg = refused(tmp_path, p, "torus:8x8", "is not ascending")
    assert "[63, 62, 61, 60, 59, 58, ...] (64 NPUs)" in msg
