"""`XmlLimits`: how large an MSCCL-IR XML file may make collc's model of it.

Sizes in a file (``i_chunks``, ``o_chunks``, ``s_chunks``, ``nchunksperloop``) become buffers
of that many slots when the program is verified, so they are checked against these bounds
while the file is read, before anything is allocated; the error names the attribute and the
option that raises the bound. ``ngpus`` needs no bound of its own: the file must hold that many
``<gpu>`` elements.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class XmlLimits:
    """``max_file_bytes``: the size of the file; ``max_buffer_chunks``: one buffer of one GPU
    (and ``nchunksperloop``); ``max_total_chunks``: all buffers of all GPUs together."""

    max_file_bytes: int = 64 << 20
    max_buffer_chunks: int = 1 << 20
    max_total_chunks: int = 1 << 24
