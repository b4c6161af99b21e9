"""Parsing MSCCL-IR XML into a checked model of the file, with source positions.

`xml.etree.ElementTree` drops line numbers, so the file is read with `xml.parsers.expat`, which
reports where every element starts. `parse_algo` returns an `AlgoEl`: the ``<algo>`` header,
its ``<gpu>`` elements with their ``<tb>`` threadblocks and ``<step>`` steps, every attribute
converted and range-checked, every element carrying its `SourcePos`. Comments, the XML
declaration and whitespace are ignored, and so are attributes the runtime does not read
(``redop``, ``rtype``...). TACCL's ``<copy i_off o_off>`` elements inside a ``<gpu>`` are kept.

Checks here are local to one element (types, buffers, offsets inside the GPU's buffers, peers
in range, dense ids and step numbers); consistency across elements (matching, dependencies)
is checked by `mscclang_frontend.xml.lower`.
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass, field

from chakra_ir.collective import Buffer
from mscclang_frontend.xml import format as fmt
from mscclang_frontend.xml.errors import XmlError
from mscclang_frontend.xml.limits import XmlLimits
from topologies.errors import SourcePos


@dataclass
class Element:
    """One XML element: tag, attributes in file order, where it starts, its children."""

    tag: str
    attrs: dict[str, str]
    pos: SourcePos
    children: list[Element] = field(default_factory=list)


def parse_tree(text: str, filename: str) -> Element:
    """The element tree of ``text``; raises `XmlError` at the position expat reports."""
    lines = text.splitlines()

    def where(line: int, column: int) -> SourcePos:
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        return SourcePos(filename, line, column, text=src)

    parser = xml.parsers.expat.ParserCreate()
    parser.ordered_attributes = True
    stack: list[Element] = []
    roots: list[Element] = []

    def start(tag: str, attrs: list[str]) -> None:
        pos = where(parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
        pairs = dict(zip(attrs[::2], attrs[1::2], strict=True))
        el = Element(tag, pairs, pos)
        if stack:
            stack[-1].children.append(el)
        else:
            roots.append(el)
        stack.append(el)

    def end(tag: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if data.strip():
            pos = where(parser.CurrentLineNumber, parser.CurrentColumnNumber + 1)
            raise XmlError(f"unexpected text {data.strip()[:20]!r}", pos)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as e:
        msg = xml.parsers.expat.errors.messages.get(e.code, str(e))
        raise XmlError(f"malformed XML: {msg}", where(e.lineno, e.offset + 1)) from None
    if not roots:
        raise XmlError("no <algo> element", SourcePos(filename, 1, 1))
    return roots[0]


# -- the model --------------------------------------------------------------------------------


@dataclass
class StepEl:
    """A ``<step>``; ``index`` is its position in the threadblock."""

    index: int
    type: fmt.StepType
    srcbuf: Buffer | None
    srcoff: int
    dstbuf: Buffer | None
    dstoff: int
    cnt: int
    depid: int
    deps: int
    hasdep: bool
    pos: SourcePos


@dataclass
class TbEl:
    id: int
    send: int
    recv: int
    chan: int
    steps: list[StepEl]
    pos: SourcePos


@dataclass
class CopyEl:
    """TACCL's ``<copy i_off o_off>``: input slot -> output slot before the algorithm runs."""

    i_off: int
    o_off: int
    pos: SourcePos


@dataclass
class GpuEl:
    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[TbEl]
    copies: list[CopyEl]
    pos: SourcePos

    def size(self, buffer: Buffer) -> int:
        return (self.i_chunks, self.o_chunks, self.s_chunks)[buffer.value]


@dataclass
class AlgoEl:
    """The whole file. ``extras_present``: the header had outofplace/minBytes/maxBytes."""

    name: str
    proto: str
    nchannels: int
    nchunksperloop: int
    ngpus: int
    coll: str
    inplace: bool
    min_bytes: int
    max_bytes: int
    extras_present: bool
    gpus: list[GpuEl]
    pos: SourcePos


class _Reader:
    """Attribute access for one element with position-carrying errors."""

    def __init__(self, el: Element) -> None:
        self.el = el

    def fail(self, message: str) -> XmlError:
        return XmlError(message, self.el.pos)

    def has(self, name: str) -> bool:
        return name in self.el.attrs

    def text(self, name: str, default: str | None = None) -> str:
        if name not in self.el.attrs:
            if default is not None:
                return default
            raise self.fail(f"<{self.el.tag}> lacks the attribute {name!r}")
        return self.el.attrs[name]

    def int(self, name: str, default: int | None = None, low: int | None = None) -> int:
        if name not in self.el.attrs and default is not None:
            return default
        raw = self.text(name)
        try:
            value = int(raw.strip())
        except ValueError:
            raise self.fail(
                f"attribute {name}={raw!r} of <{self.el.tag}> is not an integer"
            ) from None
        if low is not None and value < low:
            raise self.fail(f"attribute {name}={value} of <{self.el.tag}> is below {low}")
        return value

    def flag(self, name: str, default: bool | None = None) -> bool:
        value = self.int(name, None if default is None else int(default))
        if value not in (0, 1):
            raise self.fail(f"attribute {name}={value} of <{self.el.tag}> must be 0 or 1")
        return value == 1

    def buffer(self, name: str) -> Buffer:
        raw = self.text(name)
        if raw not in fmt.BUFFER_LETTERS:
            raise self.fail(f"attribute {name}={raw!r} of <step> is not a buffer (i, o or s)")
        return fmt.BUFFER_LETTERS[raw]


