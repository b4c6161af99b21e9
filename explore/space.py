"""Points of a parameter set: a study's parameters resolved into every knob's value, the
derived knobs computed, the built-in checks and the constraints applied (docs/explore.md,
section 1). An invalid point becomes an `Infeasible` naming the check or constraint it failed,
without anything being simulated. `precheck` refuses, before a study starts, a constraint that
no point of the set satisfies.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from explore.expr import EvalError
from explore.network import ExploreError
from explore.psa import Knob, Psa, canonical
from explore.psa_schema import BUILTINS, KNOBS
from topologies.errors import SourcePos

PLAN_KNOBS = ("npus", "dp", "tp", "pp", "sp", "microbatches", "microbatch_size", "seq", "zero")
"""The knobs that shape a generated iteration, as `workloads.transformer.generate` and
`peak_memory` name their arguments."""

GIB = 1 << 30

PRECHECK_LIMIT = 20_000
"""`precheck` enumerates a constraint's combinations up to this many, else samples as many."""


@dataclass(frozen=True)
class Point:
    """A valid point: ``values`` of every knob (per-dimension ones as lists), ``derived``
    (the derived knobs' values), ``memory_gib`` (largest per-NPU footprint), ``cost``
    (LIBRA's network cost, $) and ``key`` (canonical JSON of ``values``, the cache key)."""

    values: dict[str, Any]
    derived: dict[str, Any]
    memory_gib: float
    cost: float
    key: str


@dataclass(frozen=True)
class Infeasible:
    """A point refused before simulation: ``reason`` (the check's or constraint's name, the
    same for every point it refuses) and ``detail`` (this point's values)."""

    reason: str
    detail: str


def _spec(model: Any) -> Any:
    from workloads.transformer import model_spec

    return model_spec(model)


BUILTIN_CHECKS: tuple[tuple[str, Callable[[Mapping[str, Any]], bool], tuple[str, ...]], ...] = (
    (
        "network: product of the sizes == npus",
        lambda e: e["network_npus"] == e["npus"],
        ("size", "npus"),
    ),
    (
        "workload: dp*tp*pp == npus",
        lambda e: e["dp"] * e["tp"] * e["pp"] == e["npus"],
        ("dp", "tp", "pp", "npus"),
    ),
    (
        "workload: pp divides the layers",
        lambda e: _spec(e["model"]).layers % e["pp"] == 0,
        ("model", "pp"),
    ),
    (
        "workload: tp divides the heads",
        lambda e: _spec(e["model"]).heads % e["tp"] == 0,
        ("model", "tp"),
    ),
    (
        "memory: peak_memory_gib <= memory_gib",
        lambda e: e["peak_memory_gib"] <= e["memory_gib"],
        (*BUILTINS["peak_memory_gib"], "memory_gib"),
    ),
)
"""Checks every point passes before the PSA's own constraints: name, test, knobs read."""


class Env(Mapping[str, Any]):
    """The values an expression sees for one point: knobs (derived ones computed when first
    read), the PSA's new derived names, and the built-ins of `BUILTINS`."""

    def __init__(self, psa: Psa, base: Mapping[str, Any]) -> None:
        self.psa = psa
        self.base = base
        self.exprs = dict(psa.derived)
        self.cache: dict[str, Any] = {}
        self.busy: set[str] = set()

    def __getitem__(self, name: str) -> Any:
        if name in self.cache:
            return self.cache[name]
        if name in self.busy:
            raise EvalError(f"{name} depends on itself")
        self.busy.add(name)
        try:
            if name in self.exprs:
                v = _coerce(self.psa, name, self.exprs[name](self))
            elif name in self.base:
                v = self.base[name]
            elif name in BUILTINS:
                v = self._builtin(name)
            else:
                raise KeyError(name)
        finally:
            self.busy.discard(name)
        self.cache[name] = v
        return v

    def __iter__(self) -> Iterator[str]:
        return iter({*self.base, *self.exprs, *BUILTINS})

    def __len__(self) -> int:
        return len({*self.base, *self.exprs, *BUILTINS})

    def __contains__(self, name: object) -> bool:
        return name in self.base or name in self.exprs or name in BUILTINS

    def network(self) -> Any:
        from explore.network import network_from_kinds

        try:
            return network_from_kinds(self["topology"], self["size"])
        except ExploreError as e:
            raise EvalError(e.message) from None

    def _builtin(self, name: str) -> Any:
        if name == "dims":
            return self.psa.dims
        if name == "network_npus":
            n = 1
            for s in self["size"]:
                n *= s
            return n
        if name == "link_bandwidth":
            from explore.network import link_bandwidths

            return list(link_bandwidths(self.network(), self["bandwidth"]))
        if name == "cost":
            net = self.network()
            try:
                return cost_model(self.psa.cost_model, net).cost(net, self["bandwidth"])
            except ExploreError as e:
                raise EvalError(e.message) from None
        assert name == "peak_memory_gib"
        from workloads.model import WorkloadError
        from workloads.transformer import peak_memory

        try:
            peak = peak_memory(self["model"], **{k: self[k] for k in PLAN_KNOBS})
        except WorkloadError as e:
            raise EvalError(e.message) from None
        return peak["total"] / GIB


