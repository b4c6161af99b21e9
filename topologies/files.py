"""Topology files: collc's own link list (YAML or JSON) and ASTRA-sim's analytical network YAML.

The format is told apart by its keys: ``npus``/``links`` is collc's, ``topology``/``npus_count``
is ASTRA-sim's (which becomes the equivalent ``stack`` topology). Errors name the file and, where
the parser knows it, the line and column of the offending entry (YAML marks; JSON files are read
through the YAML parser as well for that).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from topologies import generators
from topologies.errors import SourcePos, SpecError
from topologies.generators import Blueprint
from topologies.routing import FC, RING, SWITCH
from topologies.spec import FILE_SUFFIXES
from topologies.topology import LinkSpec
from topologies.units import (
    MAX_BANDWIDTH_BYTES_PER_NS,
    MAX_TIME_NS,
    MIN_BANDWIDTH_BYTES_PER_NS,
    parse_bandwidth_bytes_per_ns,
    parse_time_ns,
)

# Start-up (issue 12): yaml is imported where a file is read, not with this module.
if TYPE_CHECKING:
    import yaml

Key = tuple[str | int, ...]

#: ASTRA-sim's GB/s is 2^30 bytes per second; inside collc bandwidth is bytes per ns.
ASTRA_GB_PER_S_IN_BYTES_PER_NS = 2**30 / 1e9
ASTRA_KINDS = {"ring": RING, "fullyconnected": FC, "switch": SWITCH}

_COLLC_KEYS = ("npus", "switches", "defaults", "links", "fail", "description")
_IGNORED_KEYS = ("description",)
"""Top-level keys whose value collc never reads: never walked, whatever they hold."""

MAX_ALIAS_NODES = 100_000
"""The most nodes YAML aliases may repeat while a file is walked: a legitimate file reuses a
few anchors, a "billion laughs" file (aliases of aliases) would repeat billions."""

MAX_DEPTH = 64
"""The deepest nesting read; a topology file needs four levels."""
_LINK_KEYS = ("src", "dst", "bandwidth", "latency", "bidirectional", "dim")
_ASTRA_KEYS = ("topology", "npus_count", "bandwidth", "latency")


class YamlDocument:
    """A parsed YAML (or JSON) file plus the line/column of every value and mapping key in
    it; topology files and other configuration files (`explore.cost`, LIBRA's inputs) read
    through it."""

    def __init__(self, path: str, text: str) -> None:
        import yaml

        self.path = path
        self.lines = text.splitlines()
        self.values: dict[Key, tuple[int, int]] = {}
        self.keys: dict[Key, tuple[int, int]] = {}
        self.data: Any = None
        self._repeated = 0
        if path.lower().endswith(".json"):
            try:
                self.data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise SpecError(
                    f"invalid JSON: {exc.msg}", self._pos(exc.lineno, exc.colno)
                ) from None
            except RecursionError:
                raise SpecError("invalid JSON: nested too deeply", self._pos(0, 0)) from None
            except ValueError as exc:  # an integer of more than 4,300 digits
                raise SpecError(f"invalid JSON: {exc}", self._pos(0, 0)) from None
            try:  # JSON is YAML: reread it only for the line numbers
                self._load_yaml(text)
            except (yaml.YAMLError, SpecError):
                self.values.clear()
                self.keys.clear()
            return
        self.data = self._load_yaml(text)

    def _load_yaml(self, text: str) -> Any:
        import yaml

        try:
            loader = yaml.SafeLoader(text)  # checks every character first
        except yaml.reader.ReaderError as exc:
            at = int(exc.position)
            line = text.count("\n", 0, at) + 1
            col = at - (text.rfind("\n", 0, at) + 1) + 1
            raise SpecError(
                f"invalid YAML: character #x{exc.character:04x} is not allowed",
                self._pos(line, col),
            ) from None
        try:
            node = loader.get_single_node()
            if node is not None:
                # Positions first: the walk refuses deep nesting and alias bombs before
                # anything is built from them.
                self._walk(node, (), set(), 0)
            data = loader.construct_document(node) if node is not None else None
        except RecursionError:
            raise SpecError(
                f"invalid YAML: nested deeper than {MAX_DEPTH} levels", self._pos(0, 0)
            ) from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise SpecError(f"invalid YAML: {exc}", self._pos(0, 0)) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
            raise SpecError(f"invalid YAML: {exc.problem or exc}", self._pos(line, col)) from None
        except yaml.YAMLError as exc:
            raise SpecError(f"invalid YAML: {exc}", self._pos(0, 0)) from None
        finally:
            loader.dispose()
        return data

    def _walk(self, node: yaml.Node, key: Key, seen: set[int], depth: int) -> None:
        """Record the position of every value and key under ``node`` (``seen``: the nodes
        walked so far; a node met again comes through an alias and counts against
        `MAX_ALIAS_NODES`)."""
        import yaml

        here = (node.start_mark.line + 1, node.start_mark.column + 1)
        if depth > MAX_DEPTH:
            raise SpecError(f"nested deeper than {MAX_DEPTH} levels", self._pos(*here))
        if id(node) in seen:
            self._repeated += 1
            if self._repeated > MAX_ALIAS_NODES:
                raise SpecError(
                    f"YAML aliases repeat more than {MAX_ALIAS_NODES:,} nodes (aliases of "
                    "aliases expand exponentially)",
                    self._pos(*here),
                )
        else:
            seen.add(id(node))
        self.values[key] = here
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                name = k.value if isinstance(k, yaml.ScalarNode) else str(k)
                self.keys[(*key, name)] = (k.start_mark.line + 1, k.start_mark.column + 1)
                if key == () and name in _IGNORED_KEYS:
                    continue
                self._walk(v, (*key, name), seen, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, (*key, i), seen, depth + 1)

    def _pos(self, line: int, col: int) -> SourcePos:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourcePos(file=self.path, line=line, column=col, text=text)

    def pos(self, key: Key, *, at_key: bool = False) -> SourcePos:
        """The position of the value at ``key`` (or of the mapping key itself), else of the
        nearest enclosing entry that has one."""
        table = self.keys if at_key else self.values
        while key not in table and key:
            key, table = key[:-1], self.values
        line, col = table.get(key, (0, 0))
        return self._pos(line, col)

    def error(self, key: Key, message: str, *, at_key: bool = False) -> SpecError:
        """A SpecError about the entry at ``key``; the message starts with its path."""
        where = _describe(key)
        return SpecError(f"{where}: {message}" if where else message, self.pos(key, at_key=at_key))

    # --- typed access -----------------------------------------------------------------------

    def get(self, key: Key) -> Any:
        value = self.data
        for part in key:
            value = value[part]
        return value

    def mapping(self, key: Key, allowed: tuple[str, ...]) -> dict[str, Any]:
        value = self.get(key)
        if not isinstance(value, dict):
            raise self.error(key, f"expected a mapping with keys {', '.join(allowed)}")
        for name in value:
            if name not in allowed:
                raise self.error(
                    (*key, str(name)),
                    f"unknown key {name!r} (expected one of {', '.join(allowed)})",
                    at_key=True,
                )
        return value

    def integer(self, key: Key, minimum: int, maximum: int | None = None) -> int:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, not {value!r}")
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
            raise self.error(key, f"{value} is out of range (expected {bound})")
        return value

    def quantity(self, key: Key, parse: Callable[[str, SourcePos | None], float]) -> float:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.error(key, f"expected a quantity with a unit, not {value!r}")
        try:
            return parse(str(value), self.pos(key))
        except SpecError as exc:
            raise self.error(key, exc.message) from None


def _describe(key: Key) -> str:
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def read_topology_file(path: str, origin: SourcePos | None = None) -> Blueprint:
    """The `Blueprint` a file describes (``origin`` locates the path in a spec for the
    cannot-read error)."""
    if not path.lower().endswith(FILE_SUFFIXES):
        raise SpecError(
            f"topology file {path!r} must end in {', '.join(FILE_SUFFIXES)}",
            origin,
        )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecError(f"cannot read topology file {path!r}: {reason}", origin) from None
    doc = YamlDocument(path, text)
    if not isinstance(doc.data, dict):
        raise doc.error(
            (),
            "a topology file is a mapping: collc's (npus, links, ...) or ASTRA-sim's "
            "(topology, npus_count, bandwidth, latency)",
        )
    if "topology" in doc.data or "npus_count" in doc.data:
        return _astra(doc)
    if "npus" in doc.data or "links" in doc.data:
        return _collc(doc, os.path.abspath(path))
    raise doc.error(
        (),
        "unrecognised topology file: expected collc keys (npus, switches, defaults, links, "
        "fail) or ASTRA-sim keys (topology, npus_count, bandwidth, latency)",
    )


def _collc(doc: YamlDocument, abspath: str) -> Blueprint:
    top = doc.mapping((), _COLLC_KEYS)
    if "npus" not in top:
        raise doc.error((), "missing 'npus' (the number of NPUs)")
    npus = doc.integer(("npus",), 2, generators.MAX_NPUS)
    switches = doc.integer(("switches",), 0, generators.MAX_NPUS) if "switches" in top else 0
    nodes = npus + switches
    default_bw = generators.DEFAULT_BANDWIDTH
    default_lat = generators.DEFAULT_LATENCY
    if "defaults" in top:
        defaults = doc.mapping(("defaults",), ("bandwidth", "latency"))
        if "bandwidth" in defaults:
            default_bw = doc.quantity(("defaults", "bandwidth"), parse_bandwidth_bytes_per_ns)
        if "latency" in defaults:
            default_lat = doc.quantity(("defaults", "latency"), parse_time_ns)
    links: list[LinkSpec] = []
    raw_links = top.get("links", [])
    if not isinstance(raw_links, list):
        raise doc.error(("links",), "expected a list of links")
    for i in range(len(raw_links)):
        key: Key = ("links", i)
        entry = doc.mapping(key, _LINK_KEYS)
        for required in ("src", "dst"):
            if required not in entry:
                raise doc.error(key, f"missing {required!r}")
        src = doc.integer((*key, "src"), 0, nodes - 1)
        dst = doc.integer((*key, "dst"), 0, nodes - 1)
        if src == dst:
            raise doc.error(key, f"link joins node {src} to itself")
        bw = default_bw
        if "bandwidth" in entry:
            bw = doc.quantity((*key, "bandwidth"), parse_bandwidth_bytes_per_ns)
        lat = default_lat
        if "latency" in entry:
            lat = doc.quantity((*key, "latency"), parse_time_ns)
        dim = doc.integer((*key, "dim"), 0) if "dim" in entry else -1
        both = entry.get("bidirectional", False)
        if not isinstance(both, bool):
            raise doc.error((*key, "bidirectional"), f"expected true or false, not {both!r}")
        links.append((src, dst, lat, bw, dim))
        if both:
            links.append((dst, src, lat, bw, dim))
    generators.check_size(npus, len(links), doc.pos(()))
    blueprint = generators.graph(npus, switches, links, default_bw, default_lat, name="file")
    blueprint.head = f"file:{abspath}"
    blueprint.failed = _file_failures(doc, top, {(s, d) for s, d, *_ in links})
    return blueprint


def _file_failures(
    doc: YamlDocument, top: dict[str, Any], existing: set[tuple[int, int]]
) -> set[tuple[int, int]]:
    failed: set[tuple[int, int]] = set()
    if "fail" not in top:
        return failed
    raw = top["fail"]
    items: list[tuple[Key, str]] = []
    if isinstance(raw, str):
        items = [(("fail",), part.strip()) for part in raw.split(";")]
    elif isinstance(raw, list):
        items = [(("fail", i), item) for i, item in enumerate(raw)]
    else:
        raise doc.error(("fail",), "expected a list of 'A-B' / 'A>B' strings")
    for key, item in items:
        text = str(item).strip()
        sep = "-" if "-" in text else ">"
        parts = text.split(sep)
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise doc.error(key, f"{text!r} is not A-B (both directions) or A>B (one direction)")
        a, b = int(parts[0]), int(parts[1])
        wanted = [(a, b), (b, a)] if sep == "-" else [(a, b)]
        hit = [p for p in wanted if p in existing]
        if not hit:
            where = f"between {a} and {b}" if sep == "-" else f"from {a} to {b}"
            raise doc.error(key, f"no link {where}")
        failed.update(hit)
    return failed


def _astra(doc: YamlDocument) -> Blueprint:
    top = doc.mapping((), _ASTRA_KEYS)
    for name in _ASTRA_KEYS:
        if name not in top:
            raise doc.error((), f"ASTRA-sim network file is missing {name!r}")
    lists: dict[str, list[Any]] = {}
    for name in _ASTRA_KEYS:
        value = top[name]
        lists[name] = value if isinstance(value, list) else [value]
        if not lists[name]:
            raise doc.error((name,), "expected one entry per dimension, got an empty list")
    lengths = {name: len(values) for name, values in lists.items()}
    if len(set(lengths.values())) != 1:
        detail = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise doc.error((), f"the four lists must have one entry per dimension ({detail})")

    def key(name: str, i: int) -> Key:
        return (name, i) if isinstance(top[name], list) else (name,)

    kinds: list[str] = []
    sizes: list[int] = []
    bandwidths: list[float] = []
    latencies: list[float] = []
    for i in range(lengths["topology"]):
        kind = lists["topology"][i]
        if not isinstance(kind, str) or kind.lower() not in ASTRA_KINDS:
            raise doc.error(
                key("topology", i),
                f"unknown dimension kind {kind!r} (expected Ring, FullyConnected or Switch)",
            )
        kinds.append(ASTRA_KINDS[kind.lower()])
        count = lists["npus_count"][i]
        if isinstance(count, bool) or not isinstance(count, int) or count < 2:
            raise doc.error(key("npus_count", i), f"expected an integer > 1, not {count!r}")
        sizes.append(count)
        bw = lists["bandwidth"][i]
        if isinstance(bw, bool) or not isinstance(bw, int | float) or not math.isfinite(bw):
            raise doc.error(key("bandwidth", i), f"expected a number (GB/s), not {bw!r}")
        bw_bytes = bw * ASTRA_GB_PER_S_IN_BYTES_PER_NS
        if not MIN_BANDWIDTH_BYTES_PER_NS <= bw_bytes <= MAX_BANDWIDTH_BYTES_PER_NS:
            raise doc.error(
                key("bandwidth", i),
                f"bandwidth {bw} GB/s is outside what collc accepts (1 KB/s to 1 EB/s)",
            )
        bandwidths.append(bw_bytes)
        lat = lists["latency"][i]
        if isinstance(lat, bool) or not isinstance(lat, int | float) or not math.isfinite(lat):
            raise doc.error(key("latency", i), f"expected a number (ns), not {lat!r}")
        if not 0 <= lat <= MAX_TIME_NS:
            raise doc.error(
                key("latency", i),
                f"latency {lat} ns is outside what collc accepts (0 to {MAX_TIME_NS:g} ns)",
            )
        latencies.append(float(lat))
    shape = tuple(sizes)
    npus = math.prod(shape)
    generators.check_size(npus, generators.grid_link_count(shape, tuple(kinds)), doc.pos(()))
    return generators.stack(shape, tuple(kinds), bandwidths, latencies)
