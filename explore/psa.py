"""A parameter set (PSA) read from YAML: the knobs a study searches, each with its domain and
scope, the derived knobs, the constraints and the objectives (docs/explore.md, section 1).

`read_psa` validates the file against `explore.psa_schema.SCHEMA`, then checks each knob's
values against `explore.psa_schema.KNOBS` and parses the expressions; every error is an
ExploreError naming the file, line, column and knob. A knob's domain is a fixed value, a set
(a YAML list or ``values:``), an integer or decimal ``range: [min, max, step]`` or ``pow2:
[lo, hi]`` (the powers of two between); a per-dimension knob's scope is ``per-dim`` (one
value per dimension, the default) or ``same`` (one value for all of them).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from explore.expr import FUNCTIONS, Expr, parse_expr
from explore.network import ExploreError
from explore.psa_schema import BUILTINS, KNOBS, SCHEMA, STACKS, KnobInfo
from topologies.errors import SourcePos

MAX_VALUES = 1_000_000
"""At most this many values in one knob's domain."""

_KIND_ALIASES = {"fullyconnected": "fc", "fully_connected": "fc"}


@dataclass(frozen=True)
class Knob:
    """A knob of the PSA: ``values`` its domain enumerated (one entry for a fixed knob; for a
    fixed per-dimension knob ``fixed`` holds the list), ``scope`` ("scalar", "same" or
    "per-dim"), ``form`` ("fixed", "set", "range", "pow2"), ``step`` of a range."""

    name: str
    info: KnobInfo
    form: str
    values: tuple[Any, ...]
    scope: str
    pos: SourcePos | None = None
    fixed: Any = None
    step: float | None = None

    @property
    def searched(self) -> bool:
        return self.form != "fixed"

    def params(self, dims: int) -> list[str]:
        """The names of the study's parameters for this knob: ``name`` or ``name.0`` ...
        ``name.{dims-1}`` for a per-dimension scope."""
        if self.scope == "per-dim":
            return [f"{self.name}.{d}" for d in range(dims)]
        return [self.name]


@dataclass(frozen=True)
class Constraint:
    """A constraint: its ``name`` (the expression's text unless named) and ``expr``."""

    name: str
    expr: Expr