_COST_MODELS: dict[tuple[str | None, int], Any] = {}


def cost_model(path: str | None, net: Any) -> Any:
    """LIBRA's cost model of a PSA: its file (read once), else LIBRA's shipped unit costs."""
    from explore.cost import default_cost_model, read_cost_model

    key = (path, net.ndims)
    if key not in _COST_MODELS:
        _COST_MODELS[key] = read_cost_model(path) if path else default_cost_model(net)
    return _COST_MODELS[key]


def _coerce(psa: Psa, name: str, v: Any) -> Any:
    """A derived value of knob ``name`` converted to the knob's type and checked."""
    info = KNOBS.get(name)
    if info is None:
        return v

    def one(x: Any) -> Any:
        if info.kind == "int":
            if isinstance(x, float) and x.is_integer():
                x = int(x)
            if isinstance(x, bool) or not isinstance(x, int):
                raise EvalError(f"derived {name} = {x!r} is not an integer")
        elif info.kind == "float":
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise EvalError(f"derived {name} = {x!r} is not a number")
            x = float(x)
        elif info.kind == "bool":
            x = bool(x)
        elif not isinstance(x, str):
            raise EvalError(f"derived {name} = {x!r} is not a string")
        if info.choices is not None and x not in info.choices:
            raise EvalError(f"derived {name} = {x!r} is not one of {info.choices}")
        if info.minimum is not None and x < info.minimum:
            raise EvalError(f"derived {name} = {x!r} is below {info.minimum:g}")
        if info.maximum is not None and x > info.maximum:
            raise EvalError(f"derived {name} = {x!r} is above {info.maximum:g}")
        return x

    if info.per_dim:
        if not isinstance(v, list):
            v = [v] * psa.dims
        if len(v) != psa.dims:
            raise EvalError(f"derived {name} has {len(v)} values for {psa.dims} dimensions")
        return [one(x) for x in v]
    return one(v)


