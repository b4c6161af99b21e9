"""Every Chakra-visible field of collc's own ET files must agree with collc's attributes:
``collc verify`` (with or without the manifest), and every other reader of an output folder,
refuses a file that ASTRA-sim would run differently, naming the file, the node and the field."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from chakra_ir.collective import Buffer, Collective, CollectiveKind
from chakra_ir.et import EtDecodeError, decode_program, encode_program
from chakra_ir.et import et_def_pb2 as pb
from chakra_ir.program import Hints, ProgramBuilder, Slice
from collc.cli import cli
from tests.et.helpers import attr, et_stream, pb_messages

Mutation = Callable[[list[pb.Node]], int]
"""Changes one node of a rank's file; returns the node's id."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("et") / "out"
    r = CliRunner().invoke(
        cli, ["synthesize", "-t", "ring:4", "-c", "allreduce", "-a", "ring", "-o", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out


def _first(nodes: list[pb.Node], t: int) -> pb.Node:
    return next(n for n in nodes if n.type == t)


def _attr(n: pb.Node, name: str) -> pb.AttributeProto:
    return next(a for a in n.attr if a.name == name)


def _retype(t: int) -> Mutation:
    def change(nodes: list[pb.Node]) -> int:
        n = _first(nodes, pb.COMM_SEND_NODE)
        n.type = t  # type: ignore[assignment]
        return int(n.id)

    return change


def _set_int(node_type: int, name: str, delta: int) -> Mutation:
    def change(nodes: list[pb.Node]) -> int:
        n = _first(nodes, node_type)
        a = _attr(n, name)
        a.int32_val += delta
        return int(n.id)

    return change


def _member(nodes: list[pb.Node]) -> int:
    n = _first(nodes, pb.COMM_SEND_NODE)
    a = _attr(n, "comm_tag")
    a.int64_val = a.int32_val
    return int(n.id)


def _cpu(nodes: list[pb.Node]) -> int:
    n = _first(nodes, pb.COMM_SEND_NODE)
    _attr(n, "is_cpu_op").bool_val = True
    return int(n.id)


def _drop(name: str) -> Mutation:
    def change(nodes: list[pb.Node]) -> int:
        n = _first(nodes, pb.COMM_RECV_NODE)
        keep = [a for a in n.attr if a.name != name]
        del n.attr[:]
        n.attr.extend(keep)
        return int(n.id)

    return change


def _duration(nodes: list[pb.Node]) -> int:
    n = _first(nodes, pb.COMP_NODE)
    n.duration_micros = 5
    return int(n.id)


MUTATIONS: list[tuple[str, Mutation, str]] = [
    ("send-to-comp", _retype(pb.COMP_NODE), "type is COMP_NODE, but collc_op 0 (send)"),
    ("send-to-recv", _retype(pb.COMM_RECV_NODE), "type is COMM_RECV_NODE"),
    ("send-to-coll", _retype(pb.COMM_COLL_NODE), "type is COMM_COLL_NODE"),
    ("send-to-invalid", _retype(pb.INVALID_NODE), "type is INVALID_NODE"),
    ("tag", _set_int(pb.COMM_SEND_NODE, "comm_tag", 1), "comm_tag"),
    ("send-src", _set_int(pb.COMM_SEND_NODE, "comm_src", 1), "comm_src is"),
    ("recv-dst", _set_int(pb.COMM_RECV_NODE, "comm_dst", 1), "comm_dst is"),
    ("tag-member", _member, "comm_tag is written as field 9, collc writes field 7"),
    ("cpu", _cpu, "is_cpu_op is 1, but collc's attributes give 0"),
    ("no-tag", _drop("comm_tag"), "lacks comm_tag"),
    ("no-src", _drop("comm_src"), "lacks comm_src"),
    ("no-chunks", _drop("msg_chunk_cnt"), "lacks msg_chunk_cnt"),
    ("duration", _duration, "duration_micros 5, but collc writes 0"),
]


def _mutate(folder: Path, dst: Path, rank: int, change: Mutation) -> tuple[Path, int]:
    shutil.copytree(folder, dst)
    path = dst / f"allreduce.{rank}.et"
    meta, nodes = pb_messages(path.read_bytes())
    node = change(nodes)
    path.write_bytes(et_stream(meta, [n.SerializeToString() for n in nodes]))
    return path, node


@pytest.mark.parametrize(("name", "change", "text"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
@pytest.mark.parametrize("manifest", [True, False], ids=["manifest", "no-manifest"])
def test_a_changed_chakra_field_is_refused_naming_file_node_and_field(
    folder: Path, tmp_path: Path, name: str, change: Mutation, text: str, manifest: bool
) -> None:
    bad = tmp_path / name
    path, node = _mutate(folder, bad, 1, change)
    if not manifest:
        (bad / "manifest.json").unlink()
    r = CliRunner().invoke(cli, ["verify", str(bad)])
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and "Traceback" not in r.output
    assert str(path) in r.output and f"node {node} (" in r.output and text in r.output, r.output
    if manifest:  # every reader of the folder, not only verify
        r = CliRunner().invoke(cli, ["simulate", str(bad)])
        assert r.exit_code == 2 and text in r.output, r.output


def test_the_unchanged_folder_verifies(folder: Path) -> None:
    r = CliRunner().invoke(cli, ["verify", str(folder)])
    assert r.exit_code == 0, r.output


def _gated_reducing() -> tuple[list[bytes], int]:
    """A program with an after hint (rank 0: a gate node before its last send) and a
    reducing receive that takes time (rank 1: its reduction node): the two layouts whose
    data_deps collc itself does not decode. Decoded, not verified."""
    c = Collective(CollectiveKind.REDUCE, 2, root=1)
    b = ProgramBuilder(c)
    b.copy(0, Slice(Buffer.INPUT, 0), Slice(Buffer.SCRATCH, 0))
    b.send(0, 1, Slice(Buffer.INPUT, 0), deps=[0])
    b.send(0, 1, Slice(Buffer.SCRATCH, 0), tag=1, deps=[0], hints=Hints(after=1))
    b.copy(1, Slice(Buffer.INPUT, 0), Slice(Buffer.OUTPUT, 0))
    rr = b.recv(1, 0, Slice(Buffer.OUTPUT, 0), reduce=True, deps=[0])
    b.recv(1, 0, Slice(Buffer.SCRATCH, 0), tag=1)
    b.copy(1, Slice(Buffer.OUTPUT, 0), Slice(Buffer.SCRATCH, 1), deps=[rr])
    files = encode_program(b.build(), 64, reduce_micros=2)
    return files, rr


def test_a_gate_must_wait_for_what_its_hint_names() -> None:
    files, _ = _gated_reducing()
    meta, nodes = pb_messages(files[0])
    gate = nodes[2]  # copy, send, gate, gated send
    assert list(gate.data_deps) == [0] and list(nodes[3].data_deps) == [0, 2]
    gate.data_deps[:] = []
    bad = et_stream(meta, [n.SerializeToString() for n in nodes])
    with pytest.raises(EtDecodeError) as e:
        decode_program([bad, files[1]])
    assert "node 2 (gate): data_deps [], but collc's attributes give [0]" in str(e.value)


def test_data_deps_around_reduction_nodes_must_be_collcs() -> None:
    files, rr = _gated_reducing()
    decode_program(files)
    meta, nodes = pb_messages(files[1])
    user = nodes[-1]  # the copy that waits for the reduction: it names the reduction node
    assert list(user.data_deps) == [rr + 1]
    user.data_deps[:] = [rr]  # the receive itself: ASTRA-sim would not wait for the reduction
    bad = et_stream(meta, [n.SerializeToString() for n in nodes])
    with pytest.raises(EtDecodeError) as e:
        decode_program([files[0], bad])
    want = f"node {user.id} (copy): data_deps [{rr}], but collc's attributes give [{rr + 1}]"
    assert want in str(e.value)


def test_a_tag_changed_on_both_ends_is_still_refused(folder: Path, tmp_path: Path) -> None:
    """Sender and receiver agree on the new tag, but it is not the message's number: the
    decoded program is the same, the files are not collc's."""
    bad = tmp_path / "both"
    shutil.copytree(folder, bad)
    p0 = bad / "allreduce.0.et"
    meta0, nodes0 = pb_messages(p0.read_bytes())
    send = _first(nodes0, pb.COMM_SEND_NODE)
    dst = _attr(send, "comm_dst").int32_val
    _attr(send, "comm_tag").int32_val = 77
    p0.write_bytes(et_stream(meta0, [n.SerializeToString() for n in nodes0]))
    pd = bad / f"allreduce.{dst}.et"
    meta1, nodes1 = pb_messages(pd.read_bytes())
    recv = next(
        n for n in nodes1 if n.type == pb.COMM_RECV_NODE and _attr(n, "comm_src").int32_val == 0
    )
    _attr(recv, "comm_tag").int32_val = 77
    pd.write_bytes(et_stream(meta1, [n.SerializeToString() for n in nodes1]))
    r = CliRunner().invoke(cli, ["verify", str(bad)])
    assert r.exit_code == 2 and "comm_tag 77, but the message's place" in r.output, r.output


def test_an_extra_attribute_where_collc_writes_none_is_refused(
    folder: Path, tmp_path: Path
) -> None:
    def change(nodes: list[pb.Node]) -> int:
        n = _first(nodes, pb.COMP_NODE)
        n.attr.append(attr("comm_tag", "int32_val", 3))
        return int(n.id)

    bad = tmp_path / "extra"
    _, node = _mutate(folder, bad, 2, change)
    r = CliRunner().invoke(cli, ["verify", str(bad)])
    assert r.exit_code == 2 and f"node {node} (" in r.output
    assert "carries comm_tag, which collc writes only on other nodes" in r.output
