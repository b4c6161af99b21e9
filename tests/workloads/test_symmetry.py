"""The symmetry shortcut of the analytical mode equals the full run exactly where it applies,
and declines where it would not be exact."""

from __future__ import annotations

import dataclasses

import pytest

from topologies import parse_topology
from workloads.analytical import NativeConfig, native_timers
from workloads.engine import WorkloadRun, run_workload
from workloads.model import check_workload, npu_classes
from workloads.symmetry import run_by_classes
from workloads.transformer import generate

from .build import AR, coll, comp, workload

STACK64 = "stack:ring4*fc4*switch4,bw=[100GiB/s,50GiB/s,25GiB/s],lat=[100ns,500ns,1000ns]"


def _collectives(run: WorkloadRun) -> list[tuple[str, int, float, float, tuple[int, ...], int]]:
    return sorted(
        (c.call.pg_name, c.index, c.start_ns, c.end_ns, c.call.members, c.call.comm_size)
        for c in run.collectives
    )


@pytest.mark.parametrize(
    ("dp", "tp", "pp", "sp", "zero"),
    [(4, 4, 4, False, 0), (4, 4, 4, True, 1), (16, 4, 1, False, 2), (16, 1, 4, False, 0)],
)
def test_shortcut_equals_the_full_run_at_64_npus(
    dp: int, tp: int, pp: int, sp: bool, zero: int
) -> None:
    w = generate("gpt3-125m", npus=64, dp=dp, tp=tp, pp=pp, sp=sp, zero=zero, seq=256)
    classes = check_workload(w)
    coll, p2p, _ = native_timers(parse_topology(STACK64), NativeConfig(preferred_dataset_splits=4))
    full = run_workload(w, coll, p2p)
    quick = run_by_classes(w, coll, p2p, classes=classes)
    assert quick is not None
    assert max(classes) + 1 == pp  # one class per pipeline stage
    assert quick.finish_ns == full.finish_ns
    assert quick.compute_ns == full.compute_ns
    assert quick.starts == full.starts
    assert quick.ends == full.ends
    assert _collectives(quick) == _collectives(full)
    assert len(quick.collectives) == len(full.collectives) > 0


def test_classes_split_npus_that_differ_in_anything_but_groups_and_peers() -> None:
    w = generate("gpt3-125m", npus=16, dp=2, tp=4, pp=2, seq=256)
    assert npu_classes(w) == [0] * 8 + [1] * 8
    slow = [dataclasses.replace(n, duration_micros=n.duration_micros + 1) for n in w.ranks[3]]
    w.ranks[3] = slow
    assert npu_classes(w) == [0, 0, 0, 1] + [0] * 4 + [2] * 8


def test_shortcut_declines_when_a_group_spans_classes() -> None:
    # NPU 3 computes longer: its tensor-parallel group now spans two classes, so its
    # members would not issue together; the shortcut must leave it to the full run.
    w = generate("gpt3-125m", npus=16, dp=2, tp=4, pp=2, seq=256)
    w.ranks[3] = [dataclasses.replace(n, duration_micros=n.duration_micros + 7) for n in w.ranks[3]]
    coll, p2p, _ = native_timers(parse_topology("ring:16"), NativeConfig())
    assert run_by_classes(w, coll, p2p) is None
    # The full run sees NPU 3's group wait for it.
    full = run_workload(w, coll, p2p)
    assert (
        full.finish_ns[0]
        > run_workload(
            generate("gpt3-125m", npus=16, dp=2, tp=4, pp=2, seq=256), coll, p2p
        ).finish_ns[0]
    )


def test_shortcut_declines_when_group_times_differ_within_a_class() -> None:
    # Every NPU computes, then all-reduces in its pair; the pairs lie 1, 2, 4 and 1 hops
    # apart on ring:8, so one class of NPUs has groups of different times: no shortcut.
    groups = {"1": (0, 1), "2": (2, 4), "3": (3, 7), "4": (5, 6)}
    pg_of = {x: g for g, m in groups.items() for x in m}
    w = workload(
        *[[comp(0, 5), coll(1, AR, 1 << 20, pg_of[npu], [0])] for npu in range(8)],
        groups=groups,
    )
    classes = check_workload(w)
    assert classes == [0] * 8
    coll_t, p2p, _ = native_timers(parse_topology("ring:8"), NativeConfig())
    assert run_by_classes(w, coll_t, p2p, classes=classes) is None
    full = run_workload(w, coll_t, p2p)
    assert full.finish_ns[0] == full.finish_ns[5] < full.finish_ns[2] < full.finish_ns[3]
