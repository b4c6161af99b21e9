"""Payload descriptions: what the data a collective moves looks like, from a spec string.

``--payload`` takes one of:

- ``dense`` : every message weighs its chunks (count x chunk bytes), as without a payload;
- ``sparse:density=RHO[,KEY=VALUE...]`` : each rank's tensor has a support of density RHO
  (0 < RHO <= 1; ``0.01`` or ``1%``) whose elements are non-zero independently, so ``k``
  contributions summed have density ``1-(1-RHO)^k``;
- ``tensor:PATH[,KEY=VALUE...]`` : real per-rank tensors, one per rank, from an ``.npz`` file
  (its arrays in file order) or a folder of ``.npy`` files (in name order); supports are exact.

Keys: ``value`` (fp16, bf16, fp32, fp64, int8, int32; default fp16, for tensors their dtype),
``format`` (``auto``, the smallest per message, or one of `payloads.formats.FORMATS`; default
auto), ``index`` (``auto``, the least width, or a fixed width in bits), ``rlc`` (run bits,
default 4), ``block`` (the non-zero block length, default 256), ``shape`` (``MxK``, the tensor
as a matrix for the 2-D formats; default a vector), ``topk`` (``yes``: a fully reduced chunk is
cut back to the density of one rank, as Ok-Topk re-selects its top-k; default no; producers
that do so set it), ``convert`` and ``merge`` (the endpoints' rates; `payloads.endpoint`).
Every problem is a `PayloadError` naming the spec and the column of the offending item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from payloads.errors import PayloadError
from payloads.formats import VALUE_BITS, FormatParams, check_format
from topologies.errors import CollcError, SourcePos
from topologies.units import parse_bandwidth_bytes_per_ns

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

KINDS = ("dense", "sparse", "tensor")

DEFAULT_CONVERT_BYTES_PER_NS = 100.0
"""Software format conversion at an endpoint: 100 GB/s of wire bytes (gather/scatter kernels
on an accelerator, well under its memory bandwidth)."""

DEFAULT_MERGE_BYTES_PER_NS = 200.0
"""Merging two sparse operands (index merge and add): 200 GB/s of operand bytes."""

HW_CONVERTER_SPEEDUP = 4.0
"""Qin et al. (IPDPS 2021): converting formats in hardware is about 4x faster than software."""


@dataclass(frozen=True)
class Tensors:
    """Real per-rank tensors: ``arrays[r]`` is rank r's tensor, all of one shape and dtype;
    ``source`` names the file or folder."""

    source: str
    arrays: tuple[npt.NDArray[np.generic], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.arrays[0].shape)

    @property
    def elements(self) -> int:
        return int(self.arrays[0].size)

    @property
    def itemsize(self) -> int:
        return int(self.arrays[0].dtype.itemsize)


@dataclass(frozen=True)
class Payload:
    """A parsed ``--payload``: its kind, density (sparse), the fixed format or ``auto``, the
    format parameters, the tensor as a matrix (``shape``; None: a vector), Ok-Topk's
    re-selection (``topk``), the endpoint rates in bytes per ns and, for real data, the
    tensors."""

    kind: str = "dense"
    density: float = 1.0
    fmt: str = "auto"
    params: FormatParams = field(default_factory=FormatParams)
    shape: tuple[int, int] | None = None
    topk: bool = False
    convert_bytes_per_ns: float = DEFAULT_CONVERT_BYTES_PER_NS
    merge_bytes_per_ns: float = DEFAULT_MERGE_BYTES_PER_NS
    tensors: Tensors | None = None
    spec: str = "dense"

    @property
    def dense(self) -> bool:
        """True when every message simply weighs its chunks."""
        return self.kind == "dense"

    @property
    def value_bytes(self) -> int:
        return self.params.value_bits // 8

    def with_topk(self) -> Payload:
        """This payload as Ok-Topk sees it: fully reduced chunks cut back to one rank's density."""
        return replace(self, topk=True)


