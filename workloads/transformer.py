"""Transformer-training workloads: one iteration of a GPT- or ViT-style model under data,
tensor, pipeline and sequence parallelism and ZeRO weight-update sharding, as per-NPU Chakra
workload ETs (a `workloads.model.Workload`).

``generate("gpt3-13b", npus=1024, dp=32, tp=8, pp=4)`` builds the nodes every NPU runs; the
result passes `workloads.model.check_workload` and `workloads.chakra_io.write_workload` writes
it. This module checks the configuration and specialises each stage's nodes for every NPU; the
models and NPUs are in `workloads.transformer_specs` (re-exported here), the per-NPU costs,
memory and schedule in `workloads.transformer_plan`, a stage's node list in
`workloads.transformer_stage`. This docstring states the rules for all four.

**Models** (`MODELS`). The GPT-3 family as published in Brown et al., "Language Models are
Few-Shot Learners" (NeurIPS 2020), Table 2.1: layers / d_model / heads, context 2048, with
GPT-2's BPE vocabulary of 50,257 tokens; 13B is kept at the published d_model 5140 (its 40
heads of 128 make 5120: the tables disagree, the generator takes d_model). ViT-Base/Large/Huge
as in Dosovitskiy et al., "An Image is Worth 16x16 Words" (ICLR 2021), Table 1: 224x224 images
in 16x16 patches give 196 patch tokens plus the class token, so seq 197; the head
classifies into ``vocab`` = 1000 (ImageNet-1k) classes from the class token only.

**Parameters** (``ModelSpec.params``): per layer ``4h^2 + 2h*ffn + ffn + 9h`` (QKV and output
projection with biases, the two MLP matrices with biases, two layer norms), = 12h^2 + 13h
for ffn = 4h; the token embedding ``vocab*h`` (tied with the output layer) plus learned
positions ``seq*h`` and the final layer norm ``2h``. ViT: a patch projection ``patch*h + h``,
the class token ``h``, positions ``seq*h``, the final layer norm and an untied head
``h*vocab + vocab``.

**Compute** (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC 2021, its FLOP formula): a layer's forward pass over ``b`` sequences of
``s`` tokens is ``8bsh^2`` (QKV and output projection) ``+ 4bs^2h`` (attention scores and
their product with V) ``+ 4bsh*ffn`` (MLP) FLOPs, 24bsh^2 + 4bs^2h for ffn = 4h; the logit
layer ``2bsh*vocab``; a backward pass is twice its forward pass (no activation
recomputation). Under tensor parallelism every NPU of the group does 1/tp of the layers and
of the logits (vocabulary-parallel); the embedding and ViT's head are replicated. Each layer
and direction is two COMP nodes (attention, MLP); the first stage adds the embedding, the last
the head (logits and loss). A node's time is the roofline ``max(FLOPs / peak, bytes / memory
bandwidth)`` of `NpuSpec`, rounded up to whole microseconds (at least 1) into
``duration_micros``; ``num_ops`` (FLOPs) and ``tensor_size`` (the bytes moved) are set too, so
ASTRA-sim's roofline mode (``roofline-enabled``) computes the same time. Bytes moved, our
estimate (``e`` bytes per element, per tensor-parallel rank): attention reads its weights
``4h^2/tp`` and the layer input ``bsh``, writes and reads Q, K, V and the context
``8bsh/tp``, writes and reads the scores and probabilities ``4*heads*b*s^2/tp`` (no fused or
flash attention), writes its output ``bsh``; the MLP reads its weights ``2h*ffn/tp``, its input
and output ``2bsh``, and the intermediate activations four times ``4bs*ffn/tp``; all times ``e``.
A backward pass moves twice its forward bytes (weights and weight gradients, activations and
their gradients).

**NPU numbering.** Tensor parallelism innermost, then data parallelism, pipeline stages
outermost: NPU ``n = (stage*dp + dp_rank)*tp + tp_rank``. A tensor-parallel group is ``tp``
consecutive NPUs; a data-parallel group is ``dp`` NPUs ``tp`` apart within one stage;
pipeline neighbours are ``dp*tp`` apart.

**Communicator groups** (``Workload.groups``, ASTRA-sim's ``--comm-group-configuration``): one
per tensor-parallel group, then one per data-parallel group, named "1", "2", ... (ASTRA-sim
wants positive integer ids): TP group of (stage, dp_rank) is ``1 + stage*dp + dp_rank``, DP
group of (stage, tp_rank) is ``1 + (tp>1)*pp*dp + stage*tp + tp_rank``. Groups of one NPU are
left out with their collectives. ``metadata["groups"]`` maps "tp" and "dp" to their names.

**Collectives** (``comm_size`` in ASTRA-sim's convention: the whole buffer for all-reduce and
reduce-scatter, the per-rank input for all-gather; sizes that do not divide are rounded up):

- tensor parallel (Megatron-LM, Shoeybi et al. 2019): per layer and microbatch an all-reduce
  of the ``b*s*h*e`` activations after the attention and after the MLP in the forward pass,
  and of their gradients before each in the backward pass (4 per layer). With ``sp=True``
  (sequence parallelism, Korthikanti et al. 2022) each becomes a reduce-scatter of that
  buffer and an all-gather of its ``1/tp`` share: forward all-gather, attention,
  reduce-scatter, all-gather, MLP, reduce-scatter; backward the same mirrored.
- data parallel: after the last microbatch's backward pass of a layer, an all-reduce of that
  layer's gradients (``params/tp * e`` bytes; one bucket per layer, and one for the embedding
  on the first stage and the head on the last), issued as the layer finishes. ``zero >= 1``
  (ZeRO, Rajbhandari et al. 2020): a reduce-scatter of each bucket instead and, after the
  optimizer step, an all-gather of the updated ``1/dp`` share of each bucket.
- pipeline: the activations (``b*s*h*e``, ``/tp`` with sequence parallelism) go to the same
  tensor rank of the next stage after each microbatch's forward pass, their gradients back
  after its backward pass: SEND/RECV pairs, ``comm_tag = 2*microbatch`` forward and
  ``2*microbatch + 1`` backward (unique per sender and receiver).

**Schedule** (1F1B, PipeDream-Flush, Megatron-LM's non-interleaved schedule): stage ``p``
runs ``min(pp-p-1, m)`` warm-up forward passes, then alternates one forward and one backward,
then drains the remaining backward passes; ``m`` = ``microbatches``, by default ``pp`` (1 without
pipelining). Node ids ascend in that execution order. ``data_deps`` are the data flow (a
compute on the collective or receive that delivers its input; a collective or send on the
compute that produces its buffer; a gradient bucket on its layer's backward computes; the
optimizer step on every bucket); ``ctrl_deps`` keep one NPU's computes in schedule order and
the collectives of each group in id order, so every member issues them in the same order
whatever the timing. Receives depend on nothing (they are posted early; ASTRA-sim does not
count them against the communication slot). The optimizer step (Adam: 12 FLOPs and 28 bytes
per local parameter, our estimate) ends the iteration unless ``optimizer=False``.

**Memory** per NPU and stage (``metadata["memory"]``), mixed-precision Adam as in the ZeRO
paper: weights ``e`` and gradients ``e`` bytes per local parameter (gradients ``/dp`` with
``zero >= 2``), optimizer state 12 bytes (fp32 master weights, momentum, variance; ``/dp``
with ``zero >= 1``); activations without recomputation (Korthikanti et al., "Reducing
Activation Recomputation in Large Transformer Models", 2022) per layer and
microbatch ``s*b*h*(10 + 24/tp + 5*heads*s/(h*tp))`` bytes, ``s*b*h*(34 + 5*heads*s/h)/tp``
with sequence parallelism (scaled by ``e/2``), held for ``min(pp - stage, m)`` microbatches
by 1F1B, plus fp32 logits ``4*b*s*vocab/tp`` on the last stage. `generate` refuses a
configuration whose largest footprint exceeds the NPU's memory unless ``check_memory=False``.

**Not modelled**: activation recomputation, ZeRO-3 (parameter sharding), interleaved or
other pipeline schedules, the vocabulary-parallel embedding's and cross-entropy's own
collectives, the all-reduce of the tied embedding between first and last stage, gradient
clipping, overlap of compute kernels with each other, data loading, and any efficiency
below the roofline.
"""

