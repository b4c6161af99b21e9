"""The stable text form of a Program: one operation a line.

Golden tests compare it, ``collc inspect`` prints it, and `parse_program` reads it back, so
``parse_program(format_program(p)) == p``. The form::

    program ring-allreduce
    collective allreduce ranks=4 chunks=4 inplace=0 root=-1 placement=identity
    rank 0 input=4 output=4 scratch=0
      0 send to=1 src=input[0] tag=0
      1 recv from=3 dst=input[3] reduce tag=0 deps=0
      2 copy src=input[1:3] dst=output[1:3] deps=1 ch=0 tb=2 route=0>16>1
      3 flow-in flow=7 src=input[0:4]
      4 flow-out flow=7 dst=output[0:4] deps=3

A collective split into process groups adds ``groups=0,1;2,3`` (ranks of each group, groups
separated by ``;``) to its line. Slices are ``buffer[index]`` for one slot and ``buffer[start:end]`` for several. Custom
collectives add ``pre``/``post`` lines per rank listing each slot's contents as
``index:rankmask`` pairs joined by ``+`` (``-`` for an empty or unchecked slot).

An operation's line is `chakra_ir.ops.format_op` (re-exported here), which the Program also
uses to name an operation in error messages.
"""

from __future__ import annotations

from chakra_ir.collective import Buffer, Collective, CollectiveKind, Contents
from chakra_ir.ops import (
    NO_HINTS,
    Copy,
    FlowIn,
    FlowOut,
    Hints,
    Op,
    Recv,
    Reduce,
    Send,
    Slice,
)
from chakra_ir.ops import format_op as format_op
from chakra_ir.program import Program, ProgramBuilder
from topologies.errors import CollcError, SourcePos


def _format_contents(c: Contents | None) -> str:
    if c is None:
        return "-"
    return "+".join(f"{idx}:{mask:x}" for idx, mask in c)


def format_collective(c: Collective) -> str:
    placement = "identity" if not c.placement else ",".join(str(x) for x in c.placement)
    head = (
        f"collective {c.kind.value} ranks={c.num_ranks} chunks={c.chunks_per_rank} "
        f"inplace={int(c.inplace)} root={c.root} placement={placement}"
    )
    if c.groups:
        head += " groups=" + ";".join(",".join(str(r) for r in g) for g in c.groups)
    if c.name:
        head += f" name={c.name}"
    return head


def format_program(p: Program) -> str:
    """The whole program as text, ending in a newline."""
    c = p.collective
    lines = [f"program {p.name or '-'}", format_collective(c)]
    for r in range(p.num_ranks):
        i, o, s = (int(x) for x in p.buffer_sizes[r])
        lines.append(f"rank {r} input={i} output={o} scratch={s}")
        if c.kind is CollectiveKind.CUSTOM:
            lines.append("  pre " + " ".join(_format_contents(x) for x in c.custom_input[r]))
            lines.append("  post " + " ".join(_format_contents(x) for x in c.custom_output[r]))
        for local, op in enumerate(p.ops(r)):
            lines.append(f"  {local} {format_op(op)}")
    return "\n".join(lines) + "\n"


class TextFormError(CollcError):
    """A line of the text form that cannot be read."""


def _slice(text: str, pos: SourcePos) -> Slice:
    try:
        name, rest = text.split("[", 1)
        inner = rest.rstrip("]")
        if ":" in inner:
            a, b = inner.split(":")
            return Slice(Buffer.parse(name), int(a), int(b) - int(a))
        return Slice(Buffer.parse(name), int(inner), 1)
    except ValueError:
        raise TextFormError(f"cannot read slice {text!r}", pos) from None


def _contents(text: str) -> Contents | None:
    if text == "-":
        return None
    pairs = []
    for part in text.split("+"):
        idx, mask = part.split(":")
        pairs.append((int(idx), int(mask, 16)))
    return tuple(pairs)


def _fields(tokens: list[str]) -> dict[str, str]:
    out = {}
    for t in tokens:
        if "=" in t:
            k, v = t.split("=", 1)
            out[k] = v
        else:
            out[t] = ""
    return out


