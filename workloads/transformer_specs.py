"""The models and accelerators the transformer generator knows: `ModelSpec` with its
parameter counts, the GPT-3 and ViT presets (`MODELS`), `NpuSpec` and `DEFAULT_NPU`, and the
FLOPs of one forward pass (`workloads.transformer`'s docstring gives the sources)."""

from __future__ import annotations

from dataclasses import dataclass

from workloads.model import WorkloadError

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