@dataclass(frozen=True)
class Psa:
    """A parameter set: ``knobs`` (every knob, defaults included as fixed), ``derived``
    (name and expression, in file order), ``constraints``, ``objectives`` (the default
    ones), ``reward_targets`` (COSMIC's reward normalisation), ``cost_model`` (a LIBRA
    cost-model file, absolute, or None for LIBRA's shipped costs) and the file's ``text``."""

    path: str
    name: str
    dims: int
    knobs: dict[str, Knob]
    derived: tuple[tuple[str, Expr], ...] = ()
    constraints: tuple[Constraint, ...] = ()
    objectives: tuple[str, ...] = ("time",)
    reward_targets: dict[str, float] = field(default_factory=dict)
    cost_model: str | None = None
    text: str = ""
    baseline: dict[str, Any] = field(default_factory=dict)

    @property
    def searched(self) -> list[Knob]:
        return [k for k in self.knobs.values() if k.searched]

    def fingerprint(self) -> str:
        """A hash of the file's text: a study resumes only with the PSA it was started with."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def space_size(self) -> int:
        """How many points the searched knobs span (before constraints)."""
        n = 1
        for k in self.searched:
            n *= len(k.values) ** (self.dims if k.scope == "per-dim" else 1)
        return n

    def restricted(self, stacks: tuple[str, ...]) -> Psa:
        """This PSA with only the knobs of ``stacks`` searched; the others fixed at their
        ``baseline`` value, else the first value of their domain (COSMIC's single-stack
        search)."""
        knobs = {}
        for name, k in self.knobs.items():
            if k.searched and k.info.stack not in stacks:
                fixed = self.baseline.get(name, k.values[0])
                if k.info.per_dim and not isinstance(fixed, list):
                    fixed = [fixed] * self.dims
                shown = tuple(dict.fromkeys(fixed)) if isinstance(fixed, list) else (fixed,)
                k = Knob(name, k.info, "fixed", shown, k.scope, k.pos, fixed)
            knobs[name] = k
        return Psa(
            self.path,
            self.name,
            self.dims,
            knobs,
            self.derived,
            self.constraints,
            self.objectives,
            self.reward_targets,
            self.cost_model,
            self.text,
            self.baseline,
        )


def read_psa(path: str | Path, text: str | None = None) -> Psa:
    """The PSA in the YAML file ``path`` (or ``text``, read as if from ``path``).
    ExploreError naming file, line and knob for anything malformed."""
    from topologies.errors import SpecError
    from topologies.files import YamlDocument

    name = str(path)
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            raise ExploreError(
                f"cannot read the parameter set: {reason}", SourcePos(name)
            ) from None
    try:
        doc = YamlDocument(name, text)
    except SpecError as e:
        raise ExploreError(e.message, e.pos) from None
    _validate(doc)
    data: dict[str, Any] = doc.data
    dims: int = data["dimensions"]
    knobs: dict[str, Knob] = {}
    for stack in STACKS:
        for kname, spec in (data.get(stack) or {}).items():
            knobs[kname] = _knob(doc, (stack, kname), KNOBS[kname], spec, dims)
    for kname, info in KNOBS.items():
        if kname in knobs:
            continue
        if info.required and kname not in (data.get("derived") or {}):
            raise ExploreError(f"{info.stack}.{kname} ({info.help}) must be given", doc.pos(()))
        value = [info.default] * dims if info.per_dim else info.default
        knobs[kname] = Knob(
            kname,
            info,
            "fixed",
            (info.default,),
            "per-dim" if info.per_dim else "scalar",
            None,
            value,
        )

    for fname, spec in (data.get("free") or {}).items():
        key = ("free", str(fname))
        if fname in KNOBS or fname in BUILTINS or fname in FUNCTIONS:
            raise _err(
                doc, key, f"free knob {fname!r} takes the name of a knob or built-in", at_key=True
            )
        vals = spec.get("values") or []
        kind = (
            "bool"
            if vals and all(isinstance(v, bool) for v in vals)
            else "str"
            if vals and all(isinstance(v, str) for v in vals)
            else "int"
            if all(isinstance(v, int) and not isinstance(v, bool) for v in vals)
            and all(isinstance(v, int) for v in spec.get("range", []))
            else "float"
        )
        info = KnobInfo(spec["stack"], kind, False, None, "a free knob (read by derived knobs)")
        body = {k: v for k, v in spec.items() if k != "stack"}
        knobs[str(fname)] = _knob(doc, key, info, body, dims)
    known = set(knobs) | set(KNOBS)
    derived: list[tuple[str, Expr]] = []
    for dname, text_ in (data.get("derived") or {}).items():
        key = ("derived", dname)
        if not str(dname).isidentifier() or dname in FUNCTIONS or dname in BUILTINS:
            raise _err(doc, key, f"{dname!r} cannot name a derived knob", at_key=True)
        if dname in knobs and knobs[dname].info.help.startswith("a free knob"):
            raise _err(doc, key, f"knob {dname!r} is both free and derived", at_key=True)
        if dname in knobs and knobs[dname].searched:
            raise _err(doc, key, f"knob {dname!r} is both searched and derived", at_key=True)
        if dname in KNOBS and dname in (data.get(KNOBS[dname].stack) or {}):
            raise _err(doc, key, f"knob {dname!r} is both set and derived", at_key=True)
        if any(dname == n for n, _ in derived):
            raise _err(doc, key, f"{dname!r} is derived twice", at_key=True)
        derived.append((str(dname), parse_expr(text_, known, _expr_pos(doc, key))))
        known.add(str(dname))
    _check_cycles(doc, derived)

    known |= set(BUILTINS)
    constraints = []
    for i, c in enumerate(data.get("constraints") or []):
        ckey: tuple[str | int, ...] = ("constraints", i)
        if isinstance(c, dict):
            expr = parse_expr(c["expr"], known, _expr_pos(doc, (*ckey, "expr")))
            constraints.append(Constraint(c.get("name") or expr.text, expr))
        else:
            expr = parse_expr(c, known, _expr_pos(doc, ckey))
            constraints.append(Constraint(expr.text, expr))

    targets = {
        str(k): float(v) for k, v in ((data.get("reward") or {}).get("targets") or {}).items()
    }
    objectives = tuple(data.get("objectives") or ("time",))
    if "reward" in objectives and not targets:
        raise _err(doc, ("objectives",), "the reward objective needs reward.targets")
    baseline: dict[str, Any] = {}
    for bname, v in (data.get("baseline") or {}).items():
        bkey = ("baseline", str(bname))
        if bname not in knobs:
            raise _err(doc, bkey, f"unknown knob {bname!r} in baseline", at_key=True)
        info = knobs[bname].info
        if isinstance(v, list):
            if not info.per_dim or len(v) != dims:
                raise _err(
                    doc,
                    bkey,
                    f"knob {bname!r}: a baseline list needs one value per dimension ({dims})",
                )
            baseline[bname] = [_value(doc, (*bkey, i), info, x, bname) for i, x in enumerate(v)]
        else:
            baseline[bname] = _value(doc, bkey, info, v, bname)
    cost_model = data.get("cost_model")
    if cost_model is not None:
        cost_model = str((Path(name).parent / cost_model).resolve())
    return Psa(
        name,
        str(data.get("name") or Path(name).stem),
        dims,
        knobs,
        tuple(derived),
        tuple(constraints),
        objectives,
        targets,
        cost_model,
        text,
        baseline,
    )


def _err(doc: Any, key: tuple[str | int, ...], msg: str, *, at_key: bool = False) -> ExploreError:
    """An ExploreError at ``key``; the message starts with the entry's path unless it names
    the knob itself."""
    where = ".".join(str(k) if isinstance(k, str) else f"[{k}]" for k in key).replace(".[", "[")
    text = msg if "knob" in msg or not where else f"{where}: {msg}"
    return ExploreError(text, doc.pos(key, at_key=at_key))


def _check_cycles(doc: Any, derived: list[tuple[str, Expr]]) -> None:
    """Refuse derived knobs that depend on themselves (through other derived knobs)."""
    reads = {n: e.names for n, e in derived}
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        if state.get(n) == 2 or n not in reads:
            return
        if state.get(n) == 1:
            cycle = " -> ".join([*path[path.index(n) :], n])
            raise _err(doc, ("derived", n), f"derived knobs depend on themselves: {cycle}")
        state[n] = 1
        for m in sorted(reads[n]):
            visit(m, [*path, n])
        state[n] = 2

    for n, _ in derived:
        visit(n, [])


def _validate(doc: Any) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(doc.data), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return
    err = jsonschema.exceptions.best_match(errors)
    key = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        extra = [k for k in err.instance if k not in allowed]
        where = key[0] if key else "the parameter set"
        what = "knob" if key and key[0] in STACKS else "key"
        raise _err(
            doc,
            (*key, str(extra[0])),
            f"unknown {what} {extra[0]!r} in {where} (known: {', '.join(allowed)})",
            at_key=True,
        )
    if err.validator == "required":
        raise _err(doc, key, err.message)
    if err.validator == "oneOf" and len(key) == 2 and key[0] in STACKS:
        raise _err(
            doc,
            key,
            f"knob {key[1]!r}: expected a value, a list of values, or a mapping with one of "
            "values, range, pow2, fixed (and scope)",
        )
    raise _err(doc, key, f"{err.message}")


def _expr_pos(doc: Any, key: tuple[str | int, ...]) -> SourcePos:
    """The position of an expression's first character (past an opening quote)."""
    pos: SourcePos = doc.pos(key)
    if pos.text and 0 < pos.column <= len(pos.text) and pos.text[pos.column - 1] in "'\"":
        return SourcePos(pos.file, pos.line, pos.column + 1, text=pos.text)
    return pos


