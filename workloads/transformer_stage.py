"""A pipeline stage's node list (`stage_template`): the compute, collective and
point-to-point nodes of one NPU of the stage in 1F1B order, the same on every NPU of the
stage but for the groups and peers its template roles mark."""

from __future__ import annotations

import math

from workloads.model import CollKind, NodeKind, WNode
from workloads.transformer_plan import Cost, Plan, cdiv
from workloads.transformer_specs import NpuSpec


def _micros(c: Cost, hw: NpuSpec) -> int:
    """The roofline time of ``c`` on ``hw`` in whole microseconds, at least 1."""
    t = max(c.flops / hw.peak_flops, c.nbytes / hw.mem_bw) * 1e6
    return max(1, math.ceil(t - 1e-9))


# Template roles: how a stage's node is specialised for each NPU: kept as it is (shared), given
# its tensor- or data-parallel group, or given its pipeline peers (sends and receives, numbered
# last, so ``role >= ROLE_SEND_NEXT`` marks them).
ROLE_SHARED, ROLE_TP, ROLE_DP = 0, 1, 2
ROLE_SEND_NEXT, ROLE_SEND_PREV, ROLE_RECV_PREV, ROLE_RECV_NEXT = 3, 4, 5, 6


class StageBuilder:
    """The node list of one NPU of a stage, with placeholder groups and peers."""

    def __init__(self, hw: NpuSpec) -> None:
        self.hw = hw
        self.nodes: list[WNode] = []
        self.roles: list[int] = []
        self.last_comp: int | None = None
        self.last_coll: dict[int, int] = {}

    def _add(self, node: WNode, role: int) -> int:
        self.nodes.append(node)
        self.roles.append(role)
        return node.id

    def comp(self, name: str, cost: Cost, deps: tuple[int, ...]) -> int:
        deps = tuple(dict.fromkeys(deps))
        prev = self.last_comp
        ctrl = (prev,) if prev is not None and prev not in deps else ()
        nid = len(self.nodes)
        self.last_comp = nid
        return self._add(
            WNode(
                id=nid,
                name=name,
                kind=NodeKind.COMP,
                data_deps=deps,
                ctrl_deps=ctrl,
                duration_micros=_micros(cost, self.hw),
                num_ops=cost.flops,
                tensor_size=cost.nbytes,
            ),
            ROLE_SHARED,
        )

    def coll(self, role: int, name: str, kind: CollKind, size: int, deps: tuple[int, ...]) -> int:
        prev = self.last_coll.get(role)
        ctrl = (prev,) if prev is not None and prev not in deps else ()
        nid = len(self.nodes)
        self.last_coll[role] = nid
        return self._add(
            WNode(
                id=nid,
                name=name,
                kind=NodeKind.COLL,
                data_deps=deps,
                ctrl_deps=ctrl,
                comm_type=int(kind),
                comm_size=size,
                pg_name="",
            ),
            role,
        )

    def p2p(self, role: int, name: str, size: int, tag: int, deps: tuple[int, ...]) -> int:
        kind = NodeKind.SEND if role in (ROLE_SEND_NEXT, ROLE_SEND_PREV) else NodeKind.RECV
        nid = len(self.nodes)
        return self._add(
            WNode(id=nid, name=name, kind=kind, data_deps=deps, comm_size=size, comm_tag=tag),
            role,
        )


