"""`read_fred`: load a ``collc export --target fred`` folder and check what the replay relies
on, so that a corrupted or hand-edited folder is one `FredFormatError` naming the file and,
where there is one, the switch, the configuration (phase) and the µSwitch.

Beyond the schema: the switches are the header's; every µSwitch named exists in a
FRED_m(P) of the switch's size (`backends.fred.clos.element_ports`), its state has one entry
per output and names only inputs it has; every configuration is a phase of the header and
every local flow's ports lie on the switch; every command's flow is a flow of the header.
Whether the states compute the right sums is the replay's to find out, by running them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backends.fred.clos import State, element_ports
from backends.fred.errors import FredFormatError
from backends.fred.export import FORMAT, PROGRAM_FILE
from backends.hwprog.export import HEADER_FILE


@dataclass
class FredFolder:
    """A checked folder: the header, the switch documents by name and the program
    document."""

    folder: Path
    header: dict[str, Any]
    switches: dict[str, dict[str, Any]]
    program: dict[str, Any]

    def states(self, switch: str, index: int) -> tuple[dict[str, State], list[dict[str, Any]]]:
        """The element states and local flows of configuration ``index`` of ``switch``
        (empty when it has none)."""
        for conf in self.switches[switch]["configurations"]:
            if conf["index"] == index:
                return conf["elements"], conf["flows"]
        return {}, []


def read_fred(folder: Path | str) -> FredFolder:
    """Load and check ``folder`` (see the module docstring)."""
    folder = Path(folder)
    hpath = folder / HEADER_FILE
    header = FORMAT.read(hpath)
    phases = {ph["index"]: ph for ph in header["phases"]}
    flows = {f["flow"] for f in header["flows"]}
    for ph in header["phases"]:
        for f in ph["flows"]:
            if f not in flows:
                raise FredFormatError(f"{hpath}: phase {ph['index']} names flow {f}, not a flow")
    m = header["m"]
    switches: dict[str, dict[str, Any]] = {}
    for entry in header["switches"]:
        path = folder / entry["file"]
        if not path.resolve().is_relative_to(folder.resolve()):
            raise FredFormatError(f"{hpath}: switch file {entry['file']!r} lies outside the folder")
        doc = FORMAT.read(path, defn="switch")
        name = doc["name"]
        if name != entry["name"] or doc["ports"] != entry["ports"] or doc["m"] != m:
            raise FredFormatError(
                f"{path}: switch {name!r} with {doc['ports']} ports and m={doc['m']} does not "
                f"match the header's {entry['name']!r} ({entry['ports']} ports, m={m})"
            )
        _check_switch(path, doc, phases)
        switches[name] = doc
    ppath = folder / header["program_file"]
    if header["program_file"] != PROGRAM_FILE:
        raise FredFormatError(
            f"{hpath}: $.program_file: {header['program_file']!r}, expected {PROGRAM_FILE!r}"
        )
    program = FORMAT.read(ppath, defn="program")
    if len(program["npus"]) != header["num_npus"]:
        raise FredFormatError(
            f"{ppath}: {len(program['npus'])} NPUs, the header has {header['num_npus']}"
        )
    for n, npu in enumerate(program["npus"]):
        if npu["npu"] != n:
            raise FredFormatError(f"{ppath}: $.npus[{n}] is NPU {npu['npu']}, expected {n}")
        cmds = npu["commands"]
        for i, c in enumerate(cmds):
            where = f"{ppath}: NPU {n} command {i}"
            if c["id"] != i:
                raise FredFormatError(f"{where}: id {c['id']}, expected {i}")
            if any(w >= len(cmds) or w == i for w in c["waits"]):
                raise FredFormatError(f"{where}: waits for a command it does not have")
            need = {
                "flow-in": ("flow", "src"),
                "flow-out": ("flow", "dst"),
                "send": ("src", "to", "tag"),
                "recv": ("dst", "from", "tag", "reduce"),
                "copy": ("src", "dst"),
                "reduce": ("src", "dst"),
            }[c["op"]]
            missing = [k for k in need if k not in c]
            if missing:
                raise FredFormatError(f"{where}: a {c['op']} needs {', '.join(missing)}")
            if "flow" in c and c["flow"] not in flows:
                raise FredFormatError(f"{where}: flow {c['flow']} is not a flow of the header")
            for side in ("src", "dst"):
                if side in c:
                    buf, idx, count = c[side]
                    if idx + count > npu["buffers"][buf]:
                        raise FredFormatError(
                            f"{where}: {side} {buf}[{idx}:{idx + count}] lies beyond its "
                            f"{npu['buffers'][buf]} slots"
                        )
            for peer in ("to", "from"):
                if peer in c and c[peer] >= header["num_npus"]:
                    raise FredFormatError(f"{where}: NPU {c[peer]} does not exist")
    return FredFolder(folder, header, switches, program)


def _check_switch(path: Path, doc: dict[str, Any], phases: dict[int, Any]) -> None:
    ports, m, name = doc["ports"], doc["m"], doc["name"]
    for conf in doc["configurations"]:
        idx = conf["index"]
        where = f"{path}: switch {name}, phase {idx}"
        if idx not in phases:
            raise FredFormatError(f"{where}: no such phase in the header")
        for lf in conf["flows"]:
            bad = [p for p in (*lf["inputs"], *lf["outputs"]) if p >= ports]
            if bad:
                raise FredFormatError(f"{where}: flow {lf['flow']} uses port {bad[0]} of {ports}")
        for el, state in conf["elements"].items():
            try:
                n_in, n_out = element_ports(el, ports, m)
            except KeyError:
                raise FredFormatError(
                    f"{where}: µSwitch {el!r} is not an element of FRED_{m}({ports})"
                ) from None
            if len(state) != n_out:
                raise FredFormatError(
                    f"{where}, µSwitch {el}: {len(state)} outputs in its state, it has {n_out}"
                )
            for srcs in state:
                if any(s >= n_in for s in srcs) or len(set(srcs)) != len(srcs):
                    raise FredFormatError(
                        f"{where}, µSwitch {el}: inputs {srcs} (it has {n_in}, each at most once)"
                    )
