"""The vocabulary of a parameter set (PSA) and its JSON Schema (docs/explore.md, section 1).

`KNOBS` names every knob a PSA may set, with its stack (workload, collective, network), its
type, whether it takes one value per network dimension, its default and its bounds; `SCHEMA`
is the JSON Schema a PSA file is validated against before anything else is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STACKS = ("workload", "collective", "network")
"""The three stacks, in the order their sections are read."""

IMPLEMENTATIONS = ("ring", "direct", "halvingDoubling")
"""Native collective implementations the analytical mode models per dimension."""


@dataclass(frozen=True)
class KnobInfo:
    """One knob: ``stack``, value ``kind`` (int, float, str, bool), ``per_dim`` (one value
    per network dimension), ``default`` (None: required, or unset), ``choices`` (a closed set
    of strings or ints), ``minimum``/``maximum`` (numbers), ``help`` (what it sets)."""

    stack: str
    kind: str
    per_dim: bool
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    required: bool = False


def _k(stack: str, kind: str, default: Any, help: str, **kw: Any) -> KnobInfo:
    return KnobInfo(stack, kind, kw.pop("per_dim", False), default, help, **kw)


KNOBS: dict[str, KnobInfo] = {
    # workload (workloads.transformer.generate)
    "model": _k("workload", "str", None, "model name (gpt3-13b, vit-large, ...)", required=True),
    "npus": _k("workload", "int", None, "NPUs in the machine", minimum=1, required=True),
    "dp": _k("workload", "int", 1, "data parallelism", minimum=1),
    "tp": _k("workload", "int", 1, "tensor parallelism", minimum=1),
    "pp": _k("workload", "int", 1, "pipeline stages", minimum=1),
    "sp": _k("workload", "bool", False, "sequence parallelism (with tensor parallelism)"),
    "zero": _k("workload", "int", 0, "ZeRO stage (weight-update sharding)", choices=(0, 1, 2)),
    "microbatches": _k("workload", "int", None, "microbatches per replica (default pp)", minimum=1),
    "microbatch_size": _k("workload", "int", 1, "sequences per microbatch", minimum=1),
    "seq": _k("workload", "int", None, "tokens per sequence (default the model's)", minimum=1),
    "memory_gib": _k("workload", "float", 80.0, "NPU memory capacity, GiB", minimum=1e-6),
    "peak_tflops": _k("workload", "float", None, "NPU peak TFLOP/s (default A100)", minimum=1e-6),
    "mem_bw_gbps": _k("workload", "float", None, "NPU memory GB/s (default A100)", minimum=1e-6),
    # collective (workloads.analytical.NativeConfig)
    "implementation": _k(
        "collective",
        "str",
        "ring",
        "native algorithm per dimension, every collective",
        per_dim=True,
        choices=IMPLEMENTATIONS,
    ),
    **{
        kind: _k(
            "collective",
            "str",
            None,
            f"{kind} algorithm per dimension (overrides implementation)",
            per_dim=True,
            choices=IMPLEMENTATIONS,
        )
        for kind in ("allreduce", "allgather", "reduce_scatter", "alltoall")
    },
    "splits": _k(
        "collective", "int", 1, "chunks per collective (preferred-dataset-splits)", minimum=1
    ),
    "active_chunks": _k(
        "collective", "int", 1, "active chunks per dimension", minimum=1, maximum=4096
    ),
    "endpoint_delay": _k("collective", "int", 10, "ns per step at an endpoint", minimum=0),
    "optimization": _k(
        "collective",
        "str",
        "baseline",
        "collective-optimization",
        choices=("baseline", "localBWAware"),
    ),
    "scheduling": _k(
        "collective",
        "str",
        "FIFO",
        "scheduling-policy (no effect on the analytical time)",
        choices=("FIFO", "LIFO"),
    ),
    "local_mem_bw": _k("collective", "float", 0.0, "GB/s for reductions (0: free)", minimum=0),
    # network (explore.network, explore.cost)
    "topology": _k(
        "network",
        "str",
        None,
        "dimension kind",
        per_dim=True,
        choices=("ring", "fc", "switch"),
        required=True,
    ),
    "size": _k(
        "network", "int", None, "NPUs of the dimension", per_dim=True, minimum=2, required=True
    ),
    "bandwidth": _k(
        "network",
        "float",
        None,
        "GB/s per NPU in the dimension",
        per_dim=True,
        minimum=1e-6,
        required=True,
    ),
    "latency": _k("network", "float", 500.0, "ns per link", per_dim=True, minimum=0),
}
"""Every knob a PSA may set, by name (names are unique across the stacks)."""

BUILTINS: dict[str, tuple[str, ...]] = {
    "network_npus": ("size",),
    "link_bandwidth": ("topology", "size", "bandwidth"),
    "peak_memory_gib": (
        "model",
        "npus",
        "dp",
        "tp",
        "pp",
        "sp",
        "zero",
        "microbatches",
        "microbatch_size",
        "seq",
    ),
    "cost": ("topology", "size", "bandwidth"),
    "dims": (),
}
"""Values computed for every point, readable by constraints (not by derived knobs), with the
knobs each depends on: ``network_npus`` (product of the sizes), ``link_bandwidth`` (per
dimension, GB/s of one link), ``peak_memory_gib`` (the workload's largest per-NPU footprint),
``cost`` (LIBRA's network cost, $), ``dims`` (the number of dimensions)."""

OBJECTIVES = ("time", "cost", "time_x_cost", "memory", "reward")
"""Objectives a study may minimise (``reward``: maximise)."""

_SCALAR = {"type": ["number", "string", "boolean"]}
_DOMAIN = {
    "oneOf": [
        _SCALAR,
        {"type": "array", "minItems": 1, "items": _SCALAR},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "values": {"type": "array", "minItems": 1, "items": _SCALAR},
                "range": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 3,
                    "items": {"type": "number"},
                },
                "pow2": {
                    "type": "array",
                    "minItems": 2,
                    "maxItems": 2,
                    "items": {"type": "integer", "minimum": 1},
                },
                "fixed": {},
                "scope": {"enum": ["same", "per-dim"]},
            },
            "oneOf": [
                {"required": ["values"]},
                {"required": ["range"]},
                {"required": ["pow2"]},
                {"required": ["fixed"]},
            ],
        },
    ]
}