def _children(el: Element, tag: str, allowed: tuple[str, ...] = ()) -> list[Element]:
    out = []
    for child in el.children:
        if child.tag == tag:
            out.append(child)
        elif child.tag not in allowed:
            raise XmlError(f"unexpected element <{child.tag}> inside <{el.tag}>", child.pos)
    return out


def parse_algo(text: str, filename: str, limits: XmlLimits | None = None) -> AlgoEl:
    """Parse and check one MSCCL-IR XML document; raises `XmlError` with the position.

    Buffer sizes beyond ``limits`` are refused here, before any buffer exists.
    """
    lim = limits or XmlLimits()
    if len(text) > lim.max_file_bytes:
        raise XmlError(
            f"the file has {len(text):,} characters, more than the limit of "
            f"{lim.max_file_bytes:,} (raise it with --max-xml-bytes)",
            SourcePos(filename),
        )
    root = parse_tree(text, filename)
    if root.tag != "algo":
        raise XmlError(f"the root element is <{root.tag}>, expected <algo>", root.pos)
    a = _Reader(root)
    ngpus = a.int("ngpus", low=1)
    proto = a.text("proto", "Simple")
    if proto not in fmt.PROTOCOLS:
        raise a.fail(f"unknown protocol proto={proto!r} (expected {', '.join(fmt.PROTOCOLS)})")
    gpu_els = _children(root, "gpu")
    seen: dict[int, Element] = {}
    for el in gpu_els:
        gid = _Reader(el).int("id", low=0)
        if gid in seen:
            raise XmlError(f"gpu {gid} appears twice (first at line {seen[gid].pos.line})", el.pos)
        seen[gid] = el
    gpus = [_gpu(g, ngpus, lim) for g in gpu_els]
    if len(gpus) != ngpus:
        missing = next(i for i in range(len(gpus) + 1) if i not in seen)
        raise a.fail(f'ngpus={ngpus} but there is no <gpu id="{missing}">')
    total = sum(g.i_chunks + g.o_chunks + g.s_chunks for g in gpus)
    if total > lim.max_total_chunks:
        raise a.fail(
            f"the buffers of all gpus hold {total:,} chunks, more than the limit of "
            f"{lim.max_total_chunks:,} (raise it with --max-chunks)"
        )
    gpus.sort(key=lambda g: g.id)
    max_chan = max((tb.chan for g in gpus for tb in g.tbs), default=-1)
    nchannels = a.int("nchannels", max_chan + 1, low=0)
    if max_chan >= nchannels:
        tb = next(tb for g in gpus for tb in g.tbs if tb.chan == max_chan)
        raise XmlError(f"threadblock uses channel {max_chan} but nchannels={nchannels}", tb.pos)
    largest = max((max(g.i_chunks, g.o_chunks) for g in gpus), default=1)
    nchunks = a.int("nchunksperloop", largest, low=1)
    if nchunks > max(lim.max_buffer_chunks, largest):
        raise a.fail(
            f"nchunksperloop={nchunks:,} is more than the limit of {lim.max_buffer_chunks:,} "
            "chunks per buffer (raise it with --max-chunks)"
        )
    extras = a.has("outofplace") or a.has("minBytes") or a.has("maxBytes")
    inplace = a.flag("inplace", False)
    if a.has("outofplace"):
        a.flag("outofplace")
    min_bytes = a.int("minBytes", 0, low=0)
    max_bytes = a.int("maxBytes", 0, low=0)
    return AlgoEl(
        name=a.text("name", ""),
        proto=proto,
        nchannels=nchannels,
        nchunksperloop=nchunks,
        ngpus=ngpus,
        coll=a.text("coll").strip(),
        inplace=inplace,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        extras_present=extras,
        gpus=gpus,
        pos=root.pos,
    )


