"""`NodeTable`: the nodes of one or more ET files, column-wise, ready to serialize.

The Program codec lays its nodes out here once; two serializers write the same table, the
fast vectorized one (`chakra_ir.et.fastwrite`) and the reference one over the generated
bindings (`chakra_ir.et.pbwrite`), and must produce the same bytes.

Field order on the wire is the generated bindings' (field-number order): ``id`` (omitted when
0), ``name`` (omitted when empty), ``type`` (omitted when 0), ``data_deps`` (packed, omitted
when empty), ``duration_micros`` (omitted when 0), then the attributes in `NodeTable.attrs`
order, each only on the nodes where it is present.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chakra_ir.et.schema import VARINT_LISTS, VARINT_SCALARS

I64 = npt.NDArray[np.int64]
BOOL = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class AttrSpec:
    """One attribute name across the nodes of a table.

    ``member`` is the oneof field number (`chakra_ir.et.schema.MEMBERS`); only varint scalars
    and varint lists are supported. Scalars take ``values`` (one per node; signed values are
    written as protobuf writes them) and ``present`` (None: on every node). Lists take
    ``list_offsets``/``list_values`` (CSR over nodes) and are present where the row is
    non-empty.
    """

    name: str
    member: int
    values: I64 | None = None
    present: BOOL | None = None
    list_offsets: I64 | None = None
    list_values: I64 | None = None

    def __post_init__(self) -> None:
        if self.member in VARINT_SCALARS:
            if self.values is None or self.list_offsets is not None:
                raise ValueError(f"scalar attribute {self.name} takes values")
        elif self.member in VARINT_LISTS:
            if self.list_offsets is None or self.list_values is None or self.values is not None:
                raise ValueError(f"list attribute {self.name} takes list_offsets/list_values")
        else:
            raise ValueError(f"attribute member {self.member} is not supported by NodeTable")

    @property
    def is_list(self) -> bool:
        """Whether the member is a list (CSR values) rather than a scalar."""
        return self.member in VARINT_LISTS

    def present_mask(self, n: int) -> BOOL:
        """Where the attribute is written (a column of ``n`` booleans)."""
        if self.list_offsets is not None:
            mask: BOOL = np.diff(self.list_offsets) > 0
            return mask
        if self.present is None:
            return np.ones(n, dtype=np.bool_)
        return self.present


@dataclass(frozen=True)
class NodeTable:
    """Nodes of several files, files one after another (``file_offsets``, like CSR).

    ``ids`` are file-local node ids; ``name_codes`` index ``names``; ``dep_offsets``/``deps``
    hold each node's ``data_deps`` (file-local ids). ``durations`` are ``duration_micros``.
    """

    file_offsets: I64
    ids: I64
    types: I64
    name_codes: I64
    names: tuple[str, ...]
    dep_offsets: I64
    deps: I64
    durations: I64
    attrs: tuple[AttrSpec, ...]

    @property
    def num_nodes(self) -> int:
        """Nodes over all files."""
        return len(self.ids)

    @property
    def num_files(self) -> int:
        """Files (segments of ``file_offsets``)."""
        return len(self.file_offsets) - 1