def _section(stack: str) -> dict[str, Any]:
    names = [n for n, k in KNOBS.items() if k.stack == stack]
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {n: _DOMAIN for n in names},
    }


_CONSTRAINT = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["expr"],
            "properties": {"name": {"type": "string"}, "expr": {"type": "string"}},
        },
    ]
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "collc parameter set (PSA)",
    "type": "object",
    "additionalProperties": False,
    "required": ["dimensions", "workload", "network"],
    "properties": {
        "psa": {"const": 1},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "dimensions": {"type": "integer", "minimum": 1, "maximum": 8},
        "workload": _section("workload"),
        "collective": _section("collective"),
        "network": _section("network"),
        "cost_model": {"type": "string", "minLength": 1},
        "free": {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {
                "type": "object",
                "required": ["stack"],
                "properties": {
                    "stack": {"enum": list(STACKS)},
                    "values": {"type": "array", "minItems": 1, "items": _SCALAR},
                    "range": {"type": "array", "minItems": 2, "maxItems": 3},
                    "pow2": {"type": "array", "minItems": 2, "maxItems": 2},
                },
                "additionalProperties": False,
                "oneOf": [
                    {"required": ["values"]},
                    {"required": ["range"]},
                    {"required": ["pow2"]},
                ],
            },
        },
        "baseline": {
            "type": "object",
            "additionalProperties": {
                "oneOf": [_SCALAR, {"type": "array", "minItems": 1, "items": _SCALAR}]
            },
        },
        "derived": {
            "type": "object",
            "additionalProperties": {"type": "string", "minLength": 1},
        },
        "constraints": {"type": "array", "items": _CONSTRAINT},
        "objectives": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"enum": list(OBJECTIVES)},
        },
        "reward": {
            "type": "object",
            "additionalProperties": False,
            "required": ["targets"],
            "properties": {
                "targets": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": False,
                    "properties": {
                        o: {"type": "number", "exclusiveMinimum": 0}
                        for o in OBJECTIVES
                        if o != "reward"
                    },
                }
            },
        },
    },
}
"""The JSON Schema of a PSA file (draft 2020-12)."""
