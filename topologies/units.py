"""Quantities with units, as specs and flags write them.

Inside collc sizes are bytes, times ns and bandwidths bytes per ns. Unit spellings are exact
(case matters, since ``b`` is a bit and ``B`` a byte):

- sizes: ``B``, ``KB``, ``MB``, ``GB``, ``TB`` (powers of 1000), ``KiB``, ``MiB``, ``GiB``,
  ``TiB`` (powers of 1024); a bare number is bytes;
- bandwidths in bytes: ``B/s``, ``KB/s``, ``MB/s``, ``GB/s``, ``TB/s`` (``GB/s`` = 1e9 B/s)
  and ``KiB/s``, ``MiB/s``, ``GiB/s``, ``TiB/s`` (``GiB/s`` = 2^30 B/s);
- bandwidths in bits: ``b/s``, ``Kb/s``, ``Mb/s``, ``Gb/s``, ``Tb/s`` and ``bps``, ``Kbps``,
  ``Mbps``, ``Gbps``, ``Tbps`` (``Gb/s`` = ``Gbps`` = 1e9 bits/s = 0.125 GB/s);
- times: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``.

Any other spelling (``gb/s``, ``GBps``, ``Gib/s``, ``NS``) is refused with the accepted ones:
a wrong guess would be an error of 8x or 1000x. (ASTRA-sim's YAML says GB/s but means 2^30:
its reader converts at that boundary, not here.)

Every value is read exactly (no float overflow or underflow on ``1e400`` or 5,000 digits) and
must lie in a stated range, so that every time collc computes stays exact in whole
picoseconds: sizes up to `MAX_SIZE_BYTES`, bandwidths from `MIN_BANDWIDTH_BYTES_PER_NS` to
`MAX_BANDWIDTH_BYTES_PER_NS`, times up to `MAX_TIME_NS`. Numbers longer than `MAX_NUMBER_CHARS`
characters are refused before they are read.
"""

from __future__ import annotations

import os
import re
from fractions import Fraction

from topologies.errors import SourcePos, SpecError

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

MAX_NUMBER_CHARS = 40
"""Longest number text read (digits, point and exponent)."""

MAX_SIZE_BYTES = 1 << 53
"""Largest size (8 PiB): every byte count stays exact as a float."""

MIN_BANDWIDTH_BYTES_PER_NS = 1e-6
"""Slowest link accepted: 1 KB/s (1e3 B/s)."""

MAX_BANDWIDTH_BYTES_PER_NS = 1e9
"""Fastest link accepted: 1 EB/s (1e18 B/s)."""

MAX_TIME_NS = 1e12
"""Longest time accepted in a spec or flag: 1,000 s."""

MAX_EXACT_PS = 2**53
"""Simulated times are whole picoseconds; below this they are exact in a float too."""


def env_limit(variable: str, default: int) -> int:
    """A limit that the environment may change: ``variable``'s value when it is a positive
    integer (at most 18 digits), else ``default``."""
    text = os.environ.get(variable, "").strip()
    if text.isdigit() and len(text) <= 18 and int(text) > 0:
        return int(text)
    return default


_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}
_TIME_UNITS_NS = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}
_BW_UNITS_BYTES_PER_S: dict[str, Fraction] = {
    "B/s": Fraction(1),
    "KB/s": Fraction(10**3),
    "MB/s": Fraction(10**6),
    "GB/s": Fraction(10**9),
    "TB/s": Fraction(10**12),
    "KiB/s": Fraction(2**10),
    "MiB/s": Fraction(2**20),
    "GiB/s": Fraction(2**30),
    "TiB/s": Fraction(2**40),
}
for _prefix, _scale in (("", 1), ("K", 10**3), ("M", 10**6), ("G", 10**9), ("T", 10**12)):
    _BW_UNITS_BYTES_PER_S[f"{_prefix}b/s"] = Fraction(_scale, 8)
    _BW_UNITS_BYTES_PER_S[f"{_prefix}bps"] = Fraction(_scale, 8)

BANDWIDTH_UNITS = tuple(_BW_UNITS_BYTES_PER_S)
"""Every bandwidth unit accepted, exactly as it must be written."""


def _split(text: str, what: str, pos: SourcePos | None) -> tuple[Fraction, str]:
    stripped = text.strip()
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-zµ/]*)", stripped)
    if m is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise SpecError(f"cannot read {what} {shown!r}", pos)
    number = m.group(1)
    if len(number) > MAX_NUMBER_CHARS:
        raise SpecError(
            f"{what} {number[:12]}... has {len(number)} characters (at most {MAX_NUMBER_CHARS})",
            pos,
        )
    _, _, exponent = number.lower().partition("e")
    if exponent and abs(int(exponent)) > 400:
        raise SpecError(f"{what} {number!r} is out of range", pos)
    return Fraction(number), m.group(2)


