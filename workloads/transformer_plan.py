"""One parallel layout of a transformer (`Plan`): per NPU of a pipeline stage, its share of
the parameters, the FLOPs and bytes of each compute node (`Cost`), the memory footprint and
the stage's 1F1B schedule; the formulas are in `workloads.transformer`'s docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass

from workloads.transformer_specs import (
    ModelSpec,
    attention_flops,
    embedding_flops,
    head_flops,
    mlp_flops,
)


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive integers."""
    return -(-a // b)


@dataclass(frozen=True)
class Cost:
    """One COMP node's work per NPU: FLOPs and bytes moved."""

    flops: int
    nbytes: int

    def times(self, k: int) -> Cost:
        return Cost(self.flops * k, self.nbytes * k)


@dataclass(frozen=True)
class Plan:
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
        return cdiv(full, self.tp) if self.tp_sp else full

    # Per-NPU parameters (tensor-parallel share; biases of row-parallel layers and layer
    # norms are replicated, as in Megatron-LM).
    def layer_params(self) -> int:
        sp, h, t = self.spec, self.spec.hidden, self.tp
        return cdiv(4 * h * h + 2 * h * sp.ffn + 3 * h + sp.ffn, t) + 6 * h

    def embedding_params(self) -> int:
        sp, h = self.spec, self.spec.hidden
        if sp.is_vision:
            return sp.embedding_params
        return cdiv(sp.vocab * h, self.tp) + sp.seq * h

    def head_params(self) -> int:
        """The last stage's output side: final layer norm, the tied embedding's copy when
        it lives on another stage, ViT's head."""
        sp, h = self.spec, self.spec.hidden
        if sp.is_vision:
            return sp.head_params
        return 2 * h + (cdiv(sp.vocab * h, self.tp) if self.pp > 1 else 0)

    def stage_params(self, p: int) -> int:
        n = self.layers_per_stage * self.layer_params()
        if p == 0:
            n += self.embedding_params()
        if p == self.pp - 1:
            n += self.head_params()
        return n

    # Forward costs per NPU and microbatch.
    def attention_cost(self) -> Cost:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        nbytes = self.e * (
            cdiv(4 * h * h, t) + 2 * b * s * h + cdiv(8 * b * s * h + 4 * sp.heads * b * s * s, t)
        )
        return Cost(cdiv(attention_flops(sp, b, s), t), nbytes)

    def mlp_cost(self) -> Cost:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        nbytes = self.e * (cdiv(2 * h * sp.ffn, t) + 2 * b * s * h + cdiv(4 * b * s * sp.ffn, t))
        return Cost(cdiv(mlp_flops(sp, b, s), t), nbytes)

    def embedding_cost(self) -> Cost:
        sp, b, s, h = self.spec, self.b, self.s, self.spec.hidden
        if sp.is_vision:
            nbytes = self.e * (sp.patch * h + b * s * sp.patch + b * s * h)
        else:
            nbytes = self.e * (3 * b * s * h)
        return Cost(embedding_flops(sp, b, s), nbytes)

    def head_cost(self) -> Cost:
        sp, b, s, h, t = self.spec, self.b, self.s, self.spec.hidden, self.tp
        if sp.is_vision:
            nbytes = self.e * (h * sp.vocab + b * h + b * sp.vocab)
            return Cost(head_flops(sp, b, s), nbytes)
        nbytes = self.e * (cdiv(sp.vocab * h, t) + b * s * h + cdiv(b * s * sp.vocab, t))
        return Cost(cdiv(head_flops(sp, b, s), t), nbytes)

    def optimizer_cost(self, p: int) -> Cost:
        n = self.stage_params(p)
        if self.zero >= 1:
            n = cdiv(n, self.dp)
        return Cost(12 * n, 28 * n)

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
            grads = cdiv(grads, self.dp)
        opt = 12 * n
        if self.zero >= 1:
            opt = cdiv(opt, self.dp)
        inflight = min(self.pp - p, self.m)
        act = inflight * self.layers_per_stage * self.layer_activation_bytes()
        if p == self.pp - 1:
            tokens = self.b if self.spec.is_vision else self.b * self.s
            act += cdiv(4 * tokens * self.spec.vocab, 1 if self.spec.is_vision else self.tp)
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
