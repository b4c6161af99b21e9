"""What a study found (``collc explore report``, docs/explore.md, section 4): trial counts by
outcome and infeasibility reason, the best points (one objective) or the Pareto front
(several), the parameters that matter most (Optuna's fANOVA importance) and plots.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from explore.network import ExploreError
from explore.objectives import UNITS
from explore.study import storage_url, study_path
from topologies.atomic import write_atomically


def load_study(storage: str, name: str | None = None) -> optuna.Study:
    """The study ``name`` in ``storage`` (a SQLite path or an RDB URL); without a name, its
    only study. ExploreError for a missing file or study."""
    path = study_path(storage)
    if path is not None and not path.is_file():
        raise ExploreError(f"{storage}: no such study database")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        rdb = optuna.storages.RDBStorage(storage_url(storage), skip_compatibility_check=False)
    except Exception as e:  # SQLAlchemy and Optuna raise many kinds for a bad database
        raise ExploreError(
            f"{storage}: not an Optuna study database ({type(e).__name__})"
        ) from None
    names = [s.study_name for s in optuna.get_all_study_summaries(rdb)]
    if name is None:
        if len(names) != 1:
            raise ExploreError(
                f"{storage}: holds {len(names)} studies ({', '.join(names) or 'none'}): name one "
                "with --study"
            )
        name = names[0]
    if name not in names:
        raise ExploreError(f"{storage}: no study {name!r} (it has: {', '.join(names) or 'none'})")
    return optuna.load_study(study_name=name, storage=rdb)


def _row(t: FrozenTrial) -> dict[str, Any]:
    return {
        "trial": t.number,
        "values": list(t.values or []),
        "params": dict(t.params),
        "derived": t.user_attrs.get("derived", {}),
        "metrics": t.user_attrs.get("metrics", {}),
        "breakdown": t.user_attrs.get("breakdown", {}),
        "cached_from": t.user_attrs.get("cached_from"),
    }


def counts(trials: list[FrozenTrial]) -> dict[str, Any]:
    """Trials by outcome, infeasibility reasons, cache hits and the simulation rate."""
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    failed = [t for t in trials if t.state == TrialState.FAIL]
    reasons: dict[str, int] = {}
    for t in pruned:
        r = str(t.user_attrs.get("infeasible", "pruned"))
        reasons[r] = reasons.get(r, 0) + 1
    finished = len(done) + len(pruned)
    starts = [t.datetime_start for t in trials if t.datetime_start is not None]
    ends = [t.datetime_complete for t in trials if t.datetime_complete is not None]
    span = (max(ends) - min(starts)).total_seconds() if starts and ends else 0.0
    return {
        "trials": len(trials),
        "finished": finished,
        "complete": len(done),
        "simulated": sum(1 for t in done if t.user_attrs.get("cached_from") is None),
        "cached": sum(1 for t in done if t.user_attrs.get("cached_from") is not None),
        "infeasible": len(pruned),
        "infeasible_share": len(pruned) / finished if finished else 0.0,
        "infeasible_reasons": dict(sorted(reasons.items(), key=lambda x: -x[1])),
        "failed": len(failed),
        "interrupted": sum(1 for t in failed if t.user_attrs.get("interrupted")),
        "retries": sum(1 for t in trials if t.user_attrs.get("retry_of") is not None),
        "running": sum(1 for t in trials if t.state == TrialState.RUNNING),
        "waiting": sum(1 for t in trials if t.state == TrialState.WAITING),
        "simulation_seconds": round(sum(t.user_attrs.get("wall_s", 0.0) for t in done), 3),
        "span_seconds": round(span, 3),
        "trials_per_minute": round(finished / span * 60, 2) if span > 0 else None,
    }


def importance(study: optuna.Study, objectives: list[str]) -> dict[str, dict[str, float]]:
    """Per objective, each parameter's importance by Optuna's default evaluator (PED-ANOVA:
    how much the parameter's distribution among the best trials differs from its
    distribution overall), normalised to sum to 1, largest first; empty when there are too
    few completed trials or no parameter varies."""
    import warnings

    out: dict[str, dict[str, float]] = {}
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(done) < 2:
        return out
    for i, name in enumerate(objectives):
        sign = -1.0 if study.directions[i] == optuna.study.StudyDirection.MAXIMIZE else 1.0

        def target(t: FrozenTrial, i: int = i, sign: float = sign) -> float:
            return sign * float(t.values[i])  # the evaluator ranks low values best

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                imp = optuna.importance.get_param_importances(study, target=target, normalize=True)
        except (RuntimeError, ValueError, ZeroDivisionError):
            continue
        out[name] = {k: round(float(v), 4) for k, v in imp.items()}
    return out


def report(study: optuna.Study, *, top: int = 5, with_importance: bool = True) -> dict[str, Any]:
    """The study as a JSON-ready dict."""
    trials = study.get_trials(deepcopy=False)
    attrs = study.user_attrs
    objectives = list(attrs.get("objectives", ["objective"]))
    data: dict[str, Any] = {
        "study": study.study_name,
        "psa": attrs.get("psa_name"),
        "psa_path": attrs.get("psa_path"),
        "agent": attrs.get("agent"),
        "seed": attrs.get("seed"),
        "batch": attrs.get("batch"),
        "objectives": objectives,
        "directions": [d.name.lower() for d in study.directions],
        "space_size": attrs.get("space_size"),
        **counts(trials),
    }
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    if len(objectives) == 1 and done:
        sign = 1 if study.direction == optuna.study.StudyDirection.MINIMIZE else -1
        ranked = sorted(done, key=lambda t: (sign * (t.values or [0])[0], t.number))
        data["best"] = [_row(t) for t in ranked[:top]]
        data["pareto"] = []
    else:
        front = sorted(study.best_trials if done else [], key=lambda t: (list(t.values), t.number))
        data["pareto"] = [_row(t) for t in front]
        data["best"] = data["pareto"][:top]
    data["importance"] = importance(study, objectives) if with_importance else {}
    return data


def _label(objective: str) -> str:
    unit = UNITS.get(objective, "")
    return f"{objective} ({unit})" if unit else objective


def plot_study(path: str | os.PathLike[str], study: optuna.Study) -> None:
    """One objective: every completed trial's value and the best so far, by trial. Two or
    more: the first two objectives of every completed trial, the Pareto front marked."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ExploreError(
            "plots need matplotlib, which is not installed: pip install 'collc[plot]'"
        ) from None
    objectives = list(study.user_attrs.get("objectives", ["objective"]))
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        raise ExploreError(f"study {study.study_name!r} has no completed trial to plot")
    fig = Figure(figsize=(6, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if len(objectives) == 1:
        xs = [t.number for t in done]
        ys = [t.values[0] for t in done]
        better = min if study.direction == optuna.study.StudyDirection.MINIMIZE else max
        best, acc = [], None
        for y in ys:
            acc = y if acc is None else better(acc, y)
            best.append(acc)
        ax.scatter(xs, ys, s=8, color="0.6", label="completed trials")
        ax.step(xs, best, where="post", color="C0", label="best so far")
        ax.set_xlabel("trial")
        ax.set_ylabel(_label(objectives[0]))
    else:
        front = {t.number for t in study.best_trials}
        ax.scatter(
            [t.values[0] for t in done if t.number not in front],
            [t.values[1] for t in done if t.number not in front],
            s=8,
            color="0.6",
            label="completed trials",
        )
        pts = sorted((t.values[0], t.values[1]) for t in done if t.number in front)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color="C3", label="Pareto front")
        ax.set_xlabel(_label(objectives[0]))
        ax.set_ylabel(_label(objectives[1]))
    ax.set_title(f"{study.study_name} ({len(done)} completed)")
    ax.legend(fontsize="small")
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    write_atomically(path, lambda name: fig.savefig(name, format=fmt, dpi=120, bbox_inches="tight"))