def _density(text: str, pos: SourcePos) -> float:
    t = text.strip()
    try:
        v = Fraction(t[:-1]) / 100 if t.endswith("%") else Fraction(t)
    except (ValueError, ZeroDivisionError):
        raise PayloadError(f"density {t!r} is not a number (0.01 or 1%)", pos) from None
    if not 0 < v <= 1:
        raise PayloadError(f"density {t} must lie in (0, 1]", pos)
    return float(v)


def _positive_int(key: str, text: str, pos: SourcePos, top: int) -> int:
    if not re.fullmatch(r"[0-9]{1,9}", text.strip()) or not 1 <= int(text) <= top:
        raise PayloadError(f"{key} must be a whole number from 1 to {top}, got {text!r}", pos)
    return int(text)


def parse_payload(spec: str, *, load: bool = True) -> Payload:
    """The `Payload` a ``--payload`` spec describes (see the module docstring). ``load``
    reads a tensor payload's files (else only its spec is checked)."""
    text = spec.strip()
    kind, _, rest = text.partition(":")
    kind = kind.strip()

    def at(col: int) -> SourcePos:
        return SourcePos(file="--payload", column=col + 1, text=spec)

    if kind not in KINDS:
        raise PayloadError(
            f"unknown payload kind {kind!r} (expected dense, sparse:density=RHO or tensor:PATH)",
            at(0),
        )
    items: list[tuple[str, int]] = []
    col = len(kind) + 1
    for part in rest.split(",") if rest else []:
        items.append((part, col))
        col += len(part) + 1
    path = ""
    if kind == "tensor":
        if not items or not items[0][0].strip() or "=" in items[0][0]:
            raise PayloadError("a tensor payload needs a path: tensor:grads.npz", at(len(kind)))
        path = items.pop(0)[0].strip()
    out = Payload(kind=kind, spec=text)
    fields: dict[str, object] = {}
    params: dict[str, object] = {}
    seen: set[str] = set()
    for part, c in items:
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        pos = at(c)
        if not eq or not key:
            raise PayloadError(f"expected KEY=VALUE, got {part!r}", pos)
        if key in seen:
            raise PayloadError(f"{key} is given twice", pos)
        seen.add(key)
        if key == "density":
            if kind != "sparse":
                raise PayloadError(f"density applies to a sparse payload, not {kind}", pos)
            fields["density"] = _density(value, pos)
        elif key == "value":
            if value not in VALUE_BITS:
                raise PayloadError(
                    f"unknown value type {value!r} (expected one of {', '.join(VALUE_BITS)})", pos
                )
            params["value_bits"] = VALUE_BITS[value]
        elif key == "format":
            try:
                fields["fmt"] = check_format(value)
            except PayloadError as e:
                raise PayloadError(e.message, pos) from None
        elif key == "index":
            params["index_bits"] = None if value == "auto" else _positive_int(key, value, pos, 64)
        elif key == "rlc":
            params["rlc_bits"] = _positive_int(key, value, pos, 16)
        elif key == "block":
            params["block"] = _positive_int(key, value, pos, 1 << 30)
        elif key == "shape":
            m = re.fullmatch(r"([0-9]{1,12})x([0-9]{1,12})", value)
            if m is None or int(m.group(1)) < 1 or int(m.group(2)) < 1:
                raise PayloadError(f"shape must be MxK (e.g. 4096x4096), got {value!r}", pos)
            fields["shape"] = (int(m.group(1)), int(m.group(2)))
        elif key == "topk":
            if value not in ("yes", "no"):
                raise PayloadError(f"topk must be yes or no, got {value!r}", pos)
            fields["topk"] = value == "yes"
        elif key in ("convert", "merge"):
            try:
                rate = parse_bandwidth_bytes_per_ns(value)
            except CollcError as e:
                raise PayloadError(e.message, pos) from None
            fields[f"{key}_bytes_per_ns"] = rate
        else:
            raise PayloadError(
                f"unknown key {key!r} (expected density, value, format, index, rlc, block, "
                "shape, topk, convert, merge)",
                pos,
            )
    if kind == "sparse" and "density" not in fields:
        raise PayloadError("a sparse payload needs density=RHO, e.g. sparse:density=0.01", at(0))
    if kind == "dense" and items:
        raise PayloadError("a dense payload takes no keys", at(items[0][1]))
    if kind == "tensor" and load:
        tensors = load_tensors(path)
        bits = tensors.itemsize * 8
        if "value_bits" in params and params["value_bits"] != bits:
            raise PayloadError(
                f"{path}: the tensors hold {tensors.arrays[0].dtype} values, not "
                f"{params['value_bits']}-bit ones",
                at(len(kind) + 1),
            )
        params["value_bits"] = bits
        fields["tensors"] = tensors
        if len(tensors.shape) == 2 and "shape" not in fields:
            fields["shape"] = (tensors.shape[0], tensors.shape[1])
    try:
        fp = FormatParams(**params)  # type: ignore[arg-type]
    except PayloadError as e:
        raise PayloadError(e.message, at(0)) from None
    return replace(out, params=fp, **fields)  # type: ignore[arg-type]