def _value(doc: Any, key: tuple[str | int, ...], info: KnobInfo, v: Any, name: str) -> Any:
    """One value of knob ``name`` checked against its type, choices and bounds."""

    def bad(msg: str) -> ExploreError:
        return ExploreError(f"knob {name!r}: {msg}", doc.pos(key))

    if info.kind == "bool":
        if not isinstance(v, bool):
            raise bad(f"{v!r} is not true or false")
        return v
    if info.kind == "str":
        if not isinstance(v, str):
            raise bad(f"{v!r} is not a string")
        if name == "topology":
            v = _KIND_ALIASES.get(v.lower(), v.lower())
        if name == "model":
            from workloads.transformer import MODELS

            if v not in MODELS:
                raise bad(f"unknown model {v!r} (known: {', '.join(MODELS)})")
    elif info.kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise bad(f"{v!r} is not an integer")
    else:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise bad(f"{v!r} is not a number")
        v = float(v)
    if info.choices is not None and v not in info.choices:
        raise bad(f"{v!r} is not one of {', '.join(map(str, info.choices))}")
    if info.minimum is not None and v < info.minimum:
        raise bad(f"{v!r} is below its minimum {info.minimum:g}")
    if info.maximum is not None and v > info.maximum:
        raise bad(f"{v!r} is above its maximum {info.maximum:g}")
    return v


