"""The driver of a study (docs/explore.md, sections 2 and 3): it asks the agent for a batch
of points, resolves them (infeasible points are told as pruned without being simulated;
points already simulated are taken from the cache), has the executor simulate the rest, and
tells the results in trial order. Only the driver writes the storage (SQLite by default, any
Optuna RDB URL), so the study opens in ``optuna-dashboard`` as it is.

A study counts *finished* trials: completed (simulated or cached) and infeasible. After a
kill, `run_study` with ``resume`` marks the trials that were running as failed
(``interrupted``) and enqueues each one once more (``retry_of``), never reruns a finished
trial, and stops when exactly ``trials`` have finished.

Each trial records, as user attributes: ``key`` (the canonical point), ``derived`` (the
derived knobs), ``metrics`` (every objective's value), ``breakdown`` (compute and exposed
communication of the slowest NPU), ``wall_s`` (simulation time), ``cached_from`` (the trial
whose simulation it reused), ``infeasible`` and ``detail`` (why it was not simulated).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from explore.agents import distributions, make_sampler
from explore.evaluate import evaluate
from explore.executors import Executor, make_executor
from explore.network import ExploreError
from explore.objectives import directions, metrics, values
from explore.psa import Psa
from explore.space import Infeasible, Point, resolve

SIMULATION_REFUSED = "simulation refused"
"""The infeasibility reason of a point the workload layer refused to run."""


def storage_url(text: str) -> str:
    """An Optuna RDB URL: ``text`` itself if it has a scheme, else ``sqlite:///text``."""
    return text if "://" in text else f"sqlite:///{text}"


@dataclass
class Settings:
    """How to run a study: ``agent``, ``trials`` (finished trials wanted), ``batch`` (points
    asked at once), ``seed``, ``objectives``, ``storage`` (URL or SQLite path), ``study``
    (name; default the PSA's), ``resume``, ``executor`` (local or ray), ``workers``,
    ``address`` (a Ray cluster's)."""

    agent: str = "tpe"
    trials: int = 100
    batch: int = 0
    seed: int = 0
    objectives: tuple[str, ...] = ("time",)
    storage: str = "study.db"
    study: str | None = None
    resume: bool = False
    executor: str = "local"
    workers: int = 1
    address: str | None = None

    @property
    def batch_size(self) -> int:
        return self.batch if self.batch > 0 else max(self.workers, 1)


@dataclass
class Outcome:
    """What `run_study` did: counts of trials by outcome, in this run and in total."""

    study: str
    storage: str
    finished: int = 0
    complete: int = 0
    infeasible: int = 0
    cached: int = 0
    simulated: int = 0
    interrupted: int = 0
    retried: int = 0
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


def _finished(t: FrozenTrial) -> bool:
    return t.state in (TrialState.COMPLETE, TrialState.PRUNED)


