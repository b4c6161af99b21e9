"""`AstraOptions`: what the ASTRA-sim bundle needs beyond the Program and the topology."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backends.astrasim.errors import AstraExportError

if TYPE_CHECKING:
    from chakra_ir.outdir import Manifest

SCHEDULING_POLICIES = ("LIFO", "FIFO", "EXPLICIT")
COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")
NATIVE_IMPLEMENTATIONS = ("ring", "direct", "halvingDoubling", "doubleBinaryTree")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class AstraOptions:
    """Options of the ASTRA-sim exporter.

    ET sizes: ``chunk_bytes`` is the bytes of one chunk (the output folder's manifest
    ``chunk_bytes``): every message of the custom-collective ETs is ``count x chunk_bytes``, so a
    bundle is built for one collective size. ``reduce_micros`` is the duration in whole
    microseconds of each reduction COMP node (ASTRA-sim runs a 0 as 1 ns, so a reducing
    receive's reduction of 0 µs is written as no node).

    ``name`` is the stem of the ET files (``collective/<name>.<rank>.et`` and
    ``workload/<name>.<npu>.et``); empty means the collective's kind (``allreduce``...).

    System JSON (ASTRA-sim's ``--system-configuration``): ``scheduling_policy`` (LIFO, FIFO, EXPLICIT),
    ``collective_optimization`` (baseline, localBWAware), ``endpoint_delay_ns``,
    ``active_chunks_per_dimension``, ``preferred_dataset_splits`` (>= 1: ASTRA-sim divides by
    it), ``local_mem_bw_gb_per_s`` (decimal GB/s, as ASTRA-sim reads ``local-mem-bw``) and
    ``native_implementation`` (the per-dimension algorithm written in the native
    ``*-implementation`` lists, which the custom key overrides for the exported collective).
    """

    chunk_bytes: int
    reduce_micros: int = 0
    name: str = ""
    scheduling_policy: str = "FIFO"
    collective_optimization: str = "localBWAware"
    endpoint_delay_ns: int = 10
    active_chunks_per_dimension: int = 1
    preferred_dataset_splits: int = 1
    local_mem_bw_gb_per_s: float = 50.0
    native_implementation: str = "ring"

    def __post_init__(self) -> None:
        def bad(what: str) -> AstraExportError:
            return AstraExportError(f"ASTRA-sim export: {what}")

        if isinstance(self.chunk_bytes, bool) or not isinstance(self.chunk_bytes, int):
            raise bad(f"chunk bytes must be an integer, got {self.chunk_bytes!r}")
        if self.chunk_bytes < 1:
            raise bad(f"chunk bytes must be at least 1, got {self.chunk_bytes}")
        if self.reduce_micros < 0:
            raise bad(f"reduction time must be >= 0 µs, got {self.reduce_micros}")
        if self.name and not _NAME.fullmatch(self.name):
            raise bad(f"name {self.name!r} must be a plain file name stem (letters, digits, _-.)")
        if self.scheduling_policy not in SCHEDULING_POLICIES:
            raise bad(
                f"unknown scheduling policy {self.scheduling_policy!r} "
                f"(expected {', '.join(SCHEDULING_POLICIES)})"
            )
        if self.collective_optimization not in COLLECTIVE_OPTIMIZATIONS:
            raise bad(
                f"unknown collective optimization {self.collective_optimization!r} "
                f"(expected {', '.join(COLLECTIVE_OPTIMIZATIONS)})"
            )
        if self.endpoint_delay_ns < 0:
            raise bad(f"endpoint delay must be >= 0 ns, got {self.endpoint_delay_ns}")
        if self.active_chunks_per_dimension < 1:
            raise bad(
                f"active chunks per dimension must be at least 1, got "
                f"{self.active_chunks_per_dimension}"
            )
        if self.preferred_dataset_splits < 1:
            raise bad(
                f"preferred dataset splits must be at least 1 (ASTRA-sim divides by it), got "
                f"{self.preferred_dataset_splits}"
            )
        if not self.local_mem_bw_gb_per_s >= 0:
            raise bad(f"local memory bandwidth must be >= 0 GB/s, got {self.local_mem_bw_gb_per_s}")
        if self.native_implementation not in NATIVE_IMPLEMENTATIONS:
            raise bad(
                f"unknown native implementation {self.native_implementation!r} "
                f"(expected {', '.join(NATIVE_IMPLEMENTATIONS)})"
            )

    @classmethod
    def from_manifest(cls, manifest: Manifest, **changes: Any) -> AstraOptions:
        """The options of an output folder: its ``chunk_bytes`` and, when recorded, the
        ``reduce_micros`` its ETs were written with (``manifest.extra``); ``changes`` override
        any field."""
        fields: dict[str, Any] = {"chunk_bytes": manifest.chunk_bytes}
        reduce = manifest.extra.get("reduce_micros")
        if reduce is not None:
            fields["reduce_micros"] = int(reduce)
        fields.update(changes)
        return cls(**fields)

    def replace(self, **changes: Any) -> AstraOptions:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)
