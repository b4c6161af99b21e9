"""`workloads.model.check_workload`: every refusal names the file and the node; valid workloads
pass; random valid workloads pass and run to the end by the workload rules."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workloads.build import AG, AR, RS, coll, comp, mem, other, recv, same, send, workload
from workloads.engine import run_workload
from workloads.model import (
    CollKind,
    NodeKind,
    WNode,
    Workload,
    WorkloadError,
    check_workload,
    describe,
    issue_order,
)

G = {"1": (0, 1), "2": (1, 2)}


def missing(attr: str) -> dict[str, Any]:
    """Keyword arguments of `dataclasses.replace` that drop attribute ``attr``."""
    return {attr: None}


def refused(w: Workload, npu: int, node_id: int | None, *words: str, roofline: bool = False) -> str:
    """check_workload refuses ``w``; the message names NPU ``npu``'s file, the node (when
    given) and every word of ``words``. Returns the message."""
    with pytest.raises(WorkloadError) as info:
        check_workload(w, roofline=roofline)
    text = str(info.value)
    assert text.startswith(f"npu{npu}.et: "), text
    if node_id is not None:
        assert re.search(rf"\bnode {node_id}\b", text), text
    for word in words:
        assert word in text, text
    return text


# -- valid workloads ----------------------------------------------------------------------


def test_a_valid_workload_with_every_node_type_passes() -> None:
    w = workload(
        [
            other(0, NodeKind.METADATA),
            comp(1, 5, (0,)),
            coll(2, AR, 1 << 20, deps=(1,)),
            send(3, 0, 1, 4096, tag=7, deps=(1,)),
            coll(4, AG, 512, "1", deps=(2,)),
            mem(5, 100),
            coll(6, CollKind.BROADCAST, 64, us=3),
            other(7, NodeKind.INVALID, (6,)),
        ],
        [
            comp(0, 2),
            coll(1, AR, 1 << 20),
            recv(2, 0, 1, 4096, tag=7, deps=(0,)),
            coll(3, AG, 512, "1", deps=(1,)),
            coll(9, RS, 2048, "2"),
        ],
        [coll(0, AR, 1 << 20), coll(1, RS, 2048, "2")],
        groups=G,
    )
    check_workload(w)


def test_pg_name_0_and_empty_are_the_default_group() -> None:
    w = workload([coll(0, AR, 100, "0")], [coll(0, AR, 100, "")])
    check_workload(w)


def test_collectives_of_a_group_are_matched_in_issue_order_not_file_order() -> None:
    # NPU 1 lists its collectives in the other order; by id (issue order) they agree.
    a = [coll(0, AR, 100), coll(1, AG, 200)]
    w = workload(a, [a[1], a[0]])
    check_workload(w)
    assert issue_order(w.ranks[1]) == [1, 0]


def test_a_cpu_compute_node_needs_no_roofline_attributes() -> None:
    w = same(1, [comp(0, 3, is_cpu_op=True), comp(1, 0, num_ops=10, tensor_size=4)])
    check_workload(w, roofline=True)


# -- refusals -----------------------------------------------------------------------------


def _pair(
    n0: list[WNode], n1: list[WNode], groups: dict[str, tuple[int, ...]] | None = None
) -> Workload:
    return workload(n0, n1, groups=groups)


@pytest.mark.parametrize("attr", ["comm_size", "comm_type"])
def test_a_collective_without_a_required_attribute(attr: str) -> None:
    bad = replace(coll(3, AR, 100), **missing(attr))
    w = _pair([coll(3, AR, 100)], [comp(0, 1), bad])
    refused(w, 1, 3, f"attribute {attr} is missing")


@pytest.mark.parametrize("attr", ["comm_size", "comm_tag", "comm_dst"])
def test_a_send_without_a_required_attribute(attr: str) -> None:
    bad = replace(send(4, 0, 1, 100, tag=2), **missing(attr))
    w = _pair([comp(0, 1), bad], [recv(0, 0, 1, 100, tag=2)])
    refused(w, 0, 4, f"attribute {attr} is missing")


@pytest.mark.parametrize("attr", ["comm_size", "comm_tag", "comm_src"])
def test_a_recv_without_a_required_attribute(attr: str) -> None:
    bad = replace(recv(6, 0, 1, 100, tag=2), **missing(attr))
    w = _pair([send(0, 0, 1, 100, tag=2)], [bad])
    refused(w, 1, 6, f"attribute {attr} is missing")


@pytest.mark.parametrize("size", [0, -8])
def test_a_non_positive_comm_size(size: int) -> None:
    w = _pair([coll(0, AR, 100)], [coll(2, AR, size)])
    refused(w, 1, 2, f"comm_size {size} must be positive")
    w = _pair([send(1, 0, 1, size)], [recv(0, 0, 1, size)])
    refused(w, 0, 1, f"comm_size {size} must be positive")


@pytest.mark.parametrize("kind", [CollKind.REDUCE, CollKind.GATHER, CollKind.BARRIER])
def test_collectives_astra_sim_does_not_simulate(kind: CollKind) -> None:
    w = _pair([comp(0, 1), coll(5, kind, 100)], [coll(5, kind, 100)])
    refused(w, 0, 5, kind.name, "not simulated")


def test_an_unknown_comm_type() -> None:
    w = same(2, [coll(1, 77, 100)])
    refused(w, 0, 1, "unknown comm_type 77")


def test_an_unknown_pg_name_lists_the_groups() -> None:
    w = workload(
        [coll(0, AR, 100, "1")],
        [coll(0, AR, 100, "1"), coll(4, AR, 100, "12")],
        [coll(0, AR, 100, "2")],
        groups={"2": (1, 2), "10": (0, 2), "1": (0, 1)},
    )
    text = refused(w, 1, 4, "pg_name '12'")
    # The known groups in natural order.
    assert "groups: 1, 2, 10" in text
    text = refused(same(1, [coll(3, AR, 100, "5")]), 0, 3, "pg_name '5'")
    assert "groups: none" in text


def test_an_npu_issuing_on_a_group_it_is_not_in() -> None:
    w = workload(
        [coll(0, AR, 100, "1")],
        [coll(0, AR, 100, "1")],
        [comp(0, 1), coll(8, AR, 100, "1")],
        groups={"1": (0, 1)},
    )
    refused(w, 2, 8, "NPU 2", "group '1'", "not in")


@pytest.mark.parametrize(
    ("other_kind", "other_size"), [(RS, 100), (AG, 100), (AR, 101)], ids=["kind", "kind2", "size"]
)
def test_members_disagreeing_on_a_collective(other_kind: CollKind, other_size: int) -> None:
    lead = [coll(0, AR, 64), coll(1, AR, 100, deps=(0,))]
    member = [coll(0, AR, 64), coll(7, other_kind, other_size, deps=(0,))]
    w = _pair(lead, member)
    text = refused(w, 1, 7, "collective 1 of the default group", "NPU 0 and NPU 1")
    assert f"ALL_REDUCE of 100 B vs {other_kind.name} of {other_size} B" in text


def test_a_member_missing_a_group_collective() -> None:
    w = workload(
        [coll(0, AR, 64, "1"), coll(3, AG, 32, "1", deps=(0,))],
        [coll(0, AR, 64, "1")],
        groups={"1": (0, 1)},
    )
    text = refused(w, 0, 3, "collective 1 of group '1'")
    assert "vs none" in text


def test_a_send_without_its_receive() -> None:
    w = _pair([comp(0, 1), send(2, 0, 1, 4096, tag=3)], [comp(0, 1)])
    refused(w, 0, 2, "no matching a receive on NPU 1", "tag 3", "4096 B")


def test_a_receive_without_its_send() -> None:
    w = _pair([comp(0, 1)], [comp(0, 1), recv(5, 0, 1, 4096, tag=3)])
    refused(w, 1, 5, "no matching a send on NPU 0", "tag 3")


@pytest.mark.parametrize(
    ("tag", "size", "npu", "node"), [(4, 4096, 0, 2), (3, 4095, 1, 5)], ids=["tag", "size"]
)
def test_a_send_and_receive_that_differ(tag: int, size: int, npu: int, node: int) -> None:
    # Both are unmatched; the first by (src, dst, tag, size) is named.
    w = _pair([send(2, 0, 1, 4096, tag=3)], [recv(5, 0, 1, size, tag=tag)])
    refused(w, npu, node, "no matching")


def test_two_sends_and_one_receive() -> None:
    w = _pair([send(2, 0, 1, 64), send(3, 0, 1, 64)], [recv(5, 0, 1, 64)])
    refused(w, 0, 2, "no matching")


def test_a_dependency_on_a_missing_node() -> None:
    w = _pair([comp(0, 1)], [comp(0, 1), comp(3, 1, (0, 9))])
    refused(w, 1, 3, "depends on node 9")


def test_a_dependency_cycle() -> None:
    w = _pair(
        [comp(2, 1), comp(4, 1, (5,)), comp(5, 1, (4,)), comp(7, 1, (4,))],
        [comp(0, 1)],
    )
    refused(w, 0, 4, "dependency cycle")


def test_a_control_dependency_cycle() -> None:
    a = replace(comp(1, 1), ctrl_deps=(2,))
    w = same(1, [a, comp(2, 1, (1,))])
    refused(w, 0, 1, "dependency cycle")


def test_duplicate_node_ids() -> None:
    w = _pair([comp(0, 1)], [comp(3, 1), comp(1, 1), comp(3, 2)])
    refused(w, 1, None, "node id 3 appears twice")


def test_an_empty_file() -> None:
    w = _pair([comp(0, 1)], [])
    refused(w, 1, None, "no nodes")


def test_no_files_at_all() -> None:
    with pytest.raises(WorkloadError, match="no NPUs"):
        check_workload(Workload([]))


def test_a_communication_node_on_the_cpu() -> None:
    bad = replace(coll(1, AR, 100), is_cpu_op=True)
    refused(_pair([coll(1, AR, 100)], [bad]), 1, 1, "is_cpu_op")
    bad = replace(send(2, 0, 1, 10), is_cpu_op=True)
    refused(_pair([bad], [recv(0, 0, 1, 10)]), 0, 2, "is_cpu_op")


def test_a_send_whose_source_is_another_npu() -> None:
    w = workload([send(1, 1, 2, 10)], [comp(0, 1)], [recv(0, 1, 2, 10)])
    refused(w, 0, 1, "comm_src 1 is not this file's NPU 0")


def test_a_receive_whose_destination_is_another_npu() -> None:
    w = workload([send(0, 0, 1, 10)], [recv(3, 0, 2, 10)], [comp(0, 1)])
    refused(w, 1, 3, "comm_dst 2 is not this file's NPU 1")


@pytest.mark.parametrize("peer", [0, 2, -1])
def test_a_message_to_itself_or_outside_the_workload(peer: int) -> None:
    w = _pair([send(6, 0, peer, 10)], [comp(0, 1)])
    refused(w, 0, 6, f"peer NPU {peer}")


def test_a_negative_tag() -> None:
    w = _pair([send(6, 0, 1, 10, tag=-1)], [recv(0, 0, 1, 10, tag=-1)])
    refused(w, 0, 6, "comm_tag -1")


def test_a_memory_node_without_its_size() -> None:
    bad = replace(mem(4, 10), tensor_size=None)
    refused(same(1, [bad]), 0, 4, "tensor_size")


def test_an_unknown_node_type() -> None:
    refused(same(1, [WNode(id=3, name="x", kind=42)]), 0, 3, "unknown node type 42")


def test_the_roofline_needs_ops_and_size_on_gpu_compute() -> None:
    no_ops = comp(2, 1, tensor_size=10)
    no_size = comp(2, 1, num_ops=10)
    for node, attr in ((no_ops, "num_ops"), (no_size, "tensor_size")):
        w = _pair(
            [comp(0, 1, num_ops=1, tensor_size=1)], [comp(0, 1, num_ops=1, tensor_size=1), node]
        )
        check_workload(w)  # timed by duration_micros without the roofline
        refused(w, 1, 2, f"attribute {attr} is missing", roofline=True)


def test_a_group_naming_an_npu_outside_the_workload() -> None:
    w = _pair([comp(0, 1)], [comp(0, 1)], {"1": (0, 2)})
    with pytest.raises(WorkloadError, match="NPU 2"):
        check_workload(w)


def test_describe_names_id_name_and_type() -> None:
    assert describe(coll(17, AR, 1)) == "node 17 'coll17' (COLL)"
    assert describe(WNode(id=3, name="", kind=99)) == "node 3 (type 99)"


# -- random valid workloads -----------------------------------------------------------------


@st.composite
def random_workloads(draw: st.DrawFn) -> Workload:
    """1-4 NPUs; each a DAG of COMP nodes with dependencies on random earlier ids, with the
    same sequence of default-group collectives (each depending on the previous one and on
    random earlier nodes) placed at random positions."""
    n = draw(st.integers(1, 4))
    kinds = [AR, AG, RS, CollKind.ALL_TO_ALL]
    colls = draw(st.lists(st.tuples(st.sampled_from(kinds), st.integers(1, 1 << 20)), max_size=4))
    ranks: list[list[WNode]] = []
    for _ in range(n):
        length = draw(st.integers(max(1, len(colls)), len(colls) + 8))
        places = sorted(draw(st.permutations(range(length)))[: len(colls)])
        nodes: list[WNode] = []
        prev = -1
        for i in range(length):
            deps = tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=3)))) if i else ()
            if i in places:
                kind, size = colls[places.index(i)]
                d = tuple(sorted({*deps, prev})) if prev >= 0 else deps
                nodes.append(coll(i, kind, size, deps=d))
                prev = i
            else:
                nodes.append(comp(i, draw(st.integers(0, 20)), deps))
        order = draw(st.permutations(nodes))  # the file order does not matter
        ranks.append(list(order))
    return workload(*ranks)


@settings(max_examples=60, deadline=None)
@given(random_workloads(), st.integers(1, 5000))
def test_random_workloads_pass_and_run_to_the_end(w: Workload, coll_ns: int) -> None:
    check_workload(w)
    run = run_workload(w, lambda call: float(coll_ns), lambda s, d, b: 100.0)
    for npu, nodes in enumerate(w.ranks):
        pos = {nd.id: i for i, nd in enumerate(nodes)}
        comps: list[tuple[float, float]] = []
        for i, nd in enumerate(nodes):
            s, e = run.starts[npu][i], run.ends[npu][i]
            assert not math.isnan(s) and not math.isnan(e)
            assert e >= s
            for d in nd.deps:
                assert s >= run.ends[npu][pos[d]]
            if nd.kind == NodeKind.COMP:
                assert e - s == (nd.duration_micros * 1000 or 1)
                comps.append((s, e))
            else:
                assert e - s >= coll_ns
        # One compute at a time.
        comps.sort()
        for (_, e0), (s1, _) in pairwise(comps):
            assert s1 >= e0
        assert run.finish_ns[npu] == max(run.ends[npu])
        assert run.compute_ns[npu] == sum(e - s for s, e in comps)
    # Every collective ends on all NPUs at once.
    for k, c in enumerate(sorted(run.collectives, key=lambda c: c.index)):
        assert c.index == k
        assert c.end_ns - c.start_ns == coll_ns
        assert c.start_ns == max(c.issued.values())
    assert len(run.collectives) == sum(1 for nd in w.ranks[0] if nd.kind == NodeKind.COLL)