def _shown(text: str) -> str:
    text = text.strip()
    return text if len(text) <= 40 else text[:37] + "..."


def parse_size_bytes(text: str, pos: SourcePos | None = None) -> int:
    """``64MiB`` -> 67108864. A bare number is bytes. Must be a positive whole number of bytes
    no larger than `MAX_SIZE_BYTES`; units as in the module docstring, exactly spelled."""
    value, unit = _split(text, "size", pos)
    if unit not in _SIZE_UNITS:
        raise SpecError(
            f"unknown size unit {unit!r} in {_shown(text)!r} (use B, KB, MB, GB, TB, KiB, MiB, "
            "GiB, TiB)",
            pos,
        )
    nbytes = value * _SIZE_UNITS[unit]
    if nbytes <= 0 or nbytes.denominator != 1:
        raise SpecError(f"size {_shown(text)!r} must be a positive whole number of bytes", pos)
    if nbytes > MAX_SIZE_BYTES:
        raise SpecError(
            f"size {_shown(text)!r} is larger than the largest size collc handles (2^53 bytes)",
            pos,
        )
    return int(nbytes)


def parse_time_ns(text: str, pos: SourcePos | None = None) -> float:
    """``500ns`` -> 500.0, ``0.5us`` -> 500.0. A unit is required; the value must be between
    0 and `MAX_TIME_NS`."""
    value, unit = _split(text, "time", pos)
    if unit not in _TIME_UNITS_NS:
        raise SpecError(f"time {_shown(text)!r} needs a unit (ns, us, ms, s)", pos)
    ns = value * _TIME_UNITS_NS[unit]
    if ns > MAX_TIME_NS:
        raise SpecError(
            f"time {_shown(text)!r} is longer than {MAX_TIME_NS / 1e9:.0f} s, the longest collc "
            "accepts",
            pos,
        )
    return float(value) * float(_TIME_UNITS_NS[unit])


def parse_bandwidth_bytes_per_ns(text: str, pos: SourcePos | None = None) -> float:
    """``50GB/s`` -> 50.0 B/ns; ``50GiB/s`` -> 53.687 B/ns; ``400Gb/s`` -> 50.0 B/ns. A unit
    is required (exactly spelled); the value must lie between 1 KB/s and 1 EB/s."""
    value, unit = _split(text, "bandwidth", pos)
    if unit not in _BW_UNITS_BYTES_PER_S:
        problem = "needs a unit" + (f": {unit!r} is not one" if unit else "")
        raise SpecError(
            f"bandwidth {_shown(text)!r} {problem} (bytes: GB/s, GiB/s, MB/s, TB/s, ...; "
            "bits: Gb/s or Gbps, ...)",
            pos,
        )
    bw = value * _BW_UNITS_BYTES_PER_S[unit] / 10**9
    if bw <= 0:
        raise SpecError(f"bandwidth {_shown(text)!r} must be positive", pos)
    if bw < Fraction(MIN_BANDWIDTH_BYTES_PER_NS):
        raise SpecError(
            f"bandwidth {_shown(text)!r} is below 1KB/s, the slowest link collc accepts "
            "(its transfer times would not be exact)",
            pos,
        )
    if bw > Fraction(MAX_BANDWIDTH_BYTES_PER_NS):
        raise SpecError(
            f"bandwidth {_shown(text)!r} is above 1e18 B/s, the fastest link collc accepts", pos
        )
    # Computed as value x (unit in B/ns), both floats, so a spec reads back to the same float
    # that `topologies.spec.format_bandwidth` writes.
    return float(value) * float(_BW_UNITS_BYTES_PER_S[unit] / 10**9)


def check_time_range(
    nbytes: float, slowest_bytes_per_ns: float, longest_ns: float, hops: int
) -> None:
    """Refuse a size that no collc time could hold exactly on a network.

    Moving ``nbytes`` over ``hops`` links of the slowest bandwidth and the longest latency must
    take under 2^53 ps (`MAX_EXACT_PS`): beyond it, picosecond times are no longer exact in a
    float and a schedule could not be planned or simulated reliably. Raises SpecError naming
    the values.
    """
    if slowest_bytes_per_ns <= 0:
        return
    worst_ns = hops * (nbytes / slowest_bytes_per_ns + longest_ns)
    if worst_ns * 1000 >= MAX_EXACT_PS:
        raise SpecError(
            f"{format_size_bytes(int(nbytes))} over {hops} hops of the slowest link "
            f"({slowest_bytes_per_ns * 1e9:.3g} B/s, latency {longest_ns:.3g} ns) would take "
            f"{worst_ns / 1e9:.3g} s, beyond the {MAX_EXACT_PS / 1e12:.0f} s collc can time "
            "exactly: use faster links or a smaller size"
        )


def format_size_bytes(nbytes: int) -> str:
    """The shortest exact binary-unit form: 67108864 -> '64MiB', 1000 -> '1000B'."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"
