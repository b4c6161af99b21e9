"""The XML document as data: what `emit` prints, `limits` checks and `deadlock` simulates."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class XStep:
    """One ``<step>``. Buffers are `Buffer` codes (0 i, 1 o, 2 s). ``recv_msg``/``send_msg``:
    the message it receives/sends (-1 for none); ``nodes``: the graph nodes it runs."""

    type: str
    srcbuf: int
    srcoff: int
    dstbuf: int
    dstoff: int
    cnt: int
    depid: int = -1
    deps: int = -1
    hasdep: bool = False
    recv_msg: int = -1
    send_msg: int = -1
    nodes: tuple[int, ...] = ()


@dataclass
class XTb:
    id: int
    send: int
    recv: int
    chan: int
    steps: list[XStep] = field(default_factory=list)


@dataclass
class XGpu:
    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[XTb] = field(default_factory=list)


@dataclass
class XAlgo:
    name: str
    proto: str
    nchannels: int
    nchunksperloop: int
    ngpus: int
    coll: str
    inplace: bool
    header_extras: bool
    min_bytes: int
    max_bytes: int
    gpus: list[XGpu] = field(default_factory=list)