def parse_program(text: str, file: str = "<text>") -> Program:
    """Read the text form back into a Program. Errors name the line."""
    lines = text.splitlines()
    builder: ProgramBuilder | None = None
    name = ""
    head: dict[str, str] = {}
    pre: list[list[Contents | None]] = []
    post: list[list[Contents | None]] = []
    sizes: list[tuple[int, int, int]] = []
    pending: list[tuple[int, list[str], SourcePos]] = []
    rank = -1
    for lineno, line in enumerate(lines, 1):
        pos = SourcePos(file, lineno, 1, text=line)
        tokens = line.split()
        if not tokens or tokens[0].startswith("#"):
            continue
        try:
            if tokens[0] == "program":
                name = "" if tokens[1] == "-" else tokens[1]
            elif tokens[0] == "collective":
                head = _fields(tokens[2:])
                head["kind"] = tokens[1]
            elif tokens[0] == "rank":
                rank = int(tokens[1])
                f = _fields(tokens[2:])
                sizes.append((int(f["input"]), int(f["output"]), int(f["scratch"])))
            elif tokens[0] == "pre":
                pre.append([_contents(t) for t in tokens[1:]])
            elif tokens[0] == "post":
                post.append([_contents(t) for t in tokens[1:]])
            else:
                if rank < 0:
                    raise TextFormError("operation before any 'rank' line", pos)
                pending.append((rank, tokens, pos))
        except (IndexError, KeyError, ValueError) as e:
            raise TextFormError(f"cannot read line: {e}", pos) from None
    if not head:
        raise TextFormError("no 'collective' line", SourcePos(file))
    try:
        kind = CollectiveKind(head["kind"])
        placement = (
            ()
            if head["placement"] == "identity"
            else tuple(int(x) for x in head["placement"].split(","))
        )
        groups = (
            tuple(tuple(int(x) for x in g.split(",")) for g in head["groups"].split(";"))
            if "groups" in head
            else ()
        )
        if kind is CollectiveKind.CUSTOM:
            coll = Collective(
                kind,
                int(head["ranks"]),
                int(head["chunks"]),
                bool(int(head["inplace"])),
                placement=placement,
                name=head.get("name", ""),
                custom_input=tuple(tuple(x) for x in pre),
                custom_output=tuple(tuple(x) for x in post),
            )
        else:
            coll = Collective(
                kind,
                int(head["ranks"]),
                int(head["chunks"]),
                bool(int(head["inplace"])),
                int(head["root"]),
                placement,
                head.get("name", ""),
                groups=groups,
            )
    except (KeyError, ValueError) as e:
        raise TextFormError(f"cannot read the collective line: {e}", SourcePos(file)) from None
    builder = ProgramBuilder(coll, name=name)
    for r, tokens, pos in pending:
        try:
            expect = int(tokens[0])
            if expect != builder.num_ops(r):
                raise TextFormError(
                    f"operation id {expect} out of order (expected {builder.num_ops(r)})", pos
                )
            f = _fields(tokens[2:])
            deps = tuple(int(d) for d in f["deps"].split(",")) if "deps" in f else ()
            route = tuple(int(x) for x in f["route"].split(">")) if "route" in f else ()
            hints = Hints(
                route, int(f.get("ch", -1)), int(f.get("tb", -1)), int(f.get("after", -1))
            )
            if hints == Hints():
                hints = NO_HINTS
            op: Op
            if tokens[1] == "send":
                op = Send(int(f["to"]), _slice(f["src"], pos), int(f["tag"]), deps, hints)
            elif tokens[1] == "recv":
                op = Recv(
                    int(f["from"]), _slice(f["dst"], pos), int(f["tag"]), "reduce" in f, deps, hints
                )
            elif tokens[1] == "copy":
                op = Copy(_slice(f["src"], pos), _slice(f["dst"], pos), deps, hints)
            elif tokens[1] == "reduce":
                op = Reduce(_slice(f["src"], pos), _slice(f["dst"], pos), deps, hints)
            elif tokens[1] == "flow-in":
                op = FlowIn(int(f["flow"]), _slice(f["src"], pos), deps, hints)
            elif tokens[1] == "flow-out":
                op = FlowOut(int(f["flow"]), _slice(f["dst"], pos), deps, hints)
            else:
                raise TextFormError(f"unknown operation {tokens[1]!r}", pos)
            builder.add(r, op)
        except (IndexError, KeyError, ValueError) as e:
            raise TextFormError(f"cannot read operation: {e}", pos) from None
    program = builder.build()
    if len(sizes) != program.num_ranks:
        raise TextFormError(
            f"{len(sizes)} rank lines for {program.num_ranks} ranks", SourcePos(file)
        )
    program.buffer_sizes[:] = sizes
    return program
