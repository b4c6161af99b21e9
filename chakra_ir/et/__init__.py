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

from typing import TYPE_CHECKING

from topologies.lazy import lazy_exports

if TYPE_CHECKING:
    from chakra_ir.et.codec import DecodedSet as DecodedSet
    from chakra_ir.et.codec import decode_program as decode_program
    from chakra_ir.et.codec import decode_rank_files as decode_rank_files
    from chakra_ir.et.codec import encode_program as encode_program
    from chakra_ir.et.codec import iter_rank_files as iter_rank_files
    from chakra_ir.et.codec import program_from_traces as program_from_traces
    from chakra_ir.et.codec import write_et_files as write_et_files
    from chakra_ir.et.errors import EtDecodeError as EtDecodeError
    from chakra_ir.et.errors import EtEncodeError as EtEncodeError
    from chakra_ir.et.layout import comm_tags as comm_tags
    from chakra_ir.et.reader import et_rank_files as et_rank_files
    from chakra_ir.et.reader import parse_et as parse_et
    from chakra_ir.et.reader import read_et_file as read_et_file
    from chakra_ir.et.reader import read_et_folder as read_et_folder
    from chakra_ir.et.reader import read_et_sources as read_et_sources
    from chakra_ir.et.schema import NodeType as NodeType
    from chakra_ir.et.trace import AttrColumn as AttrColumn
    from chakra_ir.et.trace import AttrValue as AttrValue
    from chakra_ir.et.trace import EtNode as EtNode
    from chakra_ir.et.trace import EtTrace as EtTrace

_LAZY: dict[str, str] = {
    "DecodedSet": "chakra_ir.et.codec",
    "decode_program": "chakra_ir.et.codec",
    "decode_rank_files": "chakra_ir.et.codec",
    "encode_program": "chakra_ir.et.codec",
    "iter_rank_files": "chakra_ir.et.codec",
    "program_from_traces": "chakra_ir.et.codec",
    "write_et_files": "chakra_ir.et.codec",
    "EtDecodeError": "chakra_ir.et.errors",
    "EtEncodeError": "chakra_ir.et.errors",
    "comm_tags": "chakra_ir.et.layout",
    "et_rank_files": "chakra_ir.et.reader",
    "parse_et": "chakra_ir.et.reader",
    "read_et_file": "chakra_ir.et.reader",
    "read_et_folder": "chakra_ir.et.reader",
    "read_et_sources": "chakra_ir.et.reader",
    "NodeType": "chakra_ir.et.schema",
    "AttrColumn": "chakra_ir.et.trace",
    "AttrValue": "chakra_ir.et.trace",
    "EtNode": "chakra_ir.et.trace",
    "EtTrace": "chakra_ir.et.trace",
}
"""Where each public name lives, imported on first use: writing a program loads neither the
reader nor protobuf (start-up time, issue 12)."""

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


__getattr__ = lazy_exports(__name__, _LAZY, globals())