def open_study(
    psa: Psa, s: Settings, *, sampler: optuna.samplers.BaseSampler | None = None
) -> optuna.Study:
    """The study of ``s``: created (refused if it exists, unless resuming) or loaded
    (refused if it does not exist, or was started from another PSA or objectives)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = storage_url(s.storage)
    name = s.study or psa.name
    storage = optuna.storages.RDBStorage(url)
    names = [x.study_name for x in optuna.get_all_study_summaries(storage)]
    if name in names and not s.resume:
        raise ExploreError(
            f"{s.storage}: study {name!r} exists already: add --resume to continue it, or "
            "name another with --study"
        )
    if name not in names and s.resume:
        raise ExploreError(f"{s.storage}: no study {name!r} to resume (it has: {names or 'none'})")
    if s.resume:
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        attrs = study.user_attrs
        if attrs.get("psa_fingerprint") != psa.fingerprint():
            raise ExploreError(
                f"{s.storage}: study {name!r} was started from another parameter set "
                f"({attrs.get('psa_path')}); resume it with that file"
            )
        searched = [k.name for k in psa.searched]
        if attrs.get("searched", searched) != searched:
            raise ExploreError(
                f"{s.storage}: study {name!r} searched {', '.join(attrs['searched'])}, not "
                f"{', '.join(searched) or 'nothing'} (another --stacks)"
            )
        if tuple(attrs.get("objectives", ())) != s.objectives:
            raise ExploreError(
                f"{s.storage}: study {name!r} optimises {', '.join(attrs.get('objectives', []))}, "
                f"not {', '.join(s.objectives)}"
            )
        return study
    study = optuna.create_study(
        study_name=name, storage=storage, sampler=sampler, directions=directions(s.objectives)
    )
    for k, v in {
        "psa_path": psa.path,
        "psa_name": psa.name,
        "psa_fingerprint": psa.fingerprint(),
        "psa_text": psa.text,
        "objectives": list(s.objectives),
        "reward_targets": psa.reward_targets,
        "agent": s.agent,
        "seed": s.seed,
        "batch": s.batch_size,
        "space_size": psa.space_size(),
        "searched": [k.name for k in psa.searched],
    }.items():
        study.set_user_attr(k, v)
    study.set_metric_names(list(s.objectives))
    return study


def recover(study: optuna.Study) -> tuple[int, int]:
    """After a kill: mark running trials failed (``interrupted``) and enqueue each
    interrupted trial once more (``retry_of``). Returns (interrupted, enqueued)."""
    storage = study._storage
    trials = study.get_trials(deepcopy=False)
    running = [t for t in trials if t.state == TrialState.RUNNING]
    for t in running:
        storage.set_trial_user_attr(t._trial_id, "interrupted", True)
        storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    enqueued = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        if t.user_attrs.get("interrupted") and t.number not in retried:
            study.enqueue_trial(t.params, user_attrs={"retry_of": t.number})
            enqueued += 1
    return len(running), enqueued


def run_study(
    psa: Psa,
    s: Settings,
    *,
    progress: Callable[[Outcome, int], None] = lambda _o, _n: None,
    executor: Executor | None = None,
) -> Outcome:
    """Run (or resume) the study of ``psa`` until ``s.trials`` trials have finished.
    ``progress(outcome, total_finished)`` is called after every batch."""
    if s.trials < 1:
        raise ExploreError(f"--trials must be at least 1, got {s.trials}")
    existing = 0
    if s.resume:
        probe = open_study(psa, s)
        existing = len(probe.trials)
    sampler = make_sampler(s.agent, psa, seed=s.seed + existing, objectives=len(s.objectives))
    study = open_study(psa, s, sampler=sampler)
    out = Outcome(study.study_name, storage_url(s.storage))
    if s.resume:
        out.interrupted, out.retried = recover(study)
    dists = distributions(psa)
    cache: dict[str, FrozenTrial] = {}
    finished = 0
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.COMPLETE and "key" in t.user_attrs:
            cache.setdefault(t.user_attrs["key"], t)
        finished += _finished(t)
    own = executor is None
    ex = executor or make_executor(s.executor, s.workers, s.address)
    t0 = time.perf_counter()
    try:
        while finished < s.trials:
            n = min(s.batch_size, s.trials - finished)
            done = _batch(psa, s, study, dists, cache, ex, n, out)
            finished += done
            progress(out, finished)
    finally:
        if own:
            ex.close()
    out.seconds = time.perf_counter() - t0
    out.finished = finished
    return out


def _batch(
    psa: Psa,
    s: Settings,
    study: optuna.Study,
    dists: dict[str, Any],
    cache: dict[str, FrozenTrial],
    ex: Executor,
    n: int,
    out: Outcome,
) -> int:
    """Ask ``n`` trials, evaluate them, tell them in order; returns how many finished."""
    trials = [study.ask(dists) for _ in range(n)]
    points = [resolve(psa, t.params) for t in trials]
    todo: dict[str, int] = {}
    for i, p in enumerate(points):
        if isinstance(p, Point) and p.key not in cache and p.key not in todo:
            todo[p.key] = i
    batch = [points[i] for i in todo.values()]
    sims = ex.map(evaluate, [p.values for p in batch if isinstance(p, Point)])
    results = dict(zip(todo, sims, strict=True))
    done = 0
    for i, (trial, p) in enumerate(zip(trials, points, strict=True)):
        if isinstance(p, Infeasible):
            _prune(study, trial, out, p.reason, p.detail)
            done += 1
            continue
        hit = cache.get(p.key)
        if hit is not None:
            _copy(study, trial, s, psa, p, hit)
            out.cached += 1
            out.complete += 1
            done += 1
            continue
        r = results[p.key]
        first = todo[p.key] == i
        if not first:  # the same point twice in one batch: the first simulation serves both
            r = {**r, "cached_from": trials[todo[p.key]].number}
        if not r["ok"]:
            _prune(study, trial, out, SIMULATION_REFUSED, r["error"])
            done += 1
            continue
        m = metrics(r["time_ns"], p.cost, p.memory_gib)
        for k, v in {
            "key": p.key,
            "derived": p.derived,
            "metrics": m,
            "breakdown": {"compute_ns": r["compute_ns"], "exposed_ns": r["exposed_ns"]},
            "wall_s": round(r["wall_s"], 4) if first else 0.0,
            "shortcut": r["shortcut"],
        }.items():
            trial.set_user_attr(k, v)
        if not first:
            trial.set_user_attr("cached_from", r["cached_from"])
            out.cached += 1
        else:
            out.simulated += 1
        frozen = study.tell(trial, values(s.objectives, m, psa.reward_targets))
        cache.setdefault(p.key, frozen)
        out.complete += 1
        done += 1
    return done


def _prune(study: optuna.Study, trial: Any, out: Outcome, reason: str, detail: str) -> None:
    trial.set_user_attr("infeasible", reason)
    trial.set_user_attr("detail", detail[:500])
    study.tell(trial, state=TrialState.PRUNED)
    out.infeasible += 1
    out.reasons[reason] = out.reasons.get(reason, 0) + 1


def _copy(
    study: optuna.Study, trial: Any, s: Settings, psa: Psa, p: Point, hit: FrozenTrial
) -> None:
    m = dict(hit.user_attrs["metrics"])
    for k in ("key", "derived", "breakdown", "shortcut"):
        trial.set_user_attr(k, hit.user_attrs.get(k))
    trial.set_user_attr("metrics", m)
    trial.set_user_attr("wall_s", 0.0)
    trial.set_user_attr("cached_from", hit.user_attrs.get("cached_from", hit.number))
    study.tell(trial, values(s.objectives, m, psa.reward_targets))


def study_path(storage: str) -> Path | None:
    """The SQLite file of a storage URL or path, or None for another database."""
    url = storage_url(storage)
    return Path(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else None
