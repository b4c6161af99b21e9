"""The one helper for collc's versioned JSON formats.

A document of such a format is a JSON object whose header names the format and its integer
version: ``{"format": "collc-hwprog", "version": 1, ...}``. Each format keeps a JSON Schema
(draft 2020-12) in the repository, as package data beside its code; `Format` loads it once,
and `Format.read` / `Format.check` turn every failure into one line:

- not UTF-8 or not JSON: the file, line and column; a key given twice in one object (readers
  disagree on which counts) and an integer too long for Python to convert are refused too;
- another format, or no header: the names found and expected;
- a version from the future (greater than the reader's): refused, naming both versions;
  older versions are accepted only when the format lists them in ``readable``;
- a schema violation: the JSON path of the offending value (``$.commands[3].vcs[0]``) and
  the schema's complaint.

Numbers are read as JSON carries them between tools (RFC 7493, I-JSON): an ``integer`` of the
schema is a JSON integer (not ``1e3``) of magnitude below 2^53 (`JSON_INT_LIMIT`), and a
``number`` is finite (Python's reader accepts ``NaN`` and ``Infinity``; the schema does not).

The schema library (``jsonschema``) is imported on first use, so importing a module that
declares a `Format` costs nothing at start-up. Large documents may declare sub-schemas in
``$defs``: ``Format.check(doc, defn="npu")`` validates against ``#/$defs/npu``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backends.hwprog.errors import FormatError
from topologies.errors import SourcePos

JSON_INT_LIMIT = 1 << 53
"""Integers of a document lie strictly between -2^53 and 2^53, the range a JSON number
holds exactly in every reader (RFC 7493)."""


def is_json_int(x: object) -> bool:
    """Whether ``x`` is what the schemas call an integer: a JSON integer below 2^53 in
    magnitude."""
    return type(x) is int and -JSON_INT_LIMIT < x < JSON_INT_LIMIT


def _is_json_number(x: object) -> bool:
    return is_json_int(x) or (type(x) is float and math.isfinite(x))


def json_path(parts: Any) -> str:
    """``$.a[3].b`` for the path ``("a", 3, "b")``."""
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif isinstance(p, str) and p.isidentifier():
            out += f".{p}"
        else:
            out += f"[{json.dumps(p)}]"
    return out


def _show(value: object, limit: int = 60) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Format:
    """A versioned JSON format: ``name``, the ``version`` this code writes, the versions it
    can read (``readable``, default just ``version``), and the schema file."""

    name: str
    version: int
    schema_file: Path
    readable: tuple[int, ...] = ()
    error: type[FormatError] = FormatError
    _schema: dict[str, Any] | None = field(default=None, repr=False)
    _validators: dict[str, Any] = field(default_factory=dict, repr=False)

    def header(self) -> dict[str, Any]:
        """The header fields every document of this format starts with."""
        return {"format": self.name, "version": self.version}

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema, loaded on first use."""
        if self._schema is None:
            with open(self.schema_file, encoding="utf-8") as f:
                loaded: dict[str, Any] = json.load(f)
            self._schema = loaded
        return self._schema

    def _validator(self, defn: str) -> Any:
        v = self._validators.get(defn)
        if v is None:
            from jsonschema import Draft202012Validator, validators  # lazy: start-up stays light

            types = Draft202012Validator.TYPE_CHECKER.redefine_many(
                {
                    "integer": lambda _c, x: is_json_int(x),
                    "number": lambda _c, x: _is_json_number(x),
                }
            )
            checker = validators.extend(Draft202012Validator, type_checker=types)
            root = self.schema
            schema = root if not defn else {"$ref": f"#/$defs/{defn}", "$defs": root["$defs"]}
            v = checker(schema)
            self._validators[defn] = v
        return v

    def load(self, path: Path | str) -> Any:
        """The parsed JSON of ``path`` (no checks beyond JSON itself)."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise self.error(f"{path}: no such file") from None
        except IsADirectoryError:
            raise self.error(f"{path}: is a folder, not a {self.name} file") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.error(f"{path}: not UTF-8 at byte {e.start}") from None
        try:
            return json.loads(text, object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as e:
            line = text.splitlines()[e.lineno - 1] if text.splitlines() else ""
            pos = SourcePos(str(path), e.lineno, e.colno, -1, line[:200])
            raise self.error(f"not JSON: {e.msg}", pos) from None
        except _DuplicateKey as e:
            raise self.error(
                f"{path}: the key {_show(e.key)} appears twice in one object (JSON readers "
                "disagree on which one counts)"
            ) from None
        except RecursionError:
            raise self.error(f"{path}: not JSON: nested too deeply") from None
        except ValueError:
            # Python refuses to convert an integer of more than 4,300 digits.
            raise self.error(f"{path}: a number with more digits than any field can hold") from None

    def check_header(self, doc: Any, where: str) -> int:
        """The document's version, after checking its format name and version."""
        if not isinstance(doc, dict):
            raise self.error(f"{where}: not a {self.name} document (a JSON object expected)")
        name = doc.get("format")
        if name != self.name:
            raise self.error(
                f"{where}: not a {self.name} document (format {_show(name)}, "
                f"expected {self.name!r})"
            )
        version = doc.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise self.error(f"{where}: $.version: {_show(version)} is not a version number")
        if version > self.version:
            raise self.error(
                f"{where}: {self.name} version {version} is from the future: this collc "
                f"reads up to version {self.version}"
            )
        if version not in (self.readable or (self.version,)):
            raise self.error(f"{where}: {self.name} version {version} is no longer read")
        return version

    def check(self, doc: Any, where: str, defn: str = "") -> None:
        """Validate ``doc`` against the schema (or its ``$defs`` entry ``defn``); the first
        error found (the deepest one of the best match) names its JSON path."""
        self.check_header(doc, where)
        validator = self._validator(defn)
        from jsonschema.exceptions import best_match

        err = best_match(validator.iter_errors(doc))
        if err is not None:
            raise self.error(f"{where}: {json_path(err.absolute_path)}: {_message(err)}")

    def read(self, path: Path | str, defn: str = "") -> Any:
        """Load ``path``, check its header and validate it."""
        doc = self.load(path)
        self.check(doc, str(path), defn)
        return doc


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of a document, refusing a key given twice (`json.loads` keeps the last)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return out


def _message(err: Any) -> str:
    x = err.instance
    if err.validator == "type" and err.validator_value in ("integer", "number"):
        if type(x) is float and not math.isfinite(x):
            return f"{x} is not a finite number"
        if type(x) is int:
            return f"{_show(x)} is beyond 2^53 in magnitude, more than JSON carries exactly"
        if type(x) is float and err.validator_value == "integer":
            return f"{_show(x)} is not an integer (write it without a fraction or exponent)"
    msg = str(err.message)
    return msg if len(msg) <= 200 else msg[:197] + "..."
