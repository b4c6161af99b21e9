"""The search agents of a study, all Optuna samplers (docs/explore.md, section 2): random,
TPE, NSGA-II (the genetic agent, multi-objective), CMA-ES (the ``cmaes`` package), GP-based
Bayesian optimisation (``torch``), grid search for small sets, and a random walk.

Optuna provides every agent but the random walk, which `RandomWalkSampler` adds: each step
changes one randomly chosen parameter of the latest feasible point to a neighbouring value.
`distributions` gives the study's parameters: a set becomes a categorical parameter, a range
an integer or stepped decimal one.
"""

from __future__ import annotations

import importlib.util
import random
import warnings
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import FrozenTrial, TrialState

from explore.network import ExploreError
from explore.psa import Psa

AGENTS: dict[str, str] = {
    "random": "uniform random sampling",
    "tpe": "tree-structured Parzen estimator (Bayesian)",
    "nsga2": "NSGA-II genetic algorithm (multi-objective)",
    "cmaes": "CMA-ES on the numeric knobs (the cmaes package; categorical knobs at random)",
    "gp": "Gaussian-process Bayesian optimisation (needs torch: collc[gp])",
    "grid": "every point of a small set, in random order",
    "rw": "random walk: one knob of the latest feasible point moved per step",
}
"""The agents ``collc explore --agent`` offers (static copy in `collc.registry`)."""

GRID_LIMIT = 100_000
"""Grid search refuses sets of more points than this."""


def distributions(psa: Psa) -> dict[str, BaseDistribution]:
    """The study's parameters: one per searched knob, or one per dimension."""
    out: dict[str, BaseDistribution] = {}
    for k in psa.searched:
        dist: BaseDistribution
        if k.form == "range" and k.info.kind == "int":
            step = int(k.step or 1)
            dist = IntDistribution(int(k.values[0]), int(k.values[-1]), step=step)
        elif k.form == "range":
            dist = FloatDistribution(float(k.values[0]), float(k.values[-1]), step=k.step)
        else:
            dist = CategoricalDistribution(list(k.values))
        for p in k.params(psa.dims):
            out[p] = dist
    return out


def make_sampler(
    agent: str, psa: Psa, *, seed: int, objectives: int
) -> optuna.samplers.BaseSampler:
    """The sampler of ``agent`` for ``psa``; ExploreError for an agent that does not apply
    (a missing package, a grid too large, CMA-ES or the random walk with several
    objectives)."""
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if agent == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if agent == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    if agent == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if agent == "cmaes":
        if objectives > 1:
            raise ExploreError("CMA-ES optimises one objective: use nsga2, tpe or random")
        _need("cmaes", "cmaes", "explore")
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if agent == "gp":
        _need("gp", "torch", "gp")
        _need("gp", "scipy", "gp")
        return optuna.samplers.GPSampler(seed=seed)
    if agent == "grid":
        space = {name: _choices(d) for name, d in distributions(psa).items()}
        size = 1
        for v in space.values():
            size *= len(v)
        if size > GRID_LIMIT:
            raise ExploreError(
                f"grid search over {size:,} points (at most {GRID_LIMIT:,}): use another agent "
                "or fewer knobs"
            )
        return optuna.samplers.GridSampler(space, seed=seed)
    if agent == "rw":
        if objectives > 1:
            raise ExploreError("the random walk follows one objective: use nsga2, tpe or random")
        return RandomWalkSampler(seed=seed)
    raise ExploreError(f"unknown agent {agent!r} (known: {', '.join(AGENTS)})")


def _need(agent: str, module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ExploreError(
            f"agent {agent} needs the {module} package: pip install 'collc[{extra}]'"
        )


def _choices(d: BaseDistribution) -> list[Any]:
    if isinstance(d, CategoricalDistribution):
        return list(d.choices)
    if isinstance(d, IntDistribution):
        return list(range(d.low, d.high + 1, d.step))
    assert isinstance(d, FloatDistribution) and d.step is not None
    n = round((d.high - d.low) / d.step)
    return [d.low + i * d.step for i in range(n + 1)]


class RandomWalkSampler(optuna.samplers.BaseSampler):
    """A random walk over the parameters: trial n starts from the parameters of the latest
    completed (feasible) trial before it and moves one parameter, chosen at random, to a
    neighbouring value (the next or previous step of a range, another member of a set).
    Until a feasible point exists it samples at random. Deterministic for a seed and the
    order of asks and tells."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._start = optuna.samplers.RandomSampler(seed=seed)
        self._moves: dict[int, tuple[dict[str, Any], str]] = {}

    def reseed_rng(self) -> None:
        self._rng.seed()
        self._start.reseed_rng()

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return {}

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        done = [t for t in done if t.number < trial.number]
        if done:
            base = max(done, key=lambda t: t.number).params
            self._moves[trial.number] = (base, self._rng.choice(sorted(base)))

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        move = self._moves.get(trial.number)
        if move is None or param_name not in move[0]:
            return self._start.sample_independent(study, trial, param_name, param_distribution)
        base, moved = move
        here = base[param_name]
        if param_name != moved:
            return here
        return _neighbour(self._rng, _choices(param_distribution), here)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._moves.pop(trial.number, None)


def _neighbour(rng: random.Random, choices: list[Any], here: Any) -> Any:
    if len(choices) < 2:
        return here
    ordered = all(isinstance(c, int | float) and not isinstance(c, bool) for c in choices)
    if not ordered:
        return rng.choice([c for c in choices if c != here])
    i = min(range(len(choices)), key=lambda j: abs(choices[j] - here))
    if i == 0:
        return choices[1]
    if i == len(choices) - 1:
        return choices[-2]
    return choices[i + rng.choice((-1, 1))]
