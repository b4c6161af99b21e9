"""Transformer-training workloads: one iteration of a GPT- or ViT-style model under data,
tensor, pipeline and sequence parallelism and ZeRO weight-update sharding, as per-NPU Chakra
workload ETs (a `workloads.model.Workload`).

``generate("gpt3-13b", npus=1024, dp=32, tp=8, pp=4)`` builds the nodes every NPU runs; the
result passes `workloads.model.check_workload` and `workloads.chakra_io.write_workload` writes
it.

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

import math
from dataclasses import asdict, dataclass, replace

from workloads.model import CollKind, NodeKind, WNode, Workload, WorkloadError

GiB = 1 << 30


@dataclass(frozen=True)
class ModelSpec:
    """A transformer: ``layers`` blocks of width ``hidden`` with ``heads`` attention heads and
    an MLP of ``ffn`` (0: ``4*hidden``), over ``seq`` tokens. ``vocab``: the vocabulary of a
    language model (embedding tied with the output layer, logits for every token) or, with
    ``patch`` > 0, the classes of a vision transformer's head (logits for the class token;
    ``patch`` is the input features of one patch, 16*16*3 = 768 for ViT/16).
    ``bytes_per_element``: 2 for bf16/fp16 weights, gradients and activations."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    ffn: int = 0
    bytes_per_element: int = 2
    patch: int = 0

    def __post_init__(self) -> None:
        if self.ffn == 0:
            object.__setattr__(self, "ffn", 4 * self.hidden)
        for f in ("layers", "hidden", "heads", "seq", "vocab", "ffn", "bytes_per_element"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise WorkloadError(
                    f"model {self.name!r}: {f} must be a positive integer, not {v!r}"
                )
        if self.patch < 0:
            raise WorkloadError(f"model {self.name!r}: patch must not be negative")

    @property
    def is_vision(self) -> bool:
        return self.patch > 0

    @property
    def layer_params(self) -> int:
        """Parameters of one transformer block: QKV and projection with biases (4h^2 + 4h),
        MLP with biases (2h*ffn + ffn + h), two layer norms (4h)."""
        h = self.hidden
        return 4 * h * h + 2 * h * self.ffn + self.ffn + 9 * h

    @property
    def embedding_params(self) -> int:
        """The input side: token embedding and positions, or ViT's patch projection, class
        token and positions."""
        h = self.hidden
        if self.is_vision:
            return self.patch * h + h + h + self.seq * h
        return self.vocab * h + self.seq * h

    @property
    def head_params(self) -> int:
        """The output side without the tied embedding: final layer norm, and ViT's head."""
        h = self.hidden
        return 2 * h + (h * self.vocab + self.vocab if self.is_vision else 0)

    @property
    def params(self) -> int:
        """Every parameter of the model (the tied embedding counted once)."""
        return self.layers * self.layer_params + self.embedding_params + self.head_params


def _gpt(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    return ModelSpec(name, layers, hidden, heads, seq=2048, vocab=50257)


def _vit(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    return ModelSpec(name, layers, hidden, heads, seq=197, vocab=1000, patch=16 * 16 * 3)


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        # Brown et al. 2020, Table 2.1 (n_layers, d_model, n_heads; n_ctx 2048).
        _gpt("gpt3-125m", 12, 768, 12),
        _gpt("gpt3-350m", 24, 1024, 16),
        _gpt("gpt3-760m", 24, 1536, 16),
        _gpt("gpt3-1.3b", 24, 2048, 24),
        _gpt("gpt3-2.7b", 32, 2560, 32),
        _gpt("gpt3-6.7b", 32, 4096, 32),
        _gpt("gpt3-13b", 40, 5140, 40),
        _gpt("gpt3-175b", 96, 12288, 96),
        # Dosovitskiy et al. 2021, Table 1 (layers, hidden, heads; MLP 4*hidden), /16 patches.
        _vit("vit-base", 12, 768, 12),
        _vit("vit-large", 24, 1024, 16),
        _vit("vit-huge", 32, 1280, 16),
    )
}
"""The preset models by name."""


@dataclass(frozen=True)
class NpuSpec:
    """An accelerator for the roofline and the memory check: ``peak_flops`` (FLOP/s),
    ``mem_bw`` (bytes/s of its memory), ``memory`` (bytes)."""

    name: str
    peak_flops: float
    mem_bw: float
    memory: int

    def __post_init__(self) -> None:
        if not (self.peak_flops > 0 and self.mem_bw > 0 and self.memory > 0):
            raise WorkloadError(
                f"NPU {self.name!r}: peak_flops, mem_bw and memory must be positive"
            )


DEFAULT_NPU = NpuSpec("A100-SXM4-80GB", peak_flops=312e12, mem_bw=2.039e12, memory=80 * GiB)
"""NVIDIA A100 SXM4 80GB (A100 datasheet): 312 TFLOP/s dense bf16 tensor-core peak, 2,039 GB/s
HBM2e, 80 GiB."""


def model_spec(model: str | ModelSpec) -> ModelSpec:
    """``model`` itself or the preset of that name; WorkloadError listing the presets."""
    if isinstance(model, ModelSpec):
        return model
    spec = MODELS.get(model)
    if spec is None:
        raise WorkloadError(f"unknown model {model!r}; known models: {', '.join(MODELS)}")
    return spec


# FLOPs of one forward pass over `b` sequences of `s` tokens, whole model width (tp = 1).


def attention_flops(spec: ModelSpec, b: int, s: int) -> int:
    """QKV and output projections (8bsh^2) and attention scores and values (4bs^2h)."""
    h = spec.hidden
    return 8 * b * s * h * h + 4 * b * s * s * h


def mlp_flops(spec: ModelSpec, b: int, s: int) -> int:
    """The two MLP matrices: 4bsh*ffn."""
    return 4 * b * s * spec.hidden * spec.ffn


def embedding_flops(spec: ModelSpec, b: int, s: int) -> int:
    """A token model's lookup and position add (bsh); ViT's patch projection (2bs*patch*h)."""
    if spec.is_vision:
        return 2 * b * s * spec.patch * spec.hidden
    return b * s * spec.hidden


def head_flops(spec: ModelSpec, b: int, s: int) -> int:
    """Logits: 2bsh*vocab for every token; ViT's head 2bh*classes for the class token."""
    if spec.is_vision:
        return 2 * b * spec.hidden * spec.vocab
    return 2 * b * s * spec.hidden * spec.vocab


def forward_flops(spec: ModelSpec, *, batch: int = 1, seq: int | None = None) -> int:
    """One forward pass of the whole model (embedding, layers, head)."""
    s = spec.seq if seq is None else seq
    return (
        spec.layers * (attention_flops(spec, batch, s) + mlp_flops(spec, batch, s))
        + embedding_flops(spec, batch, s)
        + head_flops(spec, batch, s)
    )


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class _Cost:
    """One COMP node's work per NPU: FLOPs and bytes moved."""

    flops: int
    nbytes: int

    def times(self, k: int) -> _Cost:
        return _Cost(self.flops * k, self.nbytes * k)


def _micros(c: _Cost, hw: NpuSpec) -> int:
    t = max(c.flops / hw.peak_flops, c.nbytes / hw.mem_bw) * 1e6
    return max(1, math.ceil(t - 1e-9))


# Template roles: how a stage's node is specialised for each NPU.
_SHARED, _TP, _DP, _SEND_NEXT, _SEND_PREV, _RECV_PREV, _RECV_NEXT = range(7)


class _StageBuilder:
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

    def comp(self, name: str, cost: _Cost, deps: tuple[int, ...]) -> int:
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
            _SHARED,
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
        kind = NodeKind.SEND if role in (_SEND_NEXT, _SEND_PREV) else NodeKind.RECV
        nid = len(self.nodes)
        return self._add(
            WNode(id=nid, name=name, kind=kind, data_deps=deps, comm_size=size, comm_tag=tag),
            role,
        )


@dataclass(frozen=True)
class _Plan:
    """Everything the stage templates need, per NPU of a stage."""

    spec: ModelSpec
    dp: int
    tp: int
    pp: int
    sp: bool
    zero: int
    m: int
    b: int
    s: int
    optimizer: bool

    @property
    def layers_per_stage(self) -> int:
        return self.spec.layers // self.pp

    @property
    def e(self) -> int:
        return self.spec.bytes_per_element

    @property
    def tp_sp(self) -> bool:
        return self.sp and self.tp > 1

    def act_bytes(self) -> int:
        """One microbatch's activations between layers, whole (b*s*h*e)."""
        return self.b * self.s * self.spec.hidden * self.e

    def p2p_bytes(self) -> int:
        full = self.act_bytes()
        return _cdiv(full, self.tp) if self.tp_sp else full

    # Per-NPU parameters (tensor-parallel share; biases of row-parallel layers and layer
    # norms are replicated, as in Megatron-LM).
    def layer_params(self) -> int:
        sp, h, t = self.spec, self.spec.hidden, self.tp
        return _cdiv(4 * h * h + 2 * h * sp.ffn + 3 * h + sp.ffn, t) + 6 * h

    def embedding_params(self) -> int:
        sp, h = self.spec, self.spec.hidden
        if sp.is_vision:
            return sp.embedding_params
        return _cdiv(sp.vocab * h, self.tp) + sp.seq * h

    def head_params(self) -> int:
        """The last stage's output side: final layer norm, the tied embedding's copy when
        it lives on another stage, ViT's head."""
        sp, h = self.spec, self.spec.hidden
        if sp.is_vision:
            return sp.head_params
        return 2 * h + (_cdiv(sp.vocab * h, self.tp) if self.pp > 1 else 0)

    def stage_params(self, p: int) -> int:
        n = self.layers_per_stage * self.layer_params()
        if p == 0:
            n += self.embedding_params()
        if p == self.pp - 1:
            n += self.head_params()
        return n

    # Forward costs per NPU and microbatch.
    def attention_cost(self) -> _Cost:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        nbytes = self.e * (
            _cdiv(4 * h * h, t) + 2 * b * s * h + _cdiv(8 * b * s * h + 4 * sp.heads * b * s * s, t)
        )
        return _Cost(_cdiv(attention_flops(sp, b, s), t), nbytes)

    def mlp_cost(self) -> _Cost:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        nbytes = self.e * (_cdiv(2 * h * sp.ffn, t) + 2 * b * s * h + _cdiv(4 * b * s * sp.ffn, t))
        return _Cost(_cdiv(mlp_flops(sp, b, s), t), nbytes)

    def embedding_cost(self) -> _Cost:
        sp, b, s, h = self.spec, self.b, self.s, self.spec.hidden
        if sp.is_vision:
            nbytes = self.e * (sp.patch * h + b * s * sp.patch + b * s * h)
        else:
            nbytes = self.e * (3 * b * s * h)
        return _Cost(embedding_flops(sp, b, s), nbytes)

    def head_cost(self) -> _Cost:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        if sp.is_vision:
            nbytes = self.e * (h * sp.vocab + b * h + b * sp.vocab)
            return _Cost(head_flops(sp, b, s), nbytes)
        nbytes = self.e * (_cdiv(sp.vocab * h, t) + b * s * h + _cdiv(b * s * sp.vocab, t))
        return _Cost(_cdiv(head_flops(sp, b, s), t), nbytes)

    def optimizer_cost(self, p: int) -> _Cost:
        n = self.stage_params(p)
        if self.zero >= 1:
            n = _cdiv(n, self.dp)
        return _Cost(12 * n, 28 * n)

    # Memory per NPU of stage p, bytes.
    def layer_activation_bytes(self) -> int:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        attn = 5 * sp.heads * s / (h * t)
        per = 34 / t + attn if self.tp_sp else 10 + 24 / t + attn
        return math.ceil(s * b * h * per * self.e / 2)

    def memory(self, p: int) -> dict[str, int]:
        n = self.stage_params(p)
        weights = n * self.e
        grads = n * self.e
        if self.zero >= 2:
            grads = _cdiv(grads, self.dp)
        opt = 12 * n
        if self.zero >= 1:
            opt = _cdiv(opt, self.dp)
        inflight = min(self.pp - p, self.m)
        act = inflight * self.layers_per_stage * self.layer_activation_bytes()
        if p == self.pp - 1:
            tokens = self.b if self.spec.is_vision else self.b * self.s
            act += _cdiv(4 * tokens * self.spec.vocab, 1 if self.spec.is_vision else self.tp)
        return {
            "stage": p,
            "weights": weights,
            "gradients": grads,
            "optimizer": opt,
            "activations": act,
            "microbatches_in_flight": inflight,
            "total": weights + grads + opt + act,
        }

    def schedule(self, p: int) -> list[tuple[bool, int]]:
        """1F1B: (forward?, microbatch) in execution order on stage p."""
        warm = min(self.pp - p - 1, self.m)
        out = [(True, i) for i in range(warm)]
        for i in range(self.m - warm):
            out += [(True, warm + i), (False, i)]
        out += [(False, i) for i in range(self.m - warm, self.m)]
        return out


def _stage_template(plan: _Plan, p: int, hw: NpuSpec) -> _StageBuilder:
    """Stage p's node list, the same on every NPU of the stage but for groups and peers."""
    st = _StageBuilder(hw)
    first, last = p == 0, p == plan.pp - 1
    lo = p * plan.layers_per_stage
    layers = range(lo, lo + plan.layers_per_stage)
    tp, dp, m = plan.tp, plan.dp, plan.m
    full = plan.act_bytes()
    share = _cdiv(full, tp)
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
        return st.coll(_TP, f"{name}.{reduce_tag}", reduce_kind, full, (x,))

    def tp_gather(name: str, x: int) -> int:
        if not plan.tp_sp:
            return x
        return st.coll(_TP, f"{name}.tp_allgather", CollKind.ALL_GATHER, share, (x,))

    def bucket(name: str, params: int, deps: tuple[int, ...]) -> None:
        if dp == 1:
            return
        nbytes = params * plan.e
        nid = st.coll(_DP, f"{name}.{dp_tag}", dp_kind, nbytes, deps)
        buckets.append((name, nbytes, nid))

    def forward(i: int) -> None:
        mb = f"mb{i}"
        if first:
            x = st.comp(f"{mb}.embed.fwd", emb, ())
        else:
            x = st.p2p(_RECV_PREV, f"{mb}.recv_act", p2p, 2 * i, ())
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
            st.p2p(_SEND_NEXT, f"{mb}.send_act", p2p, 2 * i, (x,))
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
            x = st.p2p(_RECV_NEXT, f"{mb}.recv_grad", p2p, 2 * i + 1, ())
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
            st.p2p(_SEND_PREV, f"{mb}.send_grad", p2p, 2 * i + 1, (x,))
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
                    _DP,
                    f"{name}.dp_allgather",
                    CollKind.ALL_GATHER,
                    _cdiv(nbytes, dp),
                    (opt,),
                )
    return st


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
    plan = _Plan(spec, dp, tp, pp, sp, zero, m, microbatch_size, spec.seq, optimizer)

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
        st = _stage_template(plan, p, hw)
        tmpl, roles = st.nodes, st.roles
        tp_pos = [k for k, r in enumerate(roles) if r == _TP]
        dp_pos = [k for k, r in enumerate(roles) if r == _DP]
        p2p_pos = [k for k, r in enumerate(roles) if r >= _SEND_NEXT]
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
                    if r == _SEND_NEXT:
                        nodes[k] = _node(tmpl[k], src=npu, dst=npu + stride)
                    elif r == _SEND_PREV:
                        nodes[k] = _node(tmpl[k], src=npu, dst=npu - stride)
                    elif r == _RECV_PREV:
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