def stage_template(plan: Plan, p: int, hw: NpuSpec) -> StageBuilder:
    """Stage p's node list, the same on every NPU of the stage but for groups and peers."""
    st = StageBuilder(hw)
    first, last = p == 0, p == plan.pp - 1
    lo = p * plan.layers_per_stage
    layers = range(lo, lo + plan.layers_per_stage)
    tp, dp, m = plan.tp, plan.dp, plan.m
    full = plan.act_bytes()
    share = cdiv(full, tp)
    attn, mlp = plan.attention_cost(), plan.mlp_cost()
    attn_b, mlp_b = attn.times(2), mlp.times(2)
    emb, head = plan.embedding_cost(), plan.head_cost()
    p2p = plan.p2p_bytes()
    reduce_kind = CollKind.REDUCE_SCATTER if plan.tp_sp else CollKind.ALL_REDUCE
    reduce_tag = "tp_reducescatter" if plan.tp_sp else "tp_allreduce"
    saved: dict[int, int] = {}  # microbatch -> its last forward compute
    buckets: list[tuple[str, int, int]] = []  # (name, bytes, reduction node)
    dp_kind = CollKind.REDUCE_SCATTER if plan.zero >= 1 else CollKind.ALL_REDUCE
    dp_tag = "dp_reducescatter" if plan.zero >= 1 else "dp_allreduce"

    def tp_reduce(name: str, x: int) -> int:
        if tp == 1:
            return x
        return st.coll(ROLE_TP, f"{name}.{reduce_tag}", reduce_kind, full, (x,))

    def tp_gather(name: str, x: int) -> int:
        if not plan.tp_sp:
            return x
        return st.coll(ROLE_TP, f"{name}.tp_allgather", CollKind.ALL_GATHER, share, (x,))

    def bucket(name: str, params: int, deps: tuple[int, ...]) -> None:
        if dp == 1:
            return
        nbytes = params * plan.e
        nid = st.coll(ROLE_DP, f"{name}.{dp_tag}", dp_kind, nbytes, deps)
        buckets.append((name, nbytes, nid))

    def forward(i: int) -> None:
        mb = f"mb{i}"
        if first:
            x = st.comp(f"{mb}.embed.fwd", emb, ())
        else:
            x = st.p2p(ROLE_RECV_PREV, f"{mb}.recv_act", p2p, 2 * i, ())
        for layer in layers:
            at = f"{mb}.L{layer}"
            x = tp_gather(f"{at}.attn.fwd", x)
            a = st.comp(f"{at}.attn.fwd", attn, (x,))
            x = tp_reduce(f"{at}.attn.fwd", a)
            x = tp_gather(f"{at}.mlp.fwd", x)
            c = st.comp(f"{at}.mlp.fwd", mlp, (x,))
            x = tp_reduce(f"{at}.mlp.fwd", c)
        if last:
            x = st.comp(f"{mb}.head.fwd", head, (x,))
        else:
            st.p2p(ROLE_SEND_NEXT, f"{mb}.send_act", p2p, 2 * i, (x,))
        assert st.last_comp is not None
        saved[i] = st.last_comp

    def backward(i: int) -> None:
        mb = f"mb{i}"
        final = i == m - 1
        if last:
            x = st.comp(f"{mb}.head.bwd", head.times(2), (saved[i],))
            if final:
                bucket("head", plan.head_params(), (x,))
        else:
            x = st.p2p(ROLE_RECV_NEXT, f"{mb}.recv_grad", p2p, 2 * i + 1, ())
        bottom: tuple[int, ...] = ()
        for layer in reversed(layers):
            at = f"{mb}.L{layer}"
            x = tp_gather(f"{at}.mlp.bwd", x)
            c = st.comp(f"{at}.mlp.bwd", mlp_b, (x, saved[i]) if layer == layers[-1] else (x,))
            x = tp_reduce(f"{at}.mlp.bwd", c)
            x = tp_gather(f"{at}.attn.bwd", x)
            a = st.comp(f"{at}.attn.bwd", attn_b, (x,))
            x = tp_reduce(f"{at}.attn.bwd", a)
            if final:
                if layer == lo:
                    bottom = (c, a)  # after the stage's output has gone on
                else:
                    bucket(f"L{layer}", plan.layer_params(), (c, a))
        if first:
            e = st.comp(f"{mb}.embed.bwd", emb.times(2), (x,))
        else:
            st.p2p(ROLE_SEND_PREV, f"{mb}.send_grad", p2p, 2 * i + 1, (x,))
        if final:
            bucket(f"L{lo}", plan.layer_params(), bottom)
            if first:
                bucket("embed", plan.embedding_params(), (e,))

    for is_fwd, i in plan.schedule(p):
        if is_fwd:
            forward(i)
        else:
            backward(i)
    if plan.optimizer:
        deps = tuple(nid for _, _, nid in buckets)  # none without data parallelism
        opt = st.comp("optimizer.step", plan.optimizer_cost(p), deps)
        if plan.zero >= 1:
            for name, nbytes, _ in buckets:
                st.coll(
                    ROLE_DP,
                    f"{name}.dp_allgather",
                    CollKind.ALL_GATHER,
                    cdiv(nbytes, dp),
                    (opt,),
                )
    return st
