"""Races in a hardware program, checked independently of timing.

A hardware program is only as good as its waits: the replay runs one schedule, and a program
whose result depends on the schedule can pass it and fail on hardware whose links are a
little slower. `check_races` rebuilds the program as a `chakra_ir` Program (one rank per
NPU that holds one, an operation per command in stream order, a command's waits as its
dependencies, each flow as a message whose tag is the flow) and runs the verifier's race
check on it (`chakra_ir.verify.verify_races`): happens-before over every NPU's waits and the
messages (a send before its receive), and every two accesses to one slot of which one writes
must be ordered by it. A pair that is not is one `HwProgError` naming both commands, their
slots and the kind of conflict (read-after-write, write-after-read, write-after-write).

The access model is the replay's (docs/hardware.md, Replay): a send reads its slots from its
issue until it completes, a recv writes (or reduces into) its slots after its waits and its
send, copies and reductions act at their issue. In-place aliases of the input and output
buffers are resolved as the verifier resolves them.

A program that deadlocks by its waits and messages alone has no order to check; the replay
reports its deadlock.
"""

from __future__ import annotations

from typing import Any

from backends.hwprog.errors import HwProgError
from backends.hwprog.export import BUFFERS, HwProgram
from chakra_ir.collective import Buffer, collective_from_dict
from chakra_ir.program import OpKind, Program

_BUF = {name: i for i, name in enumerate(BUFFERS)}
_KIND = {"send": int(OpKind.SEND), "copy": int(OpKind.COPY), "reduce": int(OpKind.REDUCE)}


def as_program(hw: HwProgram) -> Program:
    """``hw`` (checked by `read_hwprog`) as a Program: rank ``r``'s operations are the
    commands of the NPU the placement puts it on, in stream order; op ``i`` is the ``i``-th
    command; a flow is a message with the flow as its tag."""
    h = hw.header
    placement: list[int] = h["placement"]
    rank_on = {n: r for r, n in enumerate(placement)}
    columns: dict[str, list[int]] = {
        k: []
        for k in ("kind", "peer", "src_buf", "src_index", "dst_buf", "dst_index", "count", "tag")
    }
    kind, peer, tag, count = columns["kind"], columns["peer"], columns["tag"], columns["count"]
    sb, si, db, di = (columns[k] for k in ("src_buf", "src_index", "dst_buf", "dst_index"))
    rank_offsets = [0]
    dep_offsets = [0]
    deps: list[int] = []
    sizes: list[tuple[int, int, int]] = []
    for n, doc in enumerate(hw.npus):
        if n not in rank_on and doc["commands"]:
            raise HwProgError(f"npus/{n}.json: NPU {n} holds no rank but runs commands")
    for n in placement:
        doc = hw.npus[n]
        pos: dict[int, int] = {}
        for i, c in enumerate(doc["commands"]):
            pos[c["id"]] = i
            op = c["op"]
            deps.extend(pos[w] for w in c["waits"])
            dep_offsets.append(len(deps))
            if op == "recv":
                kind.append(int(OpKind.RECV_REDUCE if c["reduce"] else OpKind.RECV))
                other = c["from"]
            else:
                kind.append(_KIND[op])
                other = c.get("to", -1)
            peer.append(rank_on.get(other, -1) if op in ("send", "recv") else -1)
            tag.append(int(c.get("flow", 0)))
            s: list[Any] | None = c.get("src")
            d: list[Any] | None = c.get("dst")
            sb.append(_BUF[s[0]] if s else -1)
            si.append(s[1] if s else -1)
            db.append(_BUF[d[0]] if d else -1)
            di.append(d[1] if d else -1)
            count.append((s or d or ("", 0, 0))[2])
        rank_offsets.append(rank_offsets[-1] + len(doc["commands"]))
        b = doc["buffers"]
        sizes.append((b["input"], b["output"], b["scratch"]))
    return Program.from_columns(
        collective_from_dict(h["collective"]),
        rank_offsets,
        columns,
        dep_offsets,
        deps,
        sizes,
        name=str(h.get("algorithm", "")),
    )


def _show(c: dict[str, Any]) -> str:
    slots = [f"{c[k][0]}[{c[k][1]}:{c[k][1] + c[k][2]}]" for k in ("src", "dst") if k in c]
    arrow = " -> ".join(slots)
    return f"{c['op']} {arrow}".rstrip()


def check_races(hw: HwProgram, folder: str = "") -> None:
    """Raise `HwProgError` at the first two conflicting slot accesses that the program's waits
    and messages leave unordered (see the module's docstring)."""
    from chakra_ir.verify import VerifyError, verify_races  # numpy-heavy, loaded on use

    placement: list[int] = hw.header["placement"]
    try:
        verify_races(as_program(hw))
    except VerifyError as e:
        if e.check == "progress":
            return  # a deadlock by waits and messages: the replay reports it
        race = e.race
        if race is None:
            raise HwProgError(f"{folder}: {e.message}") from None
        (ra, ia), (rb, ib) = race.first, race.second
        n = placement[rb]
        first = hw.npus[placement[ra]]["commands"][ia]
        second = hw.npus[n]["commands"][ib]
        where = f"{folder}/npus/{n}.json" if folder else f"npus/{n}.json"
        slot = f"{Buffer(race.buffer).label}[{race.index}]"
        other = (
            f"command {first['id']}" if ra == rb else f"npu {placement[ra]} command {first['id']}"
        )
        raise HwProgError(
            f"{where}: npu {n} command {second['id']} ({_show(second)}) and {other} "
            f"({_show(first)}) both access {slot} and no wait or message orders them "
            f"({race.kind}): a wait is missing"
        ) from None