from __future__ import annotations

from dataclasses import asdict, replace

from workloads.model import NodeKind, WNode, Workload, WorkloadError
from workloads.transformer_plan import Plan
from workloads.transformer_specs import (
    DEFAULT_NPU,
    MODELS,
    GiB,
    ModelSpec,
    NpuSpec,
    attention_flops,
    embedding_flops,
    forward_flops,
    head_flops,
    mlp_flops,
    model_spec,
)
from workloads.transformer_stage import (
    ROLE_DP,
    ROLE_RECV_PREV,
    ROLE_SEND_NEXT,
    ROLE_SEND_PREV,
    ROLE_TP,
    stage_template,
)

__all__ = [
    "DEFAULT_NPU",
    "MODELS",
    "GiB",
    "ModelSpec",
    "NpuSpec",
    "attention_flops",
    "embedding_flops",
    "forward_flops",
    "generate",
    "head_flops",
    "mlp_flops",
    "model_spec",
    "peak_memory",
]


def _node(n: WNode, *, pg_name: str = "", src: int | None = None, dst: int | None = None) -> WNode:
    """A copy of template node ``n`` with its group or peers filled in."""
    return WNode(
        id=n.id,
        name=n.name,
        kind=n.kind,
        data_deps=n.data_deps,
        ctrl_deps=n.ctrl_deps,
        duration_micros=n.duration_micros,
        is_cpu_op=n.is_cpu_op,
        num_ops=n.num_ops,
        tensor_size=n.tensor_size,
        comm_type=n.comm_type,
        comm_size=n.comm_size,
        pg_name=pg_name,
        involved_dim=n.involved_dim,
        comm_src=src,
        comm_dst=dst,
        comm_tag=n.comm_tag,
        comm_priority=n.comm_priority,
    )


