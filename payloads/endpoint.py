"""The work at a message's endpoints: format conversion and sparse merges, as compute time.

The model, charged on the receiving rank after the message has arrived (a Recv's work; the
task graph has no place before a Send, so the sender's encoding is charged there too: it
delays the data's next use by the same time but never holds a link):

- a **dense** message costs what it costs without a payload: a plain receive nothing, a
  reducing receive the cost model's lane-wise reduction;
- a message in a **sparse format** ``f`` of ``b`` wire bytes is encoded at the sender and
  decoded at the receiver: ``2 b / convert`` (``convert`` = 100 GB/s in software by default;
  ``--converter hw``, the accelerator's format converter, is `HW_CONVERTER_SPEEDUP` = 4x
  faster: Qin et al., IPDPS 2021);
- a **reducing** receive of a sparse message merges two sparse operands (an index merge, not a
  lane-wise add): ``(b + h) / merge``, ``h`` the bytes of what the receiver holds in the same
  format (``merge`` = 200 GB/s by default; merges run in software under both converters).

``convert`` and ``merge`` are keys of the payload spec (``convert=100GB/s``).
"""

from __future__ import annotations

from payloads.describe import HW_CONVERTER_SPEEDUP, Payload

CONVERTERS = ("sw", "hw")


def endpoint_ns(
    payload: Payload, fmt: str, nbytes: int, held_bytes: int, reduce: bool, converter: str
) -> float:
    """The receiving rank's work for one message (see the module docstring)."""
    if fmt == "dense":
        return 0.0
    rate = payload.convert_bytes_per_ns * (HW_CONVERTER_SPEEDUP if converter == "hw" else 1.0)
    ns = 2.0 * nbytes / rate
    if reduce:
        ns += (nbytes + held_bytes) / payload.merge_bytes_per_ns
    return ns