def _knob(doc: Any, key: tuple[str, str], info: KnobInfo, spec: Any, dims: int) -> Knob:
    name = key[1]
    pos = doc.pos(key)
    default_scope = "per-dim" if info.per_dim else "scalar"
    if not isinstance(spec, dict):
        if isinstance(spec, list):
            values = tuple(_value(doc, (*key, i), info, v, name) for i, v in enumerate(spec))
            return _set(doc, key, info, values, default_scope, pos, dims)
        v = _value(doc, key, info, spec, name)
        fixed = [v] * dims if info.per_dim else v
        return Knob(name, info, "fixed", (v,), "same" if info.per_dim else "scalar", pos, fixed)
    scope = spec.get("scope", default_scope)
    if "scope" in spec and not info.per_dim:
        raise _err(doc, (*key, "scope"), f"knob {name!r} has one value, it takes no scope")
    if "fixed" in spec:
        f = spec["fixed"]
        if isinstance(f, list):
            if not info.per_dim or len(f) != dims:
                raise _err(
                    doc,
                    (*key, "fixed"),
                    f"knob {name!r}: a fixed list needs one value per dimension ({dims})"
                    if info.per_dim
                    else f"knob {name!r} takes one value, not a list",
                )
            fixed = [_value(doc, (*key, "fixed", i), info, v, name) for i, v in enumerate(f)]
            return Knob(name, info, "fixed", tuple(dict.fromkeys(fixed)), "per-dim", pos, fixed)
        v = _value(doc, (*key, "fixed"), info, f, name)
        return Knob(name, info, "fixed", (v,), scope, pos, [v] * dims if info.per_dim else v)
    if "values" in spec:
        vals = tuple(
            _value(doc, (*key, "values", i), info, v, name) for i, v in enumerate(spec["values"])
        )
        return _set(doc, key, info, vals, scope, pos, dims)
    if "range" in spec:
        rkey = (*key, "range")
        if info.kind not in ("int", "float"):
            raise _err(doc, rkey, f"knob {name!r} is not numeric: give a set of values")
        lo, hi, *rest = spec["range"]
        step = rest[0] if rest else 1
        if info.kind == "int" and not all(
            isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi, step)
        ):
            raise _err(doc, rkey, f"knob {name!r} is an integer: min, max and step must be too")
        if not step > 0 or hi < lo:
            raise _err(doc, rkey, f"knob {name!r}: a range needs min <= max and step > 0")
        count = math.floor((hi - lo) / step + 1e-9) + 1
        if count > MAX_VALUES:
            raise _err(doc, rkey, f"knob {name!r}: {count:,} values (at most {MAX_VALUES:,})")
        vals = tuple(
            _value(
                doc, rkey, info, lo + i * step if info.kind == "int" else float(lo + i * step), name
            )
            for i in range(count)
        )
        if count == 1:
            return _set(doc, key, info, vals, scope, pos, dims)
        return Knob(name, info, "range", vals, scope, pos, None, float(step))
    pkey = (*key, "pow2")
    if info.kind != "int":
        raise _err(doc, pkey, f"knob {name!r} is not an integer: pow2 does not apply")
    lo, hi = spec["pow2"]
    powers = [1 << e for e in range(64) if lo <= 1 << e <= hi]
    if not powers:
        raise _err(doc, pkey, f"knob {name!r}: no power of two between {lo} and {hi}")
    vals = tuple(_value(doc, pkey, info, v, name) for v in powers)
    return _set(doc, key, info, vals, scope, pos, dims, form="pow2")


def _set(
    doc: Any,
    key: tuple[str, str],
    info: KnobInfo,
    values: tuple[Any, ...],
    scope: str,
    pos: SourcePos | None,
    dims: int,
    form: str = "set",
) -> Knob:
    name = key[1]
    if len(set(map(repr, values))) != len(values):
        raise _err(doc, key, f"knob {name!r} lists a value twice")
    if len(values) == 1:
        v = values[0]
        return Knob(name, info, "fixed", values, scope, pos, [v] * dims if info.per_dim else v)
    return Knob(name, info, form, values, scope, pos)


def canonical(values: dict[str, Any]) -> str:
    """A point's knob values as canonical JSON (sorted keys): the cache's key."""
    return json.dumps(values, sort_keys=True, separators=(",", ":"))
