"""`workloads.chakra_io`: workload ETs read and written with the attribute types ASTRA-sim's
feeder reads; every unreadable input is a WorkloadError naming the file (and the node)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.et.framing import frame, split_frames
from tests.workloads.build import AG, AR, coll, comp, mem, other, recv, send, workload
from topologies import parse_topology
from workloads.analytical import NativeConfig, native_timers
from workloads.chakra_io import encode_rank, read_workload, write_workload
from workloads.engine import run_workload
from workloads.model import NodeKind, WNode, Workload, WorkloadError, check_workload

GROUPS = {"1": (0, 1), "2": (1, 2)}


def sample() -> Workload:
    """Three NPUs with every node type and attribute collc writes."""
    w = workload(
        [
            other(0, NodeKind.METADATA),
            comp(1, 5, (0,), num_ops=1 << 40, tensor_size=(1 << 33) + 1),
            coll(2, AR, 1 << 31, deps=(1,), involved_dim=(True, False)),
            replace(send(3, 0, 1, 4096, tag=7, deps=(1,)), comm_priority=2),
            coll(4, AG, 512, "1", deps=(2,)),
            mem(5, 100),
            mem(6, 200, store=True),
            replace(comp(7, 3, is_cpu_op=True), ctrl_deps=(5, 6)),
            other(8, NodeKind.INVALID, (6,)),
        ],
        [
            comp(0, 2),
            coll(1, AR, 1 << 31, involved_dim=(True, False)),
            recv(2, 0, 1, 4096, tag=7, deps=(0,)),
            coll(3, AG, 512, "1", deps=(1,)),
            coll(9, AR, 2048, "2"),
        ],
        [coll(0, AR, 1 << 31, involved_dim=(True, False)), coll(1, AR, 2048, "2")],
        groups=GROUPS,
    )
    w.metadata = {"model": "toy", "npus": 3, "memory": {"weights": 12}}
    return w


def messages(path: Path) -> tuple[pb.GlobalMetadata, list[pb.Node]]:
    """The GlobalMetadata and Nodes of an ET file, parsed with the protobuf bindings."""
    data = path.read_bytes()
    starts, ends = split_frames(data, str(path))
    meta = pb.GlobalMetadata()
    meta.ParseFromString(data[int(starts[0]) : int(ends[0])])
    nodes = []
    for s, e in zip(starts[1:], ends[1:], strict=True):
        n = pb.Node()
        n.ParseFromString(data[int(s) : int(e)])
        nodes.append(n)
    return meta, nodes


def et_file(path: Path, *nodes: pb.Node, version: str = "0.0.4") -> Path:
    """Write an ET file of ``nodes`` by hand."""
    body = frame(pb.GlobalMetadata(version=version).SerializeToString())
    body += b"".join(frame(n.SerializeToString()) for n in nodes)
    path.write_bytes(body)
    return path


def coll_pb(id: int = 0, **attrs: tuple[str, object]) -> pb.Node:
    """An ASTRA-sim-style COMM_COLL node; ``attrs`` maps a name to (oneof member, value)."""
    n = pb.Node(id=id, name=f"c{id}", type=pb.COMM_COLL_NODE)
    n.attr.add(name="is_cpu_op", bool_val=False)
    for name, (member, value) in attrs.items():
        a = n.attr.add(name=name)
        if member.endswith("_list"):
            getattr(a, member).values.extend(value)
        else:
            setattr(a, member, value)
    return n


# -- writing and reading back -----------------------------------------------------------


def test_write_then_read_round_trips_nodes_groups_and_description(tmp_path: Path) -> None:
    w = sample()
    out = tmp_path / "wl"
    files = write_workload(w, out)
    assert sorted(p.name for p in files) == sorted(
        ["workload.0.et", "workload.1.et", "workload.2.et", "comm_groups.json", "workload.json"]
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in files)
    back = read_workload(out)
    assert back.ranks == w.ranks
    assert back.groups == GROUPS
    assert back.metadata == w.metadata
    assert back.files == [str(out / f"workload.{r}.et") for r in range(3)]
    check_workload(back)
    # A prefix names the same set.
    assert read_workload(out / "workload").ranks == w.ranks


def test_written_attributes_have_astra_sims_types(tmp_path: Path) -> None:
    write_workload(sample(), tmp_path / "wl")
    meta, nodes = messages(tmp_path / "wl" / "workload.0.et")
    assert meta.version
    assert meta.version == "0.0.4"
    members: dict[tuple[int, str], str] = {}
    for n in nodes:
        for a in n.attr:
            members[(n.id, a.name)] = str(a.WhichOneof("value"))
    want = {
        "is_cpu_op": "bool_val",
        "num_ops": "int64_val",
        "tensor_size": "uint64_val",
        "comm_type": "int64_val",
        "comm_size": "int64_val",
        "pg_name": "string_val",
        "involved_dim": "bool_list",
        "comm_src": "int32_val",
        "comm_dst": "int32_val",
        "comm_tag": "int32_val",
        "comm_priority": "int32_val",
    }
    for (_, name), member in members.items():
        assert member == want[name], name
    # Every attribute of the sample appears on some node.
    assert {name for _, name in members} == set(want)
    by_id = {n.id: n for n in nodes}
    assert [n.id for n in nodes] == list(range(9))
    assert by_id[2].type == pb.COMM_COLL_NODE
    ar = {a.name: a for a in by_id[2].attr}
    assert ar["comm_size"].int64_val == 1 << 31
    assert list(ar["involved_dim"].bool_list.values) == [True, False]
    assert ar["pg_name"].string_val == ""
    assert {a.name: a for a in by_id[4].attr}["pg_name"].string_val == "1"
    assert list(by_id[7].ctrl_deps) == [5, 6]
    assert by_id[1].duration_micros == 5
    assert {a.name: a for a in by_id[1].attr}["tensor_size"].uint64_val == (1 << 33) + 1


def test_the_groups_file_is_astra_sims(tmp_path: Path) -> None:
    write_workload(sample(), tmp_path / "wl")
    data = json.loads((tmp_path / "wl" / "comm_groups.json").read_text())
    assert data == {"1": [0, 1], "2": [1, 2]}


def test_a_workload_without_groups_writes_no_groups_file(tmp_path: Path) -> None:
    w = workload([coll(0, AR, 64)], [coll(0, AR, 64)])
    files = write_workload(w, tmp_path / "wl")
    assert "comm_groups.json" not in {p.name for p in files}
    assert read_workload(tmp_path / "wl").groups == {}


def test_encode_rank_writes_the_metadata_attributes() -> None:
    data = encode_rank([comp(0, 1)], {"collc_workload": "1", "model": "m"})
    starts, ends = split_frames(data, "<x>")
    meta = pb.GlobalMetadata()
    meta.ParseFromString(data[int(starts[0]) : int(ends[0])])
    assert {a.name: a.string_val for a in meta.attr} == {"collc_workload": "1", "model": "m"}
    assert len(starts) == 2


def test_write_replaces_an_earlier_workload_folder(tmp_path: Path) -> None:
    out = tmp_path / "wl"
    write_workload(sample(), out)
    small = workload([comp(0, 4)])
    write_workload(small, out)
    assert sorted(p.name for p in out.iterdir()) == ["workload.0.et", "workload.json"]
    assert read_workload(out).ranks == small.ranks


def test_write_refuses_a_folder_that_is_not_a_workload(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    with pytest.raises(WorkloadError, match="not a collc workload folder"):
        write_workload(sample(), out)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "keep me\n"
    # Nothing left next to it either.
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


def test_write_refuses_a_file(tmp_path: Path) -> None:
    out = tmp_path / "f"
    out.write_text("x")
    with pytest.raises(WorkloadError, match="not a folder"):
        write_workload(sample(), out)
    assert out.read_text() == "x"


def test_write_into_an_empty_folder(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    write_workload(sample(), out)
    assert read_workload(out).ranks == sample().ranks


# -- reading foreign and broken files ----------------------------------------------------


def test_astra_sims_microbenchmark_reads_and_runs(tmp_path: Path) -> None:
    # As ASTRA-sim's examples/workload/microbenchmarks/all_reduce/8npus_1MB: one COMM_COLL
    # node per NPU, no pg_name, no involved_dim, version 0.0.4.
    folder = tmp_path / "ar"
    folder.mkdir()
    for r in range(8):
        n = pb.Node(id=0, name="all_reduce_8npus_1MB", type=pb.COMM_COLL_NODE)
        n.attr.add(name="is_cpu_op", bool_val=False)
        n.attr.add(name="comm_type", int64_val=0)
        n.attr.add(name="comm_size", int64_val=1048576)
        et_file(folder / f"all_reduce.{r}.et", n)
    w = read_workload(folder)
    assert w.num_npus == 8
    assert w.groups == {}
    for nodes in w.ranks:
        assert nodes == [
            WNode(
                id=0,
                name="all_reduce_8npus_1MB",
                kind=NodeKind.COLL,
                comm_type=0,
                comm_size=1048576,
            )
        ]
    check_workload(w)
    coll_t, p2p, _ = native_timers(parse_topology("ring:8"), NativeConfig())
    run = run_workload(w, coll_t, p2p)
    # 14 ring steps of 131072 B at 50 B/ns and 500 ns, plus 10 ns each and 10 ns before the
    # first.
    assert run.time_ns == 14 * (int(500 + 131072 / 50) + 10) + 10


def test_a_truncated_file_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "wl"
    write_workload(sample(), out)
    victim = out / "workload.1.et"
    victim.write_bytes(victim.read_bytes()[:-5])
    with pytest.raises(WorkloadError) as info:
        read_workload(out)
    assert str(victim) in str(info.value)


def test_an_empty_file_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "wl"
    write_workload(sample(), out)
    (out / "workload.2.et").write_bytes(b"")
    with pytest.raises(WorkloadError) as info:
        read_workload(out)
    assert str(out / "workload.2.et") in str(info.value)


@pytest.mark.parametrize(
    ("attr", "member", "value", "what"),
    [
        ("comm_size", "double_val", 1048576.0, "double_val"),
        ("comm_type", "float_val", 0.0, "float_val"),
        ("comm_size", "string_val", "1MB", "string_val"),
        ("comm_size", "int64_list", [1, 2], "int64_list"),
    ],
)
def test_an_attribute_of_the_wrong_type_names_the_node(
    tmp_path: Path, attr: str, member: str, value: object, what: str
) -> None:
    good = coll_pb(0, comm_type=("int64_val", 0), comm_size=("int64_val", 64))
    attrs: dict[str, tuple[str, object]] = {
        "comm_type": ("int64_val", 0),
        "comm_size": ("int64_val", 64),
    }
    attrs[attr] = (member, value)
    bad = coll_pb(5, **attrs)
    folder = tmp_path / "f"
    folder.mkdir()
    et_file(folder / "t.0.et", good)
    path = et_file(folder / "t.1.et", bad)
    with pytest.raises(WorkloadError) as info:
        read_workload(folder)
    text = str(info.value)
    assert text.startswith(str(path)), text
    assert f"node 5: attribute {attr} is {what}" in text


@pytest.mark.parametrize(
    ("member", "value"),
    [("int64_list", [1, 0]), ("bool_val", True), ("string_val", "1,0")],
)
def test_involved_dim_must_be_a_bool_list(tmp_path: Path, member: str, value: object) -> None:
    n = coll_pb(
        3, comm_type=("int64_val", 0), comm_size=("int64_val", 64), involved_dim=(member, value)
    )
    path = et_file(tmp_path / "t.0.et", n)
    with pytest.raises(WorkloadError) as info:
        read_workload(tmp_path)
    text = str(info.value)
    assert text.startswith(str(path))
    assert "node 3: involved_dim must be a bool_list" in text


def test_pg_name_must_be_a_string(tmp_path: Path) -> None:
    n = coll_pb(
        4, comm_type=("int64_val", 0), comm_size=("int64_val", 64), pg_name=("int64_val", 1)
    )
    path = et_file(tmp_path / "t.0.et", n)
    with pytest.raises(WorkloadError) as info:
        read_workload(tmp_path)
    assert str(info.value).startswith(str(path))
    assert "node 4: pg_name is int" in str(info.value)


def test_integer_attributes_of_other_widths_are_read(tmp_path: Path) -> None:
    # ASTRA-sim reads any integer member; Chakra's converters write several.
    n = coll_pb(0, comm_type=("int32_val", 2), comm_size=("uint64_val", 96))
    et_file(tmp_path / "t.0.et", n)
    (nd,) = read_workload(tmp_path).ranks[0]
    assert (nd.comm_type, nd.comm_size) == (2, 96)


def test_a_folder_without_et_files(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="no ET files"):
        read_workload(tmp_path)


def test_groups_from_a_given_file_replace_the_folders(tmp_path: Path) -> None:
    out = tmp_path / "wl"
    write_workload(sample(), out)
    other_groups = tmp_path / "g.json"
    other_groups.write_text('{"2": [2, 0], "1": [1, 2]}')
    assert read_workload(out, str(other_groups)).groups == {"1": (1, 2), "2": (0, 2)}


@pytest.mark.parametrize(
    "text",
    ['{"1": [0, 0]}', '{"0": [0, 1]}', '{"1": []}', "[1, 2]", "{nope"],
    ids=["twice", "zero", "empty", "list", "json"],
)
def test_a_bad_groups_file_names_the_file(tmp_path: Path, text: str) -> None:
    out = tmp_path / "wl"
    write_workload(sample(), out)
    path = tmp_path / "g.json"
    path.write_text(text)
    with pytest.raises(WorkloadError) as info:
        read_workload(out, str(path))
    assert str(path) in str(info.value)


def test_a_bad_description_is_a_warning_naming_the_file(tmp_path: Path) -> None:
    """The description is optional: the workload still reads, and says what it skipped."""
    out = tmp_path / "wl"
    write_workload(sample(), out)
    (out / "workload.json").write_text("{oops")
    w = read_workload(out)
    assert w.metadata == {} and len(w.ranks) == len(sample().ranks)
    (warning,) = w.warnings
    assert str(out / "workload.json") in warning and "runs without its description" in warning
