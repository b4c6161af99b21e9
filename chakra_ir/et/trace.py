"""The node-level form of any Chakra ET: `EtTrace` (one rank's file, column-wise) and
`EtNode` (one node as an object).

This is what every ET loads as, collc's own or another tool's (converters, PyTorch traces):
node ids, names, types, dependencies, times and attributes, without any meaning attached. The
simulator times it; `chakra_ir.et.codec.program_from_traces` turns a collc ET back into a
Program.

Columns keep large traces small: names are codes into a table, dependencies are CSR arrays,
and each attribute name is one `AttrColumn` holding the nodes that carry it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from chakra_ir.et import schema as s
from chakra_ir.et.errors import EtDecodeError

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
BOOL = npt.NDArray[np.bool_]

AttrValue = bool | int | float | str | bytes | list[Any] | None
"""An attribute's Python value: bool for bool_val, int for the integer members, float for
double/float, str, bytes, a list for the list members, None when the oneof is unset."""

INTEGER_MEMBERS = frozenset({7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27})
"""Scalar members whose value is an integer (bool included): `AttrColumn.ints` holds them."""

_IS_INTEGER = np.zeros(256, dtype=np.bool_)
_IS_INTEGER[sorted(INTEGER_MEMBERS)] = True

IOInfo = tuple[str, str, str]
"""A node's ``inputs`` or ``outputs``: (values, shapes, types)."""


@dataclass(eq=False)
class AttrColumn:
    """One attribute name across a trace: entry ``j`` is the attribute of node ``nodes[j]``.

    ``nodes`` ascend (a node with the name twice keeps the later one). ``member[j]`` is the
    oneof field number that was set (0: none). Integer and bool scalars are in ``ints[j]``
    (a uint64 of 2**63 or more goes to ``objects`` instead); lists of varint members are CSR
    rows ``list_values[list_offsets[j]:list_offsets[j+1]]``; every other value (floats,
    strings, bytes, other lists) is ``objects[j]``.
    """

    name: str
    nodes: I64
    member: U8
    ints: I64
    list_offsets: I64
    list_values: I64
    objects: dict[int, AttrValue] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.nodes)

    def value(self, j: int) -> AttrValue:
        """The Python value of entry ``j``."""
        if j in self.objects:
            return self.objects[j]
        m = int(self.member[j])
        if m == 0:
            return None
        if m == s.BOOL_VAL:
            return bool(self.ints[j])
        if m in INTEGER_MEMBERS:
            return int(self.ints[j])
        row = self.list_values[self.list_offsets[j] : self.list_offsets[j + 1]]
        if m == s.BOOL_LIST:
            return [bool(x) for x in row]
        return [int(x) for x in row]

    def entry_of(self, node: int) -> int:
        """The entry of ``node``, or -1 when the node lacks the attribute."""
        j = int(np.searchsorted(self.nodes, node))
        return j if j < len(self.nodes) and self.nodes[j] == node else -1

    def integer_mask(self) -> BOOL:
        """Entries holding an integer or bool scalar (in ``ints``)."""
        mask: BOOL = _IS_INTEGER[self.member]
        if self.objects:
            mask[np.fromiter(self.objects.keys(), dtype=np.int64)] = False
        return mask

    def int_values(self, num_nodes: int, default: int = 0) -> tuple[I64, BOOL]:
        """Per node, the integer value (any integer member or bool, as feeder_v3 coerces)
        and whether the node has one; ``default`` where it has none."""
        ok = self.integer_mask()
        values = np.full(num_nodes, default, dtype=np.int64)
        present = np.zeros(num_nodes, dtype=np.bool_)
        values[self.nodes[ok]] = self.ints[ok]
        present[self.nodes[ok]] = True
        return values, present


@dataclass(frozen=True)
class EtNode:
    """One node as an object (`EtTrace.node`). ``offset`` is the byte offset of its frame."""

    id: int
    name: str
    type: int
    data_deps: tuple[int, ...] = ()
    ctrl_deps: tuple[int, ...] = ()
    start_time_micros: int = 0
    duration_micros: int = 0
    attrs: dict[str, AttrValue] = field(default_factory=dict)
    inputs: IOInfo | None = None
    outputs: IOInfo | None = None
    offset: int = -1

    @property
    def type_name(self) -> str:
        """``COMM_SEND_NODE`` etc.; ``NodeType(<n>)`` for a value the schema does not name."""
        try:
            return s.NodeType(self.type).name
        except ValueError:
            return f"NodeType({self.type})"