def base_values(psa: Psa, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every knob's value before derivation: fixed knobs' values and the study's
    ``params`` (``name``, or ``name.d`` per dimension)."""
    out: dict[str, Any] = {}
    for name, k in psa.knobs.items():
        if not k.searched:
            out[name] = list(k.fixed) if isinstance(k.fixed, list) else k.fixed
        elif k.scope == "per-dim":
            out[name] = [params[f"{name}.{d}"] for d in range(psa.dims)]
        elif k.scope == "same":
            out[name] = [params[name]] * psa.dims
        else:
            out[name] = params[name]
    return out


def resolve(psa: Psa, params: Mapping[str, Any]) -> Point | Infeasible:
    """The point of ``params``: derived knobs, built-in checks, then the PSA's constraints
    in file order; the first failure makes it `Infeasible`."""
    env = Env(psa, base_values(psa, params))
    derived: dict[str, Any] = {}
    for name, _ in psa.derived:
        try:
            derived[name] = env[name]
        except EvalError as e:
            return Infeasible(f"derived knob {name}", str(e))
    for name, test, _ in BUILTIN_CHECKS:
        try:
            ok = test(env)
        except EvalError as e:
            return Infeasible(name, str(e))
        if not ok:
            return Infeasible(name, _show(env, name))
    for c in psa.constraints:
        try:
            ok = bool(c.expr(env))
        except EvalError as e:
            return Infeasible(c.name, str(e))
        if not ok:
            return Infeasible(c.name, ", ".join(f"{n}={env[n]!r}" for n in sorted(c.expr.names)))
    values = {n: env[n] for n in KNOBS}
    try:
        memory, cost = env["peak_memory_gib"], env["cost"]
    except EvalError as e:
        return Infeasible("network cost", str(e))
    return Point(values, derived, memory, cost, canonical(values))


def _show(env: Env, check: str) -> str:
    names = next(d for n, _, d in BUILTIN_CHECKS if n == check)
    return ", ".join(f"{n}={env[n]!r}" for n in names)


# --- satisfiability before the study ------------------------------------------------------


def _deps(psa: Psa, names: frozenset[str] | tuple[str, ...]) -> set[str]:
    """The knobs that the names read, through derived knobs and built-ins."""
    exprs = dict(psa.derived)
    out: set[str] = set()
    todo = list(names)
    seen: set[str] = set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n in exprs:
            todo.extend(exprs[n].names)
        elif n in BUILTINS:
            todo.extend(BUILTINS[n])
        elif n in KNOBS or n in psa.knobs:
            out.add(n)
    return out


def _axes(psa: Psa, knobs: set[str]) -> list[tuple[str, tuple[Any, ...]]]:
    """The study parameters of the searched ``knobs`` and their domains."""
    axes: list[tuple[str, tuple[Any, ...]]] = []
    for name in sorted(knobs):
        k: Knob = psa.knobs[name]
        if k.searched:
            axes.extend((p, k.values) for p in k.params(psa.dims))
    return axes


def _default_params(psa: Psa) -> dict[str, Any]:
    out = {}
    for k in psa.searched:
        for p in k.params(psa.dims):
            out[p] = k.values[0]
    return out


def _combos(
    axes: list[tuple[str, tuple[Any, ...]]], rng: random.Random
) -> tuple[Iterator[dict[str, Any]], bool, int]:
    total = 1
    for _, vals in axes:
        total *= len(vals)
    names = [a for a, _ in axes]
    if total <= PRECHECK_LIMIT:
        it = (dict(zip(names, c, strict=True)) for c in itertools.product(*(v for _, v in axes)))
        return it, True, total
    it = ({a: rng.choice(v) for a, v in axes} for _ in range(PRECHECK_LIMIT))
    return it, False, PRECHECK_LIMIT


def precheck(psa: Psa, seed: int = 0) -> list[str]:
    """Refuse (ExploreError at the constraint) a check or constraint that no point of the
    PSA satisfies, trying every combination of the knobs it reads when there are at most
    `PRECHECK_LIMIT` (else as many random ones); then the same for all of them together.
    Returns notes: what was only sampled, and the share of sampled points that pass."""
    rng = random.Random(seed)
    notes: list[str] = []
    defaults = _default_params(psa)
    checks: list[tuple[str, Callable[[Env], Any], set[str], Any]] = [
        (n, t, _deps(psa, d), None) for n, t, d in BUILTIN_CHECKS
    ]
    checks += [(c.name, c.expr, _deps(psa, c.expr.names), c.expr.pos) for c in psa.constraints]
    for name, test, deps, pos in checks:
        axes = _axes(psa, deps)
        combos, exact, n = _combos(axes, rng)
        if not any(_passes(psa, {**defaults, **c}, test) for c in combos):
            tried = (
                f"all {n:,} combinations of {', '.join(sorted(deps))}"
                if exact
                else f"{n:,} random combinations of {', '.join(sorted(deps))}"
            )
            if exact:
                raise ExploreError(
                    f"no point satisfies {name!r} (tried {tried})", pos or SourcePos(psa.path)
                )
            notes.append(f"no sampled point satisfied {name!r} ({tried})")
    axes = _axes(psa, _deps(psa, tuple(d for _, _, ds, _ in checks for d in ds)))
    combos, exact, n = _combos(axes, rng)
    good = sum(1 for c in combos if isinstance(resolve(psa, {**defaults, **c}), Point))
    if good == 0 and exact:
        raise ExploreError(
            f"no point satisfies every check and constraint together (tried all {n:,} "
            "combinations of the knobs they read)",
            SourcePos(psa.path),
        )
    what = "of all" if exact else "of a sample of"
    notes.append(
        f"{good:,} {what} {n:,} combinations of the constrained knobs pass every check "
        f"({good / n:.1%})"
    )
    return notes


def _passes(psa: Psa, params: dict[str, Any], test: Callable[[Env], Any]) -> bool:
    env = Env(psa, base_values(psa, params))
    try:
        return bool(test(env))
    except EvalError:
        return False
