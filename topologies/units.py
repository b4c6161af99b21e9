"""Quantities with units, as specs and flags write them.

Inside collc sizes are bytes, times ns and bandwidths bytes per ns. ``GB/s`` is 1e9 B/s and
``GiB/s`` is 2^30 B/s (ASTRA-sim's YAML says GB/s but means 2^30: its reader converts at that
boundary, not here).
"""

from __future__ import annotations

import re

from topologies.errors import SourcePos, SpecError

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_TIME_UNITS_NS = {"NS": 1.0, "US": 1e3, "MS": 1e6, "S": 1e9}
_BW_UNITS_BYTES_PER_NS = {
    "B/S": 1e-9,
    "KB/S": 1e-6,
    "MB/S": 1e-3,
    "GB/S": 1.0,
    "TB/S": 1e3,
    "KIB/S": 2**10 / 1e9,
    "MIB/S": 2**20 / 1e9,
    "GIB/S": 2**30 / 1e9,
    "TIB/S": 2**40 / 1e9,
    "GBPS": 1.0,
}


def _split(text: str, what: str, pos: SourcePos | None) -> tuple[float, str]:
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-z/]*)", text.strip())
    if m is None:
        raise SpecError(f"cannot read {what} {text!r}", pos)
    return float(m.group(1)), m.group(2).upper()


def parse_size_bytes(text: str, pos: SourcePos | None = None) -> int:
    """``64MiB`` -> 67108864. A bare number is bytes. Must be a positive whole number of bytes."""
    value, unit = _split(text, "size", pos)
    if unit not in _SIZE_UNITS:
        raise SpecError(
            f"unknown size unit {unit!r} in {text!r} (use B, KB, MB, GB, KiB, MiB, GiB)", pos
        )
    nbytes = value * _SIZE_UNITS[unit]
    if nbytes <= 0 or nbytes != int(nbytes):
        raise SpecError(f"size {text!r} must be a positive whole number of bytes", pos)
    return int(nbytes)


def parse_time_ns(text: str, pos: SourcePos | None = None) -> float:
    """``500ns`` -> 500.0, ``0.5us`` -> 500.0. A unit is required; the value must be >= 0."""
    value, unit = _split(text, "time", pos)
    if unit not in _TIME_UNITS_NS:
        raise SpecError(f"time {text!r} needs a unit (ns, us, ms, s)", pos)
    return value * _TIME_UNITS_NS[unit]


def parse_bandwidth_bytes_per_ns(text: str, pos: SourcePos | None = None) -> float:
    """``50GB/s`` -> 50.0 B/ns; ``50GiB/s`` -> 53.687 B/ns. A unit is required; must be > 0."""
    value, unit = _split(text, "bandwidth", pos)
    if unit not in _BW_UNITS_BYTES_PER_NS:
        raise SpecError(f"bandwidth {text!r} needs a unit (GB/s, GiB/s, MB/s, ...)", pos)
    bw = value * _BW_UNITS_BYTES_PER_NS[unit]
    if bw <= 0:
        raise SpecError(f"bandwidth {text!r} must be positive", pos)
    return bw


def format_size_bytes(nbytes: int) -> str:
    """The shortest exact binary-unit form: 67108864 -> '64MiB', 1000 -> '1000B'."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"