@dataclass(eq=False)
class EtTrace:
    """One ET file (one rank) at the node level, column-wise, nodes in file order.

    ``version`` and ``metadata`` (attribute name -> value) come from the GlobalMetadata.
    Per node: ``offsets`` (byte offset of the frame in the file), ``ids``, ``types``,
    ``name_codes`` into ``name_table``, ``start_times``, ``durations``, and CSR dependency
    lists of node ids (``data_dep_offsets``/``data_deps``, ``ctrl_dep_offsets``/
    ``ctrl_deps``). ``attrs`` maps each attribute name to its `AttrColumn`; ``io`` holds
    ``(inputs, outputs)`` of the few nodes that have them.
    """

    file: str
    version: str
    metadata: dict[str, AttrValue]
    offsets: I64
    ids: I64
    types: I64
    name_codes: I64
    name_table: list[str]
    start_times: I64
    durations: I64
    data_dep_offsets: I64
    data_deps: I64
    ctrl_dep_offsets: I64
    ctrl_deps: I64
    attrs: dict[str, AttrColumn]
    io: dict[int, tuple[IOInfo | None, IOInfo | None]] = field(default_factory=dict)
    decoder: str = "fast"
    """Which reader produced it: ``fast`` (vectorized) or ``generic`` (generated bindings)."""

    def __len__(self) -> int:
        return len(self.ids)

    def node(self, i: int) -> EtNode:
        """Node ``i`` (file order, not id) as an object."""
        attrs: dict[str, AttrValue] = {}
        for name, col in self.attrs.items():
            j = col.entry_of(i)
            if j >= 0:
                attrs[name] = col.value(j)
        inputs, outputs = self.io.get(i, (None, None))
        return EtNode(
            id=int(self.ids[i]),
            name=self.name_table[int(self.name_codes[i])],
            type=int(self.types[i]),
            data_deps=tuple(
                int(x)
                for x in self.data_deps[self.data_dep_offsets[i] : self.data_dep_offsets[i + 1]]
            ),
            ctrl_deps=tuple(
                int(x)
                for x in self.ctrl_deps[self.ctrl_dep_offsets[i] : self.ctrl_dep_offsets[i + 1]]
            ),
            start_time_micros=int(self.start_times[i]),
            duration_micros=int(self.durations[i]),
            attrs=attrs,
            inputs=inputs,
            outputs=outputs,
            offset=int(self.offsets[i]),
        )

    def nodes(self) -> Iterator[EtNode]:
        """Every node as an object, in file order (slow for millions of nodes)."""
        for i in range(len(self)):
            yield self.node(i)

    def names(self) -> list[str]:
        """Every node's name, in file order."""
        return [self.name_table[int(c)] for c in self.name_codes]

    def int_attr(self, name: str, default: int = 0) -> tuple[I64, BOOL]:
        """Per node, the integer value of attribute ``name`` and whether the node has it."""
        col = self.attrs.get(name)
        if col is None:
            return np.full(len(self), default, dtype=np.int64), np.zeros(len(self), dtype=np.bool_)
        return col.int_values(len(self), default)

    def index_of(self, ids: npt.ArrayLike) -> I64:
        """The file positions of nodes with the given ids (all must exist)."""
        order = np.argsort(self.ids, kind="stable")
        pos = np.searchsorted(self.ids, np.asarray(ids, dtype=np.int64), sorter=order)
        out: I64 = order[np.minimum(pos, len(order) - 1)]
        return out


def check_trace(t: EtTrace) -> None:
    """The file-level structure every reader of an ET relies on: node ids are unique and every
    dependency names a node of the file. Raises EtDecodeError naming the node's byte offset."""
    n = len(t)
    if n == 0:
        return
    order = np.argsort(t.ids, kind="stable")
    sorted_ids = t.ids[order]
    dup = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    if dup.size:
        second = int(order[dup[0] + 1])
        raise EtDecodeError(
            f"node id {int(t.ids[second])} appears twice (node {second} repeats it)",
            t.file,
            int(t.offsets[second]),
        )
    for label, offs, deps in (
        ("data", t.data_dep_offsets, t.data_deps),
        ("ctrl", t.ctrl_dep_offsets, t.ctrl_deps),
    ):
        if len(deps) == 0:
            continue
        pos = np.searchsorted(sorted_ids, deps)
        found = sorted_ids[np.minimum(pos, n - 1)] == deps
        if not found.all():
            e = int(np.flatnonzero(~found)[0])
            owner = int(np.searchsorted(offs, e, side="right") - 1)
            raise EtDecodeError(
                f"node {int(t.ids[owner])} has a {label} dependency on node {int(deps[e])}, "
                "which is not in the file",
                t.file,
                int(t.offsets[owner]),
            )


class ColumnBuilder:
    """Builds `AttrColumn`s from Python values one attribute at a time (the generic reader)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[int] = []
        self.member: list[int] = []
        self.ints: list[int] = []
        self.rows: list[list[int]] = []
        self.objects: dict[int, AttrValue] = {}

    def add(self, node: int, member: int, value: AttrValue) -> None:
        """Add the attribute of ``node`` (nodes in ascending order; a repeat replaces)."""
        if self.nodes and self.nodes[-1] == node:  # the later one of a repeated name wins
            self.nodes.pop()
            self.member.pop()
            self.ints.pop()
            self.rows.pop()
            self.objects.pop(len(self.nodes), None)
        j = len(self.nodes)
        self.nodes.append(node)
        self.member.append(member)
        row: list[int] = []
        iv = 0
        if member in INTEGER_MEMBERS and isinstance(value, int):
            if value >= 1 << 63:
                self.objects[j] = value
            else:
                iv = int(value)
        elif member in s.VARINT_LISTS and isinstance(value, list):
            if any(int(x) >= 1 << 63 for x in value):
                self.objects[j] = value
            else:
                row = [int(x) for x in value]
        elif member != 0:
            self.objects[j] = value
        self.ints.append(iv)
        self.rows.append(row)

    def build(self) -> AttrColumn:
        """The column of everything added."""
        offsets = np.zeros(len(self.rows) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in self.rows], out=offsets[1:])
        return AttrColumn(
            self.name,
            np.array(self.nodes, dtype=np.int64),
            np.array(self.member, dtype=np.uint8),
            np.array(self.ints, dtype=np.int64),
            offsets,
            np.array([x for r in self.rows for x in r], dtype=np.int64),
            self.objects,
        )
