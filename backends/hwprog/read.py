"""`read_hwprog`: load a hardware-program folder and check everything a replayer relies on.

Checks, after each file's header and JSON Schema (`backends.hwprog.format`):

- the header's NPU list names ``npus/<n>.json`` for every NPU ``0..num_npus-1``, and every
  link joins two NPUs through a port that exists;
- per NPU: the file holds that NPU and the rank the header places there; command ids are
  unique and every command waits only for commands listed before it (``after`` likewise names
  an earlier send); slots lie inside the NPU's buffers; ``bytes`` is slots x ``chunk_bytes``;
  a copy or reduce moves as many slots as it reads;
- per send: its ports lead, link by link, from the NPU to ``to`` (a port a router lacks is a
  route leaving the topology), one VC per hop, each below ``num_vcs``;
- every flow ``0..messages-1`` has exactly one send and one receive, which name each other's
  NPUs and move the same bytes;
- the routers' tables hold exactly the hops of the source-routed flows, with their ports and
  VCs;
- the header agrees with its links and routes (`backends.hwprog.consistency`: dims, failed
  links, VC rule, ``dor`` routes, the deadlock record, the counts), and the NPU folder holds
  no file the header does not list;
- no two conflicting slot accesses are left unordered by the waits and messages
  (`backends.hwprog.races`), so the result does not depend on timing.

Every failure is one `HwProgError` line naming the file, the NPU and the command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.hwprog.consistency import check_grid, check_routes
from backends.hwprog.errors import HwProgError
from backends.hwprog.export import FORMAT, HEADER_FILE, NPU_DIR, HwProgram
from backends.hwprog.format import JSON_INT_LIMIT as _LIM
from backends.hwprog.races import check_races
from chakra_ir.collective import Collective, collective_from_dict
from topologies.errors import CollcError

FULL_SCHEMA_COMMANDS = 2_000
"""Up to this many commands, `read_hwprog` validates the NPU files with jsonschema too."""


def read_hwprog(folder: Path | str, *, schema: bool | None = None) -> HwProgram:
    """The hardware program in ``folder``, checked (see the module's docstring).

    The header and the routers are always validated against the JSON Schema. The NPU files
    are checked by `check_command`, a transcription of the schema's command definitions
    (jsonschema takes about half a millisecond a command, minutes for a million), and also
    validated by jsonschema when ``schema`` is True, or None (the default) and the program has
    at most `FULL_SCHEMA_COMMANDS` commands. Either way a failure names the JSON path.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise HwProgError(f"{folder}: no such folder")
    hpath = folder / HEADER_FILE
    header = FORMAT.read(hpath, "header")
    if schema is None:
        schema = header["counts"]["commands"] <= FULL_SCHEMA_COMMANDS
    n_npus = header["num_npus"]
    where = str(hpath)
    shape = header["shape"]
    prod = 1
    for k in shape:
        prod *= k
    if prod != n_npus or len(header["dims"]) != len(shape):
        raise HwProgError(f"{where}: $.num_npus: {n_npus} NPUs do not fill the shape {shape}")
    if header["num_ports"] != 1 + 2 * len(shape):
        raise HwProgError(
            f"{where}: $.num_ports: {header['num_ports']} for {len(shape)} dimensions"
        )
    if len(header["npus"]) != n_npus:
        raise HwProgError(f"{where}: $.npus: {len(header['npus'])} entries for {n_npus} NPUs")
    by_port: dict[tuple[int, int], int] = {}
    for i, lk in enumerate(header["links"]):
        s, pt, d = lk["src"], lk["port"], lk["dst"]
        if s >= n_npus or d >= n_npus or pt >= header["num_ports"] or (s, pt) in by_port:
            raise HwProgError(
                f"{where}: $.links[{i}]: link {s}>{d} port {pt} is not a link of the grid"
            )
        by_port[(s, pt)] = d
    grid = check_grid(header, where)
    placement = header["placement"]
    rank_on = {n: r for r, n in enumerate(placement)}
    for n, e in enumerate(header["npus"]):
        if e["npu"] != n or e["file"] != f"npus/{n}.json":
            raise HwProgError(f"{where}: $.npus[{n}]: entry for NPU {e['npu']} ({e['file']})")
        if e["rank"] != rank_on.get(n):
            raise HwProgError(
                f"{where}: $.npus[{n}].rank: {e['rank']}, placement says {rank_on.get(n)}"
            )

    coll = header["collective"]
    if coll.get("num_ranks") != len(placement):
        raise HwProgError(
            f"{where}: $.collective.num_ranks: {coll.get('num_ranks')!r} for "
            f"{len(placement)} placed ranks"
        )
    try:
        collective = collective_from_dict(coll)
    except CollcError as e:
        raise HwProgError(f"{where}: $.collective: {e.message}") from None

    rpath = folder / header["routers_file"]
    routers = FORMAT.read(rpath, "routers_file")
    if [r["router"] for r in routers["routers"]] != list(range(n_npus)):
        raise HwProgError(f"{rpath}: $.routers: one entry per router 0..{n_npus - 1}, in order")

    _check_no_strays(folder, header)
    sends: dict[int, tuple[int, int, dict[str, Any]]] = {}
    recvs: dict[int, tuple[int, int, dict[str, Any]]] = {}
    npus: list[dict[str, Any]] = []
    for n in range(n_npus):
        path = folder / header["npus"][n]["file"]
        doc = FORMAT.load(path)
        if schema:
            FORMAT.check(doc, str(path), "npu_file")
        else:
            FORMAT.check_header(doc, str(path))
            meta = {k: v for k, v in doc.items() if k != "commands"}
            FORMAT.check({**meta, "commands": []}, str(path), "npu_file")
            cmds = doc.get("commands")
            if not isinstance(cmds, list):
                raise HwProgError(f"{path}: $.commands: not an array")
            for i, c in enumerate(cmds):
                if not command_ok(c):
                    check_command(c, f"{path}: $.commands[{i}]")
        _check_npu(doc, n, header, collective, by_port, sends, recvs, str(path))
        npus.append(doc)

    messages = header["counts"]["messages"]
    for f in range(messages):
        if f not in sends or f not in recvs:
            side = "send" if f not in sends else "receive"
            raise HwProgError(f"{where}: flow {f} has no {side}")
    extra = (set(sends) | set(recvs)) - set(range(messages))
    if extra:
        f = min(extra)
        n, c, _ = sends.get(f) or recvs[f]
        raise HwProgError(
            f"{folder / header['npus'][n]['file']}: npu {n} command {c}: flow {f} is beyond "
            f"the header's {messages} messages"
        )
    for f, (n, c, s) in sends.items():
        m, rc, r = recvs[f]
        if s["to"] != m or r["from"] != n or s["bytes"] != r["bytes"]:
            raise HwProgError(
                f"{folder / header['npus'][n]['file']}: npu {n} command {c}: flow {f} goes to "
                f"NPU {s['to']} with {s['bytes']} bytes, "
                f"but NPU {m} command {rc} receives it from NPU {r['from']} with {r['bytes']} bytes"
            )
    pk = header["packet_bytes"]
    packets = hops = 0
    for _n, _c, snd in sends.values():
        k = -(-snd["bytes"] // pk)
        packets += k
        hops += k * len(snd["ports"])
    counts = header["counts"]
    if (counts["packets"], counts["packet_hops"]) != (packets, hops):
        raise HwProgError(
            f"{where}: $.counts: {counts['packets']} packets and {counts['packet_hops']} "
            f"packet-hops, but the sends make {packets} and {hops}"
        )
    _check_routers(routers, sends, by_port, str(rpath))
    total = sum(len(doc["commands"]) for doc in npus)
    files = [str(folder / e["file"]) for e in header["npus"]]
    check_routes(header, grid, sends, total, where, files)
    hw = HwProgram(header, routers, npus)
    check_races(hw, str(folder))
    return hw


_INT = "int"
_POS = "pos"
_INTS = "ints"
_PORTS = "ports"
_SLOTS = "slots"
_BOOL = "bool"
_ROUTING = "routing"
_COMMON = {"id": _INT, "op": "", "waits": _INTS}
_FIELDS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "send": (
        {
            **_COMMON,
            "bytes": _POS,
            "src": _SLOTS,
            "to": _INT,
            "flow": _INT,
            "routing": _ROUTING,
            "ports": _PORTS,
            "vcs": _INTS,
        },
        {"after": _INT},
    ),
    "recv": (
        {**_COMMON, "bytes": _POS, "dst": _SLOTS, "from": _INT, "flow": _INT, "reduce": _BOOL},
        {},
    ),
    "copy": ({**_COMMON, "src": _SLOTS, "dst": _SLOTS}, {}),
    "reduce": ({**_COMMON, "src": _SLOTS, "dst": _SLOTS}, {}),
}


def _is_int(x: object, minimum: int) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and minimum <= x < _LIM


def _value_ok(kind: str, v: object) -> bool:
    if kind == _INT:
        return _is_int(v, 0)
    if kind == _POS:
        return _is_int(v, 1)
    if kind == _BOOL:
        return isinstance(v, bool)
    if kind == _ROUTING:
        return v in ("dor", "source")
    if kind == _INTS:
        return isinstance(v, list) and all(_is_int(x, 0) for x in v)
    if kind == _PORTS:
        return isinstance(v, list) and len(v) > 0 and all(_is_int(x, 1) for x in v)
    if kind == _SLOTS:
        return (
            isinstance(v, list)
            and len(v) == 3
            and v[0] in ("input", "output", "scratch")
            and _is_int(v[1], 0)
            and _is_int(v[2], 1)
        )
    return True


_BUFFERS = ("input", "output", "scratch")
_KEYS = {
    op: (frozenset(required), frozenset(required) | frozenset(optional))
    for op, (required, optional) in _FIELDS.items()
}


def _slots_ok(v: object) -> bool:
    return (
        type(v) is list
        and len(v) == 3
        and v[0] in _BUFFERS
        and type(v[1]) is int
        and 0 <= v[1] < _LIM
        and type(v[2]) is int
        and 1 <= v[2] < _LIM
    )


def _ints_ok(v: object, minimum: int) -> bool:
    return type(v) is list and all(type(x) is int and minimum <= x < _LIM for x in v)


def command_ok(c: object) -> bool:
    """Whether ``c`` is a valid command: the same rules as `check_command`, written for speed
    (a hardware program holds millions of commands); on False, `check_command` names the
    problem."""
    if type(c) is not dict:
        return False
    op = c.get("op")
    keys = _KEYS.get(op) if type(op) is str else None
    if keys is None or not keys[0] <= c.keys() <= keys[1]:
        return False
    cid = c["id"]
    if type(cid) is not int or not 0 <= cid < _LIM or not _ints_ok(c["waits"], 0):
        return False
    if op == "send":
        b, to, flow = c["bytes"], c["to"], c["flow"]
        after = c.get("after", 0)
        return (
            type(b) is int
            and 1 <= b < _LIM
            and type(to) is int
            and 0 <= to < _LIM
            and type(flow) is int
            and 0 <= flow < _LIM
            and type(after) is int
            and 0 <= after < _LIM
            and c["routing"] in ("dor", "source")
            and _slots_ok(c["src"])
            and _ints_ok(c["ports"], 1)
            and len(c["ports"]) > 0
            and _ints_ok(c["vcs"], 0)
            and len(c["vcs"]) > 0
        )
    if op == "recv":
        b, frm, flow = c["bytes"], c["from"], c["flow"]
        return (
            type(b) is int
            and 1 <= b < _LIM
            and type(frm) is int
            and 0 <= frm < _LIM
            and type(flow) is int
            and 0 <= flow < _LIM
            and type(c["reduce"]) is bool
            and _slots_ok(c["dst"])
        )
    return _slots_ok(c["src"]) and _slots_ok(c["dst"])


def check_command(c: object, where: str) -> None:
    """What the schema's ``command`` definition says, checked directly (``where`` is the
    file and the command's JSON path)."""
    if not isinstance(c, dict):
        raise HwProgError(f"{where}: not an object")
    op = c.get("op")
    if not isinstance(op, str) or op not in _FIELDS:
        raise HwProgError(f"{where}.op: {op!r} is not one of send, recv, copy, reduce")
    required, optional = _FIELDS[op]
    for key in required:
        if key not in c:
            raise HwProgError(f"{where}: {key!r} is a required property")
    for key, v in c.items():
        kind = required.get(key, optional.get(key))
        if kind is None:
            raise HwProgError(f"{where}: additional property {key!r} is not allowed")
        if not _value_ok(kind, v):
            raise HwProgError(f"{where}.{key}: {v!r} is not a valid {key} ({kind})")
    if op == "send" and len(c["vcs"]) < 1:
        raise HwProgError(f"{where}.vcs: [] should be non-empty")


def _slots(sl: list[Any], buffers: dict[str, int], what: str, pre: str) -> int:
    buf, idx, count = sl
    if idx + count > buffers[buf]:
        raise HwProgError(
            f"{pre}: {what} slots {buf}[{idx}:{idx + count}] are outside {buf} of {buffers[buf]} slots"
        )
    return int(count)


def _check_npu(
    doc: dict[str, Any],
    n: int,
    header: dict[str, Any],
    collective: Collective,
    by_port: dict[tuple[int, int], int],
    sends: dict[int, tuple[int, int, dict[str, Any]]],
    recvs: dict[int, tuple[int, int, dict[str, Any]]],
    where: str,
) -> None:
    if doc["npu"] != n or doc["rank"] != header["npus"][n]["rank"]:
        raise HwProgError(
            f"{where}: holds NPU {doc['npu']} rank {doc['rank']}, expected NPU {n} rank {header['npus'][n]['rank']}"
        )
    cmds = doc["commands"]
    if len(cmds) != header["npus"][n]["commands"]:
        raise HwProgError(
            f"{where}: npu {n}: {len(cmds)} commands, the header says {header['npus'][n]['commands']}"
        )
    buffers = doc["buffers"]
    r = doc["rank"]
    want = (0, 0) if r is None else (collective.input_chunks(r), collective.output_chunks(r))
    have = (buffers["input"], buffers["output"])
    if have != want or (r is None and buffers["scratch"]):
        whose = (
            "an NPU without a rank holds none"
            if r is None
            else f"the collective needs {want[0]}/{want[1]}"
        )
        raise HwProgError(
            f"{where}: $.buffers: input/output/scratch of {have[0]}/{have[1]}/"
            f"{buffers['scratch']} slots; {whose}"
        )
    chunk = header["chunk_bytes"]
    num_vcs = header["num_vcs"]
    n_npus = header["num_npus"]
    seen: dict[int, str] = {}
    for c in cmds:
        cid = c["id"]
        op = c["op"]
        pre = f"{where}: npu {n} command {cid} ({op})"
        if cid in seen:
            raise HwProgError(f"{pre}: id {cid} is used twice")
        for w in c["waits"]:
            if w not in seen:
                raise HwProgError(
                    f"{pre}: waits for command {w}, which is not an earlier command of npu {n}"
                )
        if op == "send":
            count = _slots(c["src"], buffers, "source", pre)
            a = c.get("after")
            if a is not None and seen.get(a) != "send":
                raise HwProgError(f"{pre}: after {a}, which is not an earlier send of npu {n}")
            to = c["to"]
            if to >= n_npus or to == n:
                raise HwProgError(f"{pre}: sends to NPU {to}, which is not another NPU of the grid")
            ports, vcs = c["ports"], c["vcs"]
            if len(ports) != len(vcs):
                raise HwProgError(f"{pre}: {len(ports)} ports but {len(vcs)} VCs (one per hop)")
            cur = n
            visited = {n}
            for h, (pt, vc) in enumerate(zip(ports, vcs, strict=True)):
                nxt = by_port.get((cur, pt))
                if nxt is None:
                    raise HwProgError(
                        f"{pre}: hop {h} leaves the topology: router {cur} has no port {pt}"
                    )
                if nxt in visited:
                    raise HwProgError(f"{pre}: hop {h} comes back to router {nxt} (a loop)")
                visited.add(nxt)
                if vc >= num_vcs:
                    raise HwProgError(
                        f"{pre}: hop {h} uses VC {vc}, but the program has {num_vcs} VC(s)"
                    )
                cur = nxt
            if cur != to:
                raise HwProgError(f"{pre}: the route ends at NPU {cur}, not at NPU {to}")
            if c["flow"] in sends:
                raise HwProgError(f"{pre}: flow {c['flow']} is sent twice")
            sends[c["flow"]] = (n, cid, c)
        elif op == "recv":
            count = _slots(c["dst"], buffers, "destination", pre)
            if c["from"] >= n_npus or c["from"] == n:
                raise HwProgError(
                    f"{pre}: receives from NPU {c['from']}, which is not another NPU of the grid"
                )
            if c["flow"] in recvs:
                raise HwProgError(f"{pre}: flow {c['flow']} is received twice")
            recvs[c["flow"]] = (n, cid, c)
        else:
            count = _slots(c["src"], buffers, "source", pre)
            if _slots(c["dst"], buffers, "destination", pre) != count:
                raise HwProgError(
                    f"{pre}: copies {count} source slots into {c['dst'][2]} destination slots"
                )
            count = 0
        if op in ("send", "recv") and c["bytes"] != count * chunk:
            raise HwProgError(f"{pre}: {c['bytes']} bytes for {count} slots of {chunk} bytes")
        seen[cid] = op


def _check_no_strays(folder: Path, header: dict[str, Any]) -> None:
    """Every file of the NPU folder is one the header lists: a stray one would be a command
    stream no replayer runs."""
    listed = {e["file"] for e in header["npus"]}
    npu_dir = folder / NPU_DIR
    if not npu_dir.is_dir():
        return  # the first NPU file's read names what is missing
    for entry in sorted(npu_dir.iterdir()):
        name = f"{NPU_DIR}/{entry.name}"
        if name not in listed:
            raise HwProgError(
                f"{entry}: not an NPU file of the header's {header['num_npus']} NPUs "
                "(a command stream nothing would run)"
            )


def _check_routers(
    routers: dict[str, Any],
    sends: dict[int, tuple[int, int, dict[str, Any]]],
    by_port: dict[tuple[int, int], int],
    where: str,
) -> None:
    want: dict[tuple[int, int], tuple[int, int]] = {}
    for f, (n, _c, s) in sends.items():
        if s["routing"] != "source":
            continue
        cur = n
        for pt, vc in zip(s["ports"], s["vcs"], strict=True):
            want[(cur, f)] = (pt, vc)
            cur = by_port[(cur, pt)]
    got: dict[tuple[int, int], tuple[int, int]] = {}
    for r in routers["routers"]:
        for i, e in enumerate(r["flows"]):
            key = (r["router"], e["flow"])
            pre = f"{where}: $.routers[{r['router']}].flows[{i}]"
            if key in got:
                raise HwProgError(f"{pre}: flow {e['flow']} listed twice at router {r['router']}")
            if want.get(key) != (e["port"], e["vc"]):
                raise HwProgError(
                    f"{pre}: flow {e['flow']} port {e['port']} vc {e['vc']} is not a hop of a "
                    "source-routed send"
                )
            got[key] = (e["port"], e["vc"])
    missing = set(want) - set(got)
    if missing:
        router, f = min(missing)
        n, c, _ = sends[f]
        raise HwProgError(
            f"{where}: npu {n} command {c}: source-routed flow {f} has no entry at router {router}"
        )