MAX_TENSOR_BYTES = 4 << 30
"""Largest total of per-rank tensors read (4 GiB)."""


def load_tensors(path: str) -> Tensors:
    """Per-rank tensors from an ``.npz`` file (arrays in file order) or a folder of ``.npy``
    files (name order). They must be 1-D or 2-D, of one shape and one numeric dtype;
    otherwise `PayloadError` naming the file (and the array)."""
    import numpy as np

    p = Path(path)
    arrays: list[tuple[str, npt.NDArray[np.generic]]] = []
    try:
        if p.is_dir():
            files = sorted(p.glob("*.npy"), key=lambda f: _natural(f.name))
            if not files:
                raise PayloadError(f"{path}: no .npy files in the folder")
            total = sum(f.stat().st_size for f in files)
            if total > MAX_TENSOR_BYTES:
                raise PayloadError(f"{path}: {total:,} bytes of tensors, more than 4 GiB")
            for f in files:
                arrays.append((f.name, np.load(f, allow_pickle=False)))
        elif p.suffix == ".npy":
            raise PayloadError(
                f"{path}: one .npy is one tensor; give a folder of them, one per rank"
            )
        else:
            if p.stat().st_size > MAX_TENSOR_BYTES:
                raise PayloadError(f"{path}: more than 4 GiB of tensors")
            with np.load(p, allow_pickle=False) as z:
                if not hasattr(z, "files"):
                    raise PayloadError(f"{path}: not an .npz archive")
                for name in z.files:
                    arrays.append((name, z[name]))
    except PayloadError:
        raise
    except OSError as e:
        raise PayloadError(f"{path}: {e.strerror or e}") from None
    except (ValueError, EOFError) as e:
        raise PayloadError(f"{path}: not a readable numpy file ({e})") from None
    if not arrays:
        raise PayloadError(f"{path}: holds no arrays")
    name0, a0 = arrays[0]
    for name, a in arrays:
        if a.ndim not in (1, 2) or a.size == 0:
            raise PayloadError(
                f"{path}: {name} has shape {a.shape}; a tensor is a vector or a matrix"
            )
        if a.dtype.kind not in "fiu" or a.dtype.itemsize not in (1, 2, 4, 8):
            raise PayloadError(f"{path}: {name} holds {a.dtype} values; expected numbers")
        if a.shape != a0.shape or a.dtype != a0.dtype:
            raise PayloadError(
                f"{path}: {name} is {a.dtype} {a.shape} but {name0} is {a0.dtype} {a0.shape}: "
                "every rank's tensor must have one shape and dtype"
            )
    return Tensors(str(path), tuple(a for _, a in arrays))


def _natural(name: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"([0-9]+)", name)]
