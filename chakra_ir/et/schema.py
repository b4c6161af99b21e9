"""Facts of the Chakra ET schema (``et_def.proto``) that the hand-written codec needs.

Field numbers of `Node`, the `AttributeProto` oneof members by field number, node types, and
the attribute types ASTRA-sim's feeders read (one fixed oneof member per attribute).
The generated bindings (`et_def_pb2`) hold the same facts; tests check they agree.
"""

from __future__ import annotations

from enum import IntEnum

VERSION = "0.0.4"
"""GlobalMetadata.version collc writes (non-empty, see the sheet's section 2)."""


class NodeType(IntEnum):
    """`Node.type` values (schema v0.0.4). Readers keep unknown values as plain ints."""

    INVALID_NODE = 0
    METADATA_NODE = 1
    MEM_LOAD_NODE = 2
    MEM_STORE_NODE = 3
    COMP_NODE = 4
    COMM_SEND_NODE = 5
    COMM_RECV_NODE = 6
    COMM_COLL_NODE = 7


# Node fields.
NODE_ID = 1
NODE_NAME = 2
NODE_TYPE = 3
NODE_CTRL_DEPS = 4
NODE_DATA_DEPS = 5
NODE_START_TIME = 6
NODE_DURATION = 7
NODE_INPUTS = 8
NODE_OUTPUTS = 9
NODE_ATTR = 10

# GlobalMetadata fields.
META_VERSION = 1
META_ATTR = 2

# AttributeProto fields.
ATTR_NAME = 1
ATTR_DOC = 2

MEMBERS: dict[int, str] = {
    3: "double_val",
    4: "double_list",
    5: "float_val",
    6: "float_list",
    7: "int32_val",
    8: "int32_list",
    9: "int64_val",
    10: "int64_list",
    11: "uint32_val",
    12: "uint32_list",
    13: "uint64_val",
    14: "uint64_list",
    15: "sint32_val",
    16: "sint32_list",
    17: "sint64_val",
    18: "sint64_list",
    19: "fixed32_val",
    20: "fixed32_list",
    21: "fixed64_val",
    22: "fixed64_list",
    23: "sfixed32_val",
    24: "sfixed32_list",
    25: "sfixed64_val",
    26: "sfixed64_list",
    27: "bool_val",
    28: "bool_list",
    29: "string_val",
    30: "string_list",
    31: "bytes_val",
    32: "bytes_list",
}
"""The `AttributeProto` ``value`` oneof: field number -> member name."""

MEMBER_FIELDS: dict[str, int] = {name: number for number, name in MEMBERS.items()}

INT32_VAL = 7
INT64_VAL = 9
UINT32_VAL = 11
UINT64_VAL = 13
SINT32_VAL = 15
SINT64_VAL = 17
BOOL_VAL = 27
STRING_VAL = 29
INT32_LIST = 8
INT64_LIST = 10
UINT32_LIST = 12
UINT64_LIST = 14
SINT32_LIST = 16
SINT64_LIST = 18
BOOL_LIST = 28

VARINT_SCALARS = frozenset(
    {INT32_VAL, INT64_VAL, UINT32_VAL, UINT64_VAL, SINT32_VAL, SINT64_VAL, BOOL_VAL}
)
"""Scalar members carried as one varint (wire type 0); the fast reader decodes these."""

VARINT_LISTS = frozenset(
    {INT32_LIST, INT64_LIST, UINT32_LIST, UINT64_LIST, SINT32_LIST, SINT64_LIST, BOOL_LIST}
)
"""List members whose wrapper holds packed varints; the fast reader decodes these."""

LIST_ELEMENT = {
    INT32_LIST: INT32_VAL,
    INT64_LIST: INT64_VAL,
    UINT32_LIST: UINT32_VAL,
    UINT64_LIST: UINT64_VAL,
    SINT32_LIST: SINT32_VAL,
    SINT64_LIST: SINT64_VAL,
    BOOL_LIST: BOOL_VAL,
}
"""Varint list member -> the scalar member whose decoding rule its elements follow."""

CANONICAL_TYPES: dict[str, int] = {
    "is_cpu_op": BOOL_VAL,
    "num_ops": INT64_VAL,
    "tensor_size": UINT64_VAL,
    "comm_type": INT64_VAL,
    "comm_size": INT64_VAL,
    "comm_src": INT32_VAL,
    "comm_dst": INT32_VAL,
    "comm_tag": INT32_VAL,
    "comm_priority": INT32_VAL,
    "pg_name": STRING_VAL,
    "involved_dim": BOOL_LIST,
    "msg_chunk_cnt": INT32_VAL,
    "total_chunk_cnt": INT32_VAL,
}
"""Attribute name -> the oneof member ASTRA-sim's readers expect (the legacy feeder reads
exactly this member and sees 0 for any other)."""
