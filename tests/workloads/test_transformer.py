"""The transformer-training generator: valid ASTRA-sim workloads, closed-form node counts,
groups, FLOPs, memory, sizes in ASTRA-sim's convention, and a run in issue order."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from workloads.chakra_io import read_workload, write_workload
from workloads.engine import CollCall, run_workload
from workloads.model import CollKind, NodeKind, WNode, Workload, WorkloadError, check_workload
from workloads.transformer import (
    DEFAULT_NPU,
    MODELS,
    GiB,
    ModelSpec,
    NpuSpec,
    forward_flops,
    generate,
)

SMALL = "gpt3-125m"  # 12 layers, hidden 768, 12 heads, seq 2048


def _colls(nodes: list[WNode], kind: CollKind, suffix: str = "") -> list[WNode]:
    return [
        n
        for n in nodes
        if n.kind == NodeKind.COLL and n.comm_type == kind and n.name.endswith(suffix)
    ]


def _stage(w: Workload, npu: int) -> int:
    par = _par(w)
    return int(npu // (par["dp"] * par["tp"]))


def _par(w: Workload) -> dict[str, Any]:
    par = w.metadata["parallelism"]
    assert isinstance(par, dict)
    return par


CONFIGS: list[dict[str, Any]] = [
    dict(npus=1, dp=1, tp=1, pp=1),
    dict(npus=2, dp=2, tp=1, pp=1),
    dict(npus=2, dp=1, tp=2, pp=1),
    dict(npus=3, dp=1, tp=1, pp=3),
    dict(npus=8, dp=2, tp=2, pp=2),
    dict(npus=8, dp=2, tp=2, pp=2, sp=True),
    dict(npus=8, dp=2, tp=2, pp=2, zero=1, microbatches=3),
    dict(npus=12, dp=3, tp=2, pp=2, sp=True, zero=2, microbatches=1),
    dict(npus=16, dp=2, tp=2, pp=4, microbatches=6, microbatch_size=2, seq=512),
]


@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_generated_workloads_are_valid(kw: dict[str, Any]) -> None:
    w = generate(SMALL, **kw)
    check_workload(w, roofline=True)
    assert w.num_npus == kw["npus"]
    for nodes in w.ranks:
        assert [n.id for n in nodes] == list(range(len(nodes)))
        for n in nodes:
            assert all(d < n.id for d in n.deps)  # ids follow the execution order
            if n.kind == NodeKind.COMP:
                assert n.duration_micros >= 1 and n.num_ops and n.tensor_size
            if n.kind == NodeKind.SEND:
                assert n.comm_dst is not None and n.comm_size and n.comm_tag is not None
            if n.kind == NodeKind.RECV:
                assert n.comm_src is not None and n.comm_size and n.comm_tag is not None


def test_vit_with_sequence_parallelism_is_valid() -> None:
    w = generate("vit-base", npus=8, dp=2, tp=2, pp=2, sp=True, zero=1)
    check_workload(w, roofline=True)
    # 197 tokens do not split in two: the all-gather's share is rounded up.
    ag = _colls(w.ranks[0], CollKind.ALL_GATHER, "tp_allgather")
    assert {n.comm_size for n in ag} == {math.ceil(197 * 768 * 2 / 2)}


@pytest.mark.parametrize(
    "kw",
    [
        dict(dp=2, tp=2, pp=3, microbatches=5),
        dict(dp=2, tp=2, pp=3, microbatches=2, sp=True, zero=1),
        dict(dp=1, tp=1, pp=2, microbatches=3),
        dict(dp=3, tp=1, pp=1, zero=2),
    ],
)
def test_node_counts_per_npu_follow_the_closed_form(kw: dict[str, Any]) -> None:
    dp, tp, pp = kw["dp"], kw["tp"], kw["pp"]
    w = generate(SMALL, npus=dp * tp * pp, **kw)
    m = kw.get("microbatches", pp)
    sp, zero = bool(kw.get("sp", False)), kw.get("zero", 0)
    L = 12 // pp
    for npu, nodes in enumerate(w.ranks):
        p = _stage(w, npu)
        first, last = p == 0, p == pp - 1
        kinds = Counter(n.kind for n in nodes)
        assert kinds[NodeKind.COMP] == 4 * L * m + 2 * m * first + 2 * m * last + 1
        assert kinds[NodeKind.SEND] == kinds[NodeKind.RECV] == m * (not last) + m * (not first)
        tp_n = 4 * L * m if tp > 1 else 0
        if sp:
            assert len(_colls(nodes, CollKind.REDUCE_SCATTER, "tp_reducescatter")) == tp_n
            assert len(_colls(nodes, CollKind.ALL_GATHER, "tp_allgather")) == tp_n
            assert not _colls(nodes, CollKind.ALL_REDUCE, "tp_allreduce")
        else:
            assert len(_colls(nodes, CollKind.ALL_REDUCE, "tp_allreduce")) == tp_n
            assert not _colls(nodes, CollKind.ALL_GATHER, "tp_allgather")
        buckets = (L + first + last) if dp > 1 else 0
        if zero:
            assert len(_colls(nodes, CollKind.REDUCE_SCATTER, "dp_reducescatter")) == buckets
            assert len(_colls(nodes, CollKind.ALL_GATHER, "dp_allgather")) == buckets
            assert not _colls(nodes, CollKind.ALL_REDUCE, "dp_allreduce")
        else:
            assert len(_colls(nodes, CollKind.ALL_REDUCE, "dp_allreduce")) == buckets
        n_coll = 2 * tp_n if sp else tp_n
        n_coll += buckets * (2 if zero else 1)
        assert kinds[NodeKind.COLL] == n_coll
        assert len(nodes) == sum(kinds.values())


def test_groups_tp_consecutive_dp_strided() -> None:
    dp, tp, pp = 3, 2, 2
    w = generate(SMALL, npus=12, dp=dp, tp=tp, pp=pp)
    meta = w.metadata["groups"]
    assert isinstance(meta, dict)
    tp_names, dp_names = meta["tp"], meta["dp"]
    assert sorted(tp_names + dp_names, key=int) == list(w.groups)
    assert [int(g) for g in w.groups] == list(range(1, len(w.groups) + 1))
    assert [w.groups[g] for g in tp_names] == [(2 * k, 2 * k + 1) for k in range(6)]
    assert [w.groups[g] for g in dp_names] == [(0, 2, 4), (1, 3, 5), (6, 8, 10), (7, 9, 11)]
    for npu, nodes in enumerate(w.ranks):
        for n in nodes:
            if n.kind == NodeKind.COLL:
                assert npu in w.groups[n.pg_name]
                assert n.pg_name in (tp_names if ".tp_" in n.name else dp_names)
            if n.kind in (NodeKind.SEND, NodeKind.RECV):
                peer = n.comm_dst if n.kind == NodeKind.SEND else n.comm_src
                assert peer is not None and abs(peer - npu) == dp * tp  # same tp/dp rank


def test_groups_of_one_npu_are_left_out() -> None:
    w = generate(SMALL, npus=2, dp=1, tp=1, pp=2)
    assert w.groups == {}
    assert not any(n.kind == NodeKind.COLL for nodes in w.ranks for n in nodes)
    assert w.metadata["groups"] == {"tp": [], "dp": []}


def test_parameter_counts_match_the_published_sizes() -> None:
    assert MODELS["gpt3-13b"].params == pytest.approx(13e9, rel=0.03)
    assert MODELS["gpt3-175b"].params == pytest.approx(175e9, rel=0.03)
    assert MODELS["gpt3-125m"].params == pytest.approx(125e6, rel=0.03)
    assert MODELS["vit-base"].params == pytest.approx(86e6, rel=0.03)  # ViT paper, Table 1
    assert MODELS["vit-huge"].params == pytest.approx(632e6, rel=0.03)
    h = 12288
    assert MODELS["gpt3-175b"].layer_params == 12 * h * h + 13 * h  # Megatron-LM's count


def test_forward_flops_per_token_are_twice_the_parameters() -> None:
    for name in ("gpt3-13b", "gpt3-175b"):
        spec = MODELS[name]
        per_token = forward_flops(spec) / spec.seq
        # 2 FLOPs per parameter per token, plus attention over the context (4*l*s*h).
        attention = 4 * spec.layers * spec.seq * spec.hidden
        assert per_token - attention == pytest.approx(2 * spec.params, rel=0.03)
        assert per_token == pytest.approx(2 * spec.params, rel=0.07)


def test_generated_compute_adds_up_to_the_model_flops() -> None:
    spec, b, s = MODELS[SMALL], 2, 256
    w = generate(spec, npus=8, dp=1, tp=4, pp=2, microbatch_size=b, seq=s, microbatches=2)
    fwd = bwd = 0
    for npu in range(8):
        for n in w.ranks[npu]:
            if n.kind == NodeKind.COMP and n.name.startswith("mb0."):
                assert n.num_ops is not None
                if ".embed." in n.name and npu % 4:
                    continue  # the embedding is replicated over the tensor ranks
                if n.name.endswith(".fwd"):
                    fwd += n.num_ops
                else:
                    bwd += n.num_ops
    # Rounding up per tensor rank adds at most one FLOP per node.
    assert fwd == pytest.approx(forward_flops(spec, batch=b, seq=s), abs=200)
    assert bwd == pytest.approx(2 * fwd, abs=400)
    n = next(n for n in w.ranks[0] if n.kind == NodeKind.COMP)
    assert n.num_ops is not None and n.tensor_size is not None
    t = max(n.num_ops / DEFAULT_NPU.peak_flops, n.tensor_size / DEFAULT_NPU.mem_bw)
    assert n.duration_micros == max(1, math.ceil(t * 1e6 - 1e-9))


def test_memory_footprint_and_capacity() -> None:
    spec = MODELS[SMALL]
    w = generate(spec, npus=1, dp=1, tp=1, pp=1)
    mem = w.metadata["memory"]
    assert isinstance(mem, dict)
    (st,) = mem["stages"]
    s, h, a = spec.seq, spec.hidden, spec.heads
    assert st["weights"] == st["gradients"] == 2 * spec.params
    assert st["optimizer"] == 12 * spec.params
    per_layer = s * h * (34 + 5 * a * s / h)  # Korthikanti et al., b = 1, tp = 1
    logits = 4 * s * spec.vocab
    assert st["activations"] == pytest.approx(spec.layers * per_layer + logits, abs=spec.layers)
    assert (
        mem["peak"]
        == st["total"]
        == sum(st[k] for k in ("weights", "gradients", "optimizer", "activations"))
    )
    # ZeRO shards the optimizer state (1) and the gradients (2) over dp.
    z = generate(spec, npus=4, dp=4, tp=1, pp=1, zero=2).metadata["memory"]
    assert isinstance(z, dict)
    assert z["stages"][0]["optimizer"] == 3 * spec.params
    assert z["stages"][0]["gradients"] == spec.params // 2
    # 1F1B: stage p holds pp - p microbatches.
    p = generate(spec, npus=4, dp=1, tp=1, pp=4, microbatches=8).metadata["memory"]
    assert isinstance(p, dict)
    assert [x["microbatches_in_flight"] for x in p["stages"]] == [4, 3, 2, 1]


def test_memory_over_capacity_raises() -> None:
    with pytest.raises(WorkloadError, match=r"needs \d+\.\d\d GiB per NPU.*the NPU has 80\.00 GiB"):
        generate("gpt3-175b", npus=8, dp=1, tp=8, pp=1)
    tiny = NpuSpec("tiny", peak_flops=1e12, mem_bw=1e11, memory=1 * GiB)
    with pytest.raises(WorkloadError, match=r"the NPU has 1\.00 GiB"):
        generate(SMALL, npus=1, dp=1, tp=1, pp=1, hw=tiny)
    w = generate(SMALL, npus=1, dp=1, tp=1, pp=1, hw=tiny, check_memory=False)
    mem = w.metadata["memory"]
    assert isinstance(mem, dict) and mem["peak"] > GiB


def test_bad_configurations_raise() -> None:
    with pytest.raises(WorkloadError, match=r"dp\*tp\*pp = 2\*2\*2 = 8 NPUs, but npus is 16"):
        generate(SMALL, npus=16, dp=2, tp=2, pp=2)
    with pytest.raises(WorkloadError, match="12 layers, which 5 pipeline stages"):
        generate(SMALL, npus=5, dp=1, tp=1, pp=5)
    with pytest.raises(WorkloadError, match="12 attention heads"):
        generate(SMALL, npus=8, dp=1, tp=8, pp=1)
    with pytest.raises(WorkloadError, match="ZeRO-3"):
        generate(SMALL, npus=2, dp=2, tp=1, pp=1, zero=3)
    with pytest.raises(WorkloadError, match="microbatches must be a positive integer"):
        generate(SMALL, npus=1, dp=1, tp=1, pp=1, microbatches=0)
    with pytest.raises(WorkloadError, match="hidden must be a positive integer"):
        ModelSpec("x", layers=2, hidden=0, heads=1, seq=8, vocab=10)


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(WorkloadError) as e:
        generate("gpt4", npus=1, dp=1, tp=1, pp=1)
    assert "'gpt4'" in e.value.message
    for name in MODELS:
        assert name in e.value.message


def test_sizes_follow_astra_sim_conventions() -> None:
    spec = MODELS[SMALL]
    b, s, e, tp, dp = 2, 256, 2, 4, 2
    w = generate(spec, npus=16, dp=dp, tp=tp, pp=2, sp=True, zero=1, microbatch_size=b, seq=s)
    full = b * s * spec.hidden * e
    for npu, nodes in enumerate(w.ranks):
        assert {
            n.comm_size for n in _colls(nodes, CollKind.REDUCE_SCATTER, "tp_reducescatter")
        } == {full}
        # all-gather: the per-rank input, the 1/tp share
        assert {n.comm_size for n in _colls(nodes, CollKind.ALL_GATHER, "tp_allgather")} == {
            full // tp
        }
        rs = {
            n.name.split(".")[0]: n.comm_size
            for n in _colls(nodes, CollKind.REDUCE_SCATTER, "dp_reducescatter")
        }
        ag = {
            n.name.split(".")[0]: n.comm_size
            for n in _colls(nodes, CollKind.ALL_GATHER, "dp_allgather")
        }
        assert rs.keys() == ag.keys() and rs
        for k, size in rs.items():
            assert size is not None and ag[k] == math.ceil(size / dp)
        layer = f"L{6 * _stage(w, npu)}"
        assert rs[layer] == 2 * (
            (4 * 768**2 + 2 * 768 * 3072 + 3 * 768 + 3072) // tp + 6 * 768
        )  # the layer's parameters per tensor rank, bf16
        for n in nodes:
            if n.kind in (NodeKind.SEND, NodeKind.RECV):
                assert n.comm_size == full // tp  # sequence parallel: the shard goes on


def test_p2p_messages_pair_up_with_unique_tags() -> None:
    w = generate(SMALL, npus=8, dp=2, tp=1, pp=4, microbatches=5)
    seen: Counter[tuple[int, int, int]] = Counter()
    for npu, nodes in enumerate(w.ranks):
        for n in nodes:
            if n.kind == NodeKind.SEND:
                assert n.comm_src == npu and n.comm_dst is not None and n.comm_tag is not None
                seen[(npu, n.comm_dst, n.comm_tag)] += 1
                mb = int(n.name.split(".")[0][2:])
                fwd = n.name.endswith("send_act")
                assert n.comm_tag == 2 * mb + (0 if fwd else 1)
                assert n.comm_dst - npu == (2 if fwd else -2)
    assert set(seen.values()) == {1}
    assert len(seen) == 2 * 3 * 5 * 2  # 3 stage boundaries, 5 microbatches, both ways, dp 2


def test_one_f_one_b_order() -> None:
    w = generate(SMALL, npus=4, dp=1, tp=1, pp=4, microbatches=6)

    def passes(npu: int) -> list[str]:
        out: list[str] = []
        for n in w.ranks[npu]:
            m = re.match(r"mb(\d+)\.L\d+\.mlp\.(fwd|bwd)$", n.name)
            if m:
                tag = ("F" if m[2] == "fwd" else "B") + m[1]
                if not out or out[-1] != tag:
                    out.append(tag)
        return out

    assert passes(0) == ["F0", "F1", "F2", "F3", "B0", "F4", "B1", "F5", "B2", "B3", "B4", "B5"]
    assert passes(2) == ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "F4", "B3", "F5", "B4", "B5"]
    assert passes(3) == ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3", "F4", "B4", "F5", "B5"]
    # The default: one microbatch per stage.
    assert _par(generate(SMALL, npus=2, dp=1, tp=1, pp=2))["microbatches"] == 2
    assert _par(generate(SMALL, npus=1, dp=1, tp=1, pp=1))["microbatches"] == 1


def test_dependencies_follow_the_data() -> None:
    w = generate(SMALL, npus=4, dp=2, tp=2, pp=1, microbatches=2)
    nodes = w.ranks[0]
    by_id = {n.id: n for n in nodes}
    for n in nodes:
        if n.name.endswith("dp_allreduce") and n.name.startswith("L"):
            layer = n.name.split(".")[0]
            assert {by_id[d].name for d in n.data_deps} == {
                f"mb1.{layer}.mlp.bwd",
                f"mb1.{layer}.attn.bwd",
            }
        if n.name == "mb0.L3.mlp.fwd":
            (dep,) = n.data_deps
            assert by_id[dep].name == "mb0.L3.attn.fwd.tp_allreduce"
    opt = next(n for n in nodes if n.name == "optimizer.step")
    assert set(opt.data_deps) == {n.id for n in nodes if n.name.endswith("dp_allreduce")}


def test_round_trip_through_et_files(tmp_path: Path) -> None:
    w = generate(SMALL, npus=8, dp=2, tp=2, pp=2, sp=True, zero=1, microbatches=2, seq=128)
    write_workload(w, tmp_path / "wl")
    r = read_workload(tmp_path / "wl")
    assert r.ranks == w.ranks
    assert r.groups == w.groups
    assert r.metadata == w.metadata
    check_workload(r, roofline=True)


def test_run_issues_every_groups_collectives_in_the_same_order() -> None:
    """Uneven message and collective times make NPUs of a group ready at different times;
    the control dependencies must still make every member issue the same sequence."""
    w = generate(SMALL, npus=16, dp=2, tp=2, pp=4, sp=True, zero=1, microbatches=6, seq=256)

    def coll_ns(c: CollCall) -> float:
        return 1000 + (sum(c.members) * 7919) % 40000 + c.comm_size / 1e4

    run = run_workload(w, coll_ns, lambda src, dst, size: 100 + (src * 104729) % 90000)
    seqs: dict[str, dict[int, list[str]]] = defaultdict(dict)
    for npu, order in enumerate(run.issue_order):
        assert len(order) == len(w.ranks[npu])  # everything ran
        for i in order:
            n = w.ranks[npu][i]
            if n.kind == NodeKind.COLL:
                seqs[n.pg_name].setdefault(npu, []).append(n.name)
    assert seqs.keys() == w.groups.keys()
    for per_npu in seqs.values():
        first = next(iter(per_npu.values()))
        assert all(v == first for v in per_npu.values())
