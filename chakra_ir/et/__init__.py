"""Chakra execution traces (ET): the schema, node-level reading of any ET, and the Program codec.

- `encode_program` / `write_et_files`: a Program as per-rank ET files ``<prefix>.<rank>.et``
  (layout: `chakra_ir.et.layout`).
- `decode_program` / `program_from_traces`: collc's ETs back to the Program;
  `decode_rank_files`: an output folder's files, each checked to hold its own rank.
- `read_et_file` / `read_et_folder` / `parse_et`: any ET (collc's or another tool's) as
  `EtTrace` columns and `EtNode` objects.
- `et_def_pb2`: generated bindings of ``et_def.proto`` (upstream's schema under the package
  ``collc.chakra_et``); regenerate with ``python -m chakra_ir.et.regenerate``.
"""

from chakra_ir.et.codec import (
    DecodedSet,
    decode_program,
    decode_rank_files,
    encode_program,
    iter_rank_files,
    program_from_traces,
    write_et_files,
)
from chakra_ir.et.errors import EtDecodeError, EtEncodeError
from chakra_ir.et.layout import comm_tags
from chakra_ir.et.reader import (
    et_rank_files,
    parse_et,
    read_et_file,
    read_et_folder,
    read_et_sources,
)
from chakra_ir.et.schema import NodeType
from chakra_ir.et.trace import AttrColumn, AttrValue, EtNode, EtTrace

__all__ = [
    "AttrColumn",
    "AttrValue",
    "DecodedSet",
    "EtDecodeError",
    "EtEncodeError",
    "EtNode",
    "EtTrace",
    "NodeType",
    "comm_tags",
    "decode_program",
    "decode_rank_files",
    "encode_program",
    "et_rank_files",
    "iter_rank_files",
    "parse_et",
    "program_from_traces",
    "read_et_file",
    "read_et_folder",
    "read_et_sources",
    "write_et_files",
]