def _gpu(el: Element, ngpus: int, lim: XmlLimits) -> GpuEl:
    r = _Reader(el)
    gid = r.int("id", low=0)
    if gid >= ngpus:
        raise r.fail(f"gpu id {gid} is not below ngpus={ngpus}")
    for name in ("i_chunks", "o_chunks", "s_chunks"):
        size = r.int(name, low=0)
        if size > lim.max_buffer_chunks:
            raise r.fail(
                f"gpu {gid} has {name}={size:,}, more than the limit of "
                f"{lim.max_buffer_chunks:,} chunks per buffer (raise it with --max-chunks)"
            )
    gpu = GpuEl(
        gid,
        r.int("i_chunks", low=0),
        r.int("o_chunks", low=0),
        r.int("s_chunks", low=0),
        [],
        [],
        el.pos,
    )
    for c in _children(el, "copy", ("tb",)):
        cr = _Reader(c)
        copy = CopyEl(cr.int("i_off", low=0), cr.int("o_off", low=0), c.pos)
        if copy.i_off >= gpu.i_chunks or copy.o_off >= gpu.o_chunks:
            raise cr.fail(
                f"copy i[{copy.i_off}] -> o[{copy.o_off}] is outside the buffers "
                f"(i_chunks={gpu.i_chunks}, o_chunks={gpu.o_chunks})"
            )
        gpu.copies.append(copy)
    tbs = [_tb(t, gpu, ngpus) for t in _children(el, "tb", ("copy",))]
    by_id: dict[int, TbEl] = {}
    for tb in tbs:
        if tb.id in by_id:
            raise XmlError(
                f"threadblock {tb.id} appears twice on gpu {gid} "
                f"(first at line {by_id[tb.id].pos.line})",
                tb.pos,
            )
        by_id[tb.id] = tb
    for i in range(len(tbs)):
        if i not in by_id:
            last = max(by_id)
            raise XmlError(
                f"threadblock ids on gpu {gid} must be 0..{len(tbs) - 1}: {i} is missing",
                by_id[last].pos,
            )
    gpu.tbs = sorted(tbs, key=lambda t: t.id)
    return gpu


def _tb(el: Element, gpu: GpuEl, ngpus: int) -> TbEl:
    r = _Reader(el)
    tb = TbEl(
        r.int("id", low=0),
        r.int("send", low=-1),
        r.int("recv", low=-1),
        r.int("chan", low=0),
        [],
        el.pos,
    )
    for peer, what in ((tb.send, "send"), (tb.recv, "recv")):
        if peer >= ngpus:
            raise r.fail(f"{what} peer {peer} is not below ngpus={ngpus}")
        if peer == gpu.id:
            raise r.fail(f"threadblock {tb.id} of gpu {gpu.id} names itself as its {what} peer")
    for i, s in enumerate(_children(el, "step")):
        tb.steps.append(_step(s, i, tb, gpu))
    return tb


def _step(el: Element, index: int, tb: TbEl, gpu: GpuEl) -> StepEl:
    r = _Reader(el)
    s = r.int("s")
    if s != index:
        raise r.fail(f"step s={s} is step {index} of its threadblock (s must count from 0)")
    name = r.text("type")
    if name not in fmt.STEP_TYPES:
        known = ", ".join(fmt.STEP_TYPES)
        raise r.fail(f"unknown step type {name!r} (expected one of {known})")
    t = fmt.STEP_TYPES[name]
    depid = r.int("depid", low=-1)
    deps = r.int("deps", low=-1)
    if depid >= 0 and deps < 0:
        raise r.fail(f"depid={depid} needs a step number in deps, got deps={deps}")
    hasdep = r.flag("hasdep")
    if t.name == "nop":
        for attr in ("srcbuf", "srcoff", "dstbuf", "dstoff", "cnt"):
            r.text(attr)
        return StepEl(index, t, None, -1, None, -1, 0, depid, deps, hasdep, el.pos)
    if t.send and tb.send < 0:
        raise r.fail(f'a {name} step sends, but threadblock {tb.id} has send="-1"')
    if t.recv and tb.recv < 0:
        raise r.fail(f'a {name} step receives, but threadblock {tb.id} has recv="-1"')
    cnt = r.int("cnt")
    if cnt < 1:
        raise r.fail(f"a {name} step must move at least one chunk (cnt={cnt})")
    srcbuf, dstbuf = r.buffer("srcbuf"), r.buffer("dstbuf")
    srcoff, dstoff = r.int("srcoff"), r.int("dstoff")
    step = StepEl(index, t, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep, el.pos)
    return step


def check_local_operands(step: StepEl, gpu: GpuEl, *, src: bool, dst: bool) -> None:
    """Raise unless the step's local operands lie inside the GPU's declared buffers."""
    for used, buf, off, what in (
        (src, step.srcbuf, step.srcoff, "source"),
        (dst, step.dstbuf, step.dstoff, "destination"),
    ):
        if not used or buf is None:
            continue
        size = gpu.size(buf)
        if off < 0 or off + step.cnt > size:
            hint = ""
            if what == "source" and step.type.name in ("rrc", "rrcs"):
                hint = (
                    "; msccl-tools writes the sender's slot here (the srcbuf trap): read "
                    "with srcbuf_trap=True if this file comes from MSCCLang"
                )
            raise XmlError(
                f"{step.type.name} {what} {buf.short}[{off}:{off + step.cnt}] is outside the "
                f"{buf.label} buffer of gpu {gpu.id} ({buf.short}_chunks={size}){hint}",
                step.pos,
            )