def _plan(
    model: str | ModelSpec,
    *,
    npus: int,
    dp: int,
    tp: int,
    pp: int,
    sp: bool,
    microbatches: int | None,
    microbatch_size: int,
    seq: int | None,
    zero: int,
    optimizer: bool,
) -> Plan:
    """The checked `Plan` of `generate`'s arguments (WorkloadError for one that does not fit)."""
    spec = model_spec(model)
    if seq is not None and seq != spec.seq:
        if not isinstance(seq, int) or isinstance(seq, bool) or seq <= 0:
            raise WorkloadError(f"seq must be a positive integer, not {seq!r}")
        spec = replace(spec, seq=seq)
    for name, v in (("npus", npus), ("dp", dp), ("tp", tp), ("pp", pp)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise WorkloadError(f"{name} must be a positive integer, not {v!r}")
    if dp * tp * pp != npus:
        raise WorkloadError(f"dp*tp*pp = {dp}*{tp}*{pp} = {dp * tp * pp} NPUs, but npus is {npus}")
    if spec.layers % pp:
        raise WorkloadError(
            f"{spec.name} has {spec.layers} layers, which {pp} pipeline stages do not divide"
        )
    if spec.heads % tp:
        raise WorkloadError(
            f"{spec.name} has {spec.heads} attention heads, which tensor parallelism {tp} "
            "does not divide"
        )
    m = pp if microbatches is None else microbatches
    for name, v in (("microbatches", m), ("microbatch_size", microbatch_size)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise WorkloadError(f"{name} must be a positive integer, not {v!r}")
    if zero not in (0, 1, 2):
        raise WorkloadError(
            f"zero must be 0, 1 or 2, not {zero!r} (ZeRO-3 parameter sharding is not modelled)"
        )
    return Plan(spec, dp, tp, pp, sp, zero, m, microbatch_size, spec.seq, optimizer)


def peak_memory(
    model: str | ModelSpec,
    *,
    npus: int,
    dp: int,
    tp: int,
    pp: int,
    sp: bool = False,
    microbatches: int | None = None,
    microbatch_size: int = 1,
    seq: int | None = None,
    zero: int = 0,
    optimizer: bool = True,
) -> dict[str, int]:
    """The largest per-NPU memory footprint over the pipeline stages of the configuration
    `generate` would build from the same arguments (``total``, ``stage``, ``weights``,
    ``gradients``, ``optimizer``, ``activations``, in bytes), without building its nodes.
    Raises WorkloadError as `generate` does for a configuration that does not fit."""
    plan = _plan(
        model,
        npus=npus,
        dp=dp,
        tp=tp,
        pp=pp,
        sp=sp,
        microbatches=microbatches,
        microbatch_size=microbatch_size,
        seq=seq,
        zero=zero,
        optimizer=optimizer,
    )
    return max((plan.memory(p) for p in range(pp)), key=lambda x: x["total"])


def generate(
    model: str | ModelSpec,
    *,
    npus: int,
    dp: int,
    tp: int,
    pp: int,
    sp: bool = False,
    microbatches: int | None = None,
    microbatch_size: int = 1,
    seq: int | None = None,
    zero: int = 0,
    hw: NpuSpec = DEFAULT_NPU,
    optimizer: bool = True,
    check_memory: bool = True,
) -> Workload:
    """One training iteration of ``model`` (a `MODELS` name or a `ModelSpec`) on ``npus`` =
    ``dp*tp*pp`` NPUs: ``microbatches`` (default ``pp``) of ``microbatch_size`` sequences of
    ``seq`` tokens (default the model's) per data-parallel replica, 1F1B pipelining, Megatron
    tensor parallelism (``sp``: with sequence parallelism), ZeRO stage ``zero`` (0, 1 or 2)
    over the data-parallel groups, compute timed on ``hw``. ``optimizer``: end with the
    optimizer step. Raises WorkloadError for an unknown model, a parallelism that does not
    fit (npus, layers per stage, heads per tensor rank) or, unless ``check_memory`` is
    False, a footprint over the NPU's memory. See the module docstring for what is modelled."""
    plan = _plan(
        model,
        npus=npus,
        dp=dp,
        tp=tp,
        pp=pp,
        sp=sp,
        microbatches=microbatches,
        microbatch_size=microbatch_size,
        seq=seq,
        zero=zero,
        optimizer=optimizer,
    )
    spec, m = plan.spec, plan.m
    memory = [plan.memory(p) for p in range(pp)]
    worst = max(memory, key=lambda x: x["total"])
    if check_memory and worst["total"] > hw.memory:
        raise WorkloadError(
            f"{spec.name} with dp={dp} tp={tp} pp={pp}{' sp' if sp else ''} zero={zero}, "
            f"{m} microbatches of {microbatch_size}: needs {worst['total'] / GiB:.2f} GiB per "
            f"NPU on stage {worst['stage']} (weights {worst['weights'] / GiB:.2f}, gradients "
            f"{worst['gradients'] / GiB:.2f}, optimizer {worst['optimizer'] / GiB:.2f}, "
            f"activations {worst['activations'] / GiB:.2f} GiB), the NPU has "
            f"{hw.memory / GiB:.2f} GiB ({hw.name}); use more tensor or pipeline parallelism, "
            "ZeRO, smaller microbatches, or check_memory=False"
        )

    # Communicator groups.
    groups: dict[str, tuple[int, ...]] = {}
    tp_names: list[str] = []
    dp_names: list[str] = []
    stride = dp * tp
    if tp > 1:
        for p in range(pp):
            for d in range(dp):
                name = str(len(groups) + 1)
                base = p * stride + d * tp
                groups[name] = tuple(range(base, base + tp))
                tp_names.append(name)
    if dp > 1:
        for p in range(pp):
            for t in range(tp):
                name = str(len(groups) + 1)
                groups[name] = tuple(p * stride + d * tp + t for d in range(dp))
                dp_names.append(name)

    ranks: list[list[WNode]] = [[] for _ in range(npus)]
    stages: list[dict[str, object]] = []
    for p in range(pp):
        st = stage_template(plan, p, hw)
        tmpl, roles = st.nodes, st.roles
        tp_pos = [k for k, r in enumerate(roles) if r == ROLE_TP]
        dp_pos = [k for k, r in enumerate(roles) if r == ROLE_DP]
        p2p_pos = [k for k, r in enumerate(roles) if r >= ROLE_SEND_NEXT]
        dp_nodes = [
            [_node(tmpl[k], pg_name=dp_names[p * tp + t]) for k in dp_pos] if dp > 1 else []
            for t in range(tp)
        ]
        for d in range(dp):
            tp_nodes = (
                [_node(tmpl[k], pg_name=tp_names[p * dp + d]) for k in tp_pos] if tp > 1 else []
            )
            for t in range(tp):
                npu = p * stride + d * tp + t
                nodes = list(tmpl)
                for k, nd in zip(tp_pos, tp_nodes, strict=True):
                    nodes[k] = nd
                for k, nd in zip(dp_pos, dp_nodes[t], strict=True):
                    nodes[k] = nd
                for k in p2p_pos:
                    r = roles[k]
                    if r == ROLE_SEND_NEXT:
                        nodes[k] = _node(tmpl[k], src=npu, dst=npu + stride)
                    elif r == ROLE_SEND_PREV:
                        nodes[k] = _node(tmpl[k], src=npu, dst=npu - stride)
                    elif r == ROLE_RECV_PREV:
                        nodes[k] = _node(tmpl[k], src=npu - stride, dst=npu)
                    else:
                        nodes[k] = _node(tmpl[k], src=npu + stride, dst=npu)
                ranks[npu] = nodes
        comps = [n for n in tmpl if n.kind == NodeKind.COMP]
        stages.append(
            {
                "stage": p,
                "layers": [p * plan.layers_per_stage, (p + 1) * plan.layers_per_stage - 1],
                "npus": [p * stride, (p + 1) * stride - 1],
                "params_per_npu": plan.stage_params(p),
                "nodes_per_npu": len(tmpl),
                "compute_flops_per_npu": sum(n.num_ops or 0 for n in comps),
                "compute_bytes_per_npu": sum(n.tensor_size or 0 for n in comps),
                "compute_micros_per_npu": sum(n.duration_micros for n in comps),
                "tp_collectives_per_npu": len(tp_pos),
                "dp_collectives_per_npu": len(dp_pos),
                "p2p_per_npu": len(p2p_pos),
            }
        )

    metadata: dict[str, object] = {
        "generator": "collc workloads.transformer",
        "model": {**asdict(spec), "params": spec.params},
        "parallelism": {
            "npus": npus,
            "dp": dp,
            "tp": tp,
            "pp": pp,
            "sp": sp,
            "zero": zero,
            "microbatches": m,
            "microbatch_size": microbatch_size,
            "seq": spec.seq,
            "global_batch": m * microbatch_size * dp,
            "schedule": "1F1B",
            "npu": "(stage*dp + dp_rank)*tp + tp_rank",
        },
        "hardware": asdict(hw),
        "groups": {"tp": tp_names, "dp": dp_names},
        "stages": stages,
        "memory": {
            "capacity": hw.memory,
            "peak": worst["total"],
            "peak_stage": worst["stage"],
            "stages": memory,
        },
    }
    files = [
        f"<npu {n}: stage {n // stride}, dp {n % stride // tp}, tp {n % tp}>" for n in range(npus)
    ]
    return Workload(ranks, groups, files, metadata)
