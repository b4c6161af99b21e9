"""Topology spec strings: syntax, value parsing with source columns, canonical formatting.

Grammar (spaces around tokens are ignored; ``[ ]`` in the right column are literal brackets)::

    spec      := KIND ":" SHAPE ("," OPTION)*
               | PATH ("," OPTION)*                    a bare path ending .yaml, .yml or .json
    KIND      := ring | uniring | fc | switch | mesh | torus | hypercube | stack | fred
               | graph | file                          (case-insensitive)
    SHAPE     := N                                     ring, uniring, fc, switch, fred: NPU count
               | N ("x" N)*                            mesh, torus: sizes, dimension 0 first
               | D                                     hypercube: 2^D NPUs
               | DIM ("*" DIM)*                        stack, DIM := (ring | fc | switch) N
               | N ["+" S]                             graph: N NPUs, S switches
               | PATH                                  file (no commas in the path)
    OPTION    := KEY "=" VALUE
      bw=BW | bw=[BW,BW,...]                           link bandwidth, one per dimension allowed
      lat=T | lat=[T,T,...]                            link latency  (mesh, torus, hypercube, stack)
      l1=N   l2bw=BW|auto                              fred: NPUs per L1 switch, L1<->L2 bandwidth
      cfg=A|B|C|D                                      fred: the FRED paper's configurations
      innet=yes|no                                     fred (default yes), switch, graph (no):
                                                       switches reduce and multicast in-network
      links=LINK(;LINK)*                               graph: LINK := PAIR[:BW[:T[:DIM]]]
      linkbw=PAIR:BW(;PAIR:BW)*                        per-link bandwidth overrides
      linklat=PAIR:T(;PAIR:T)*                         per-link latency overrides
      fail=PAIR(;PAIR)*                                failed links
      fail_random=K  seed=S                            K random NPU-NPU link pairs fail (seed 0)
    PAIR      := A "-" B                               both directions between nodes A and B
               | A ">" B                               only A -> B
    BW        := number unit   (GB/s = 1e9 B/s, GiB/s = 2^30 B/s, MB/s, TB/s, ...)
    T         := number unit   (ns, us, ms, s)

Every error is a `SpecError` whose `SourcePos` has ``file="<spec>"``, the 1-based column of the
offending token and the whole spec as ``text``. SPEC.md has the full reference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from topologies.errors import SourcePos, SpecError
from topologies.units import parse_bandwidth_bytes_per_ns, parse_time_ns

KINDS = (
    "ring",
    "uniring",
    "fc",
    "switch",
    "mesh",
    "torus",
    "hypercube",
    "stack",
    "fred",
    "graph",
    "file",
)
FILE_SUFFIXES = (".yaml", ".yml", ".json")

_GIB_PER_S = 2**30 / 1e9  # GiB/s in bytes per ns, as units.py converts it
_PAIR = re.compile(r"(\d+)\s*([->])\s*(\d+)")


@dataclass(frozen=True)
class Token:
    """A piece of the spec and the 1-based column of its first character."""

    text: str
    col: int


@dataclass(frozen=True)
class Option:
    """``key=value`` with both tokens."""

    key: Token
    value: Token


@dataclass(frozen=True)
class Pair:
    """``A-B`` (``both``) or ``A>B`` naming links, with the token it came from."""

    a: int
    b: int
    both: bool
    token: Token

    def directed(self) -> list[tuple[int, int]]:
        """The directed pairs this names."""
        return [(self.a, self.b), (self.b, self.a)] if self.both else [(self.a, self.b)]


@dataclass(frozen=True)
class SpecSyntax:
    """A spec split into kind, shape and options (values not yet interpreted)."""

    kind: str
    kind_token: Token
    shape: Token
    options: dict[str, Option]


class SpecReader:
    """Reads one spec string; every error it raises points into that string."""

    def __init__(self, text: str) -> None:
        self.text = text

    def pos(self, col: int) -> SourcePos:
        """The position of column ``col`` in this spec."""
        return SourcePos(file="<spec>", column=max(col, 1), text=self.text)

    def error(self, message: str, col: int) -> SpecError:
        """A SpecError at column ``col``."""
        return SpecError(message, self.pos(col))

    # --- syntax -----------------------------------------------------------------------------

    def syntax(self) -> SpecSyntax:
        """Split the spec into kind, shape and options."""
        for i, ch in enumerate(self.text):
            if not ch.isprintable():
                raise self.error(
                    f"the spec holds the control character {ch!r} (specs are printable text)",
                    i + 1,
                )
        whole = strip(Token(self.text, 1))
        if not whole.text:
            raise self.error("empty topology spec (expected KIND:SHAPE, e.g. ring:8)", 1)
        head = whole.text.split(":", 1)[0]
        first = whole.text.split(",", 1)[0].strip()
        if head.strip().lower() not in KINDS and first.lower().endswith(FILE_SUFFIXES):
            kind = "file"
            kind_token = Token("file", whole.col)
            rest = whole
        else:
            kind_token = strip(Token(head, whole.col))
            kind = kind_token.text.lower()
            if kind not in KINDS:
                raise self.error(
                    f"unknown topology kind {kind_token.text!r} (expected one of "
                    f"{', '.join(KINDS)}, or a .yaml/.yml/.json path)",
                    kind_token.col,
                )
            if ":" not in whole.text:
                raise self.error(
                    f"expected ':' and a shape after {kind!r} (e.g. {_EXAMPLES[kind]})",
                    whole.col + len(whole.text),
                )
            rest = Token(whole.text[len(head) + 1 :], whole.col + len(head) + 1)
        parts = self.split(rest, ",")
        shape = parts[0]
        if not shape.text:
            raise self.error(f"missing shape after '{kind}:' (e.g. {_EXAMPLES[kind]})", shape.col)
        options: dict[str, Option] = {}
        for part in parts[1:]:
            if not part.text:
                raise self.error("empty option (expected key=value)", part.col)
            if "=" not in part.text:
                raise self.error(f"option {part.text!r} is not key=value", part.col)
            key_text, value_text = part.text.split("=", 1)
            key = strip(Token(key_text, part.col))
            value = strip(Token(value_text, part.col + len(key_text) + 1))
            if not key.text:
                raise self.error("option has no key before '='", part.col)
            if key.text in options:
                raise self.error(f"option {key.text!r} is given twice", key.col)
            if not value.text:
                raise self.error(f"option {key.text!r} has no value after '='", value.col)
            options[key.text] = Option(key, value)
        return SpecSyntax(kind, kind_token, shape, options)

    def split(self, token: Token, sep: str) -> list[Token]:
        """Split at ``sep`` outside brackets; pieces are stripped of spaces."""
        pieces: list[Token] = []
        depth = 0
        start = 0
        for i, ch in enumerate(token.text):
            if ch == "[":
                depth += 1
            elif ch == "]":
                depth -= 1
                if depth < 0:
                    raise self.error("unmatched ']'", token.col + i)
            elif ch == sep and depth == 0:
                pieces.append(strip(Token(token.text[start:i], token.col + start)))
                start = i + 1
        if depth > 0:
            raise self.error("unclosed '['", token.col + token.text.index("["))
        pieces.append(strip(Token(token.text[start:], token.col + start)))
        return pieces

    # --- values -----------------------------------------------------------------------------

    def integer(self, token: Token, what: str, minimum: int) -> int:
        """A decimal integer >= ``minimum``."""
        if not token.text:
            raise self.error(f"missing {what}", token.col)
        if not token.text.isdigit() or not token.text.isascii():
            kind = "positive" if minimum >= 1 else "non-negative"
            raise self.error(f"{what} {token.text!r} is not a {kind} integer", token.col)
        if len(token.text) > 18:
            raise self.error(
                f"{what} {token.text[:12]}... has {len(token.text)} digits (at most 18)", token.col
            )
        value = int(token.text)
        if value < minimum:
            raise self.error(f"{what} must be at least {minimum}, not {value}", token.col)
        return value

    def bandwidth(self, token: Token) -> float:
        """A bandwidth with a unit, in bytes per ns."""
        return parse_bandwidth_bytes_per_ns(token.text, self.pos(token.col))

    def latency(self, token: Token) -> float:
        """A time with a unit, in ns."""
        return parse_time_ns(token.text, self.pos(token.col))

    def value_list(self, token: Token) -> list[Token]:
        """``[a,b,...]`` -> its items; a single value -> ``[value]``."""
        if not token.text.startswith("["):
            if "]" in token.text:
                raise self.error("unmatched ']'", token.col + token.text.index("]"))
            return [token]
        if not token.text.endswith("]"):
            raise self.error("expected ']' at the end of the list", token.col + len(token.text))
        inner = Token(token.text[1:-1], token.col + 1)
        items = self.split(inner, ",")
        for item in items:
            if not item.text:
                raise self.error("empty list item", item.col)
        return items

    def pair(self, token: Token, what: str) -> Pair:
        """``A-B`` or ``A>B``."""
        m = _PAIR.fullmatch(token.text)
        if m is None:
            raise self.error(
                f"{what} entry {token.text!r} is not A-B (both directions) or A>B (one direction)",
                token.col,
            )
        a, b = int(m.group(1)), int(m.group(3))
        if a == b:
            raise self.error(f"{what} entry {token.text!r} joins node {a} to itself", token.col)
        return Pair(a, b, m.group(2) == "-", token)

    def entries(self, token: Token, what: str) -> list[Token]:
        """The ``;``-separated entries of an option value."""
        items = self.split(token, ";")
        for item in items:
            if not item.text:
                raise self.error(f"empty {what} entry", item.col)
        return items

    def pair_with_fields(self, token: Token, what: str) -> tuple[Pair, list[Token]]:
        """``PAIR:x:y...`` -> the pair and the tokens after it."""
        pieces = self.split(token, ":")
        for piece in pieces[1:]:
            if not piece.text:
                raise self.error(f"{what} entry {token.text!r} has an empty field", piece.col)
        return self.pair(pieces[0], what), pieces[1:]


_EXAMPLES = {
    "ring": "ring:8",
    "uniring": "uniring:8",
    "fc": "fc:8",
    "switch": "switch:16",
    "mesh": "mesh:4x4",
    "torus": "torus:4x4x4",
    "hypercube": "hypercube:6",
    "stack": "stack:ring4*fc4*switch8",
    "fred": "fred:20",
    "graph": "graph:4,links=0-1;1-2;2-3;3-0",
    "file": "file:net.yaml",
}


def strip(token: Token) -> Token:
    """The token without surrounding spaces, its column moved past the leading ones."""
    lead = len(token.text) - len(token.text.lstrip())
    return Token(token.text.strip(), token.col + lead)


def format_number(value: float) -> str:
    """The shortest text that reads back as exactly ``value``: ``50``, ``53.6870912``."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def format_bandwidth(bytes_per_ns: float) -> str:
    """``50.0`` -> ``50GB/s``; ``53.6870912`` -> ``50GiB/s``. The shorter of the two forms that
    reads back as exactly the same float."""
    text = f"{format_number(bytes_per_ns)}GB/s"
    gib = format_number(bytes_per_ns / _GIB_PER_S)
    if float(gib) * _GIB_PER_S == bytes_per_ns and len(gib) + 5 < len(text):
        return f"{gib}GiB/s"
    return text


def format_latency(ns: float) -> str:
    """``500.0`` -> ``500ns``."""
    return f"{format_number(ns)}ns"


def format_per_dim(values: list[float], *, bw: bool) -> str:
    """One value when all are equal, else ``[v0,v1,...]``."""
    f = format_bandwidth if bw else format_latency
    if all(v == values[0] for v in values):
        return f(values[0])
    return "[" + ",".join(f(v) for v in values) + "]"


def format_pairs(pairs: dict[tuple[int, int], str] | set[tuple[int, int]]) -> str:
    """Directed pairs (optionally with a value each) as ``a-b`` / ``a>b`` entries, sorted.

    A pair present in both directions with the same value is written once as ``a-b``.
    """
    values: dict[tuple[int, int], str] = (
        dict(pairs) if isinstance(pairs, dict) else dict.fromkeys(pairs, "")
    )
    out: list[tuple[tuple[int, int], str]] = []
    for (a, b), val in values.items():
        rev = values.get((b, a))
        if rev is not None and rev == val:
            if a < b:
                out.append(((a, b), f"{a}-{b}" + (f":{val}" if val else "")))
        else:
            out.append(((a, b), f"{a}>{b}" + (f":{val}" if val else "")))
    return ";".join(text for _, text in sorted(out))
