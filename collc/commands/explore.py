"""``collc explore``: full-stack design-space exploration (docs/explore.md): a study over a
parameter set's workload, collective and network knobs, driven by an Optuna agent, kept in
a resumable study database, and its report.

``collc explore PSA.yaml ...`` runs a study (it is ``collc explore run PSA.yaml ...``: a
first argument that is not a subcommand's name is taken as the PSA of ``run``) and
``collc explore report STUDY.db`` reports one. Like every command module, importing this one
loads no heavy library: Optuna and Ray are imported when a command runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from collc import registry
from collc.printing import phases
from topologies.errors import CollcError


class _RunByDefault(click.Group):
    """A group whose first argument, when it names no subcommand (and is not ``--help``),
    starts ``run``: ``collc explore PSA --trials 9`` and ``collc explore --trials 9 PSA``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_RunByDefault)
def explore() -> None:
    """Design-space exploration over workload, collective and network knobs (COSMIC).

    \b
    collc explore PSA.yaml --agent tpe --trials 500 --storage study.db [--resume]
    collc explore report study.db [--plot pareto.png] [--json]
    """


def _need_optuna() -> None:
    import importlib.util

    if importlib.util.find_spec("optuna") is None:
        raise CollcError(
            "collc explore needs Optuna, which is not installed: pip install 'collc[explore]'"
        )


@explore.command(name="run")
@click.argument("psa_file", metavar="PSA", type=click.Path(path_type=Path))
@click.option(
    "--agent",
    type=click.Choice(list(registry.EXPLORE_AGENTS)),
    default="tpe",
    show_default=True,
    help="; ".join(f"{k}: {v}" for k, v in registry.EXPLORE_AGENTS.items()),
)
@click.option("--trials", type=int, default=100, show_default=True, help="Finished trials wanted.")
@click.option(
    "--objectives",
    default=None,
    help="Comma-separated: time, cost, time_x_cost, memory, reward (default: the PSA's).",
)
@click.option(
    "--storage",
    default=None,
    help="SQLite file or Optuna RDB URL (default: <PSA name>.db here).",
)
@click.option("--study", "study_name", default=None, help="Study name (default: the PSA's name).")
@click.option("--resume", is_flag=True, help="Continue the study after a stop or a kill.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--batch", type=int, default=0, help="Points asked at once (default: --workers).")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--workers", type=int, default=1, show_default=True, help="Processes or Ray CPUs.")
@click.option("--ray-address", default=None, help="A running Ray cluster (default: start one).")
@click.option(
    "--stacks",
    default="workload,collective,network",
    show_default=True,
    help="Search only these stacks' knobs; the others keep the PSA's baseline.",
)
@click.option("--json", "as_json", is_flag=True)
def run_cmd(
    psa_file: Path,
    agent: str,
    trials: int,
    objectives: str | None,
    storage: str | None,
    study_name: str | None,
    resume: bool,
    seed: int,
    batch: int,
    executor: str,
    workers: int,
    ray_address: str | None,
    stacks: str,
    as_json: bool,
) -> None:
    """Run (or --resume) a study of the parameter set PSA (YAML)."""
    _need_optuna()
    from explore.objectives import parse_objectives
    from explore.psa import read_psa
    from explore.psa_schema import STACKS
    from explore.space import precheck

    psa = read_psa(psa_file)
    chosen = tuple(s.strip() for s in stacks.split(",") if s.strip())
    for s in chosen:
        if s not in STACKS:
            raise CollcError(f"--stacks: unknown stack {s!r} (known: {', '.join(STACKS)})")
    if set(chosen) != set(STACKS):
        psa = psa.restricted(chosen)
    objs = parse_objectives(objectives) if objectives else psa.objectives
    if "reward" in objs and not psa.reward_targets:
        raise CollcError(f"{psa_file}: the reward objective needs reward.targets in the PSA")
    for flag, v in (("--workers", workers), ("--trials", trials)):
        if v < 1:
            raise CollcError(f"{flag} must be at least 1, got {v}")
    if batch < 0:
        raise CollcError(f"--batch must be at least 1 (or 0: --workers), got {batch}")
    phase = phases(as_json)
    phase("checking the constraints")
    notes = precheck(psa, seed)

    from explore.report import report
    from explore.study import Outcome, Settings, run_study

    settings = Settings(
        agent=agent,
        trials=trials,
        batch=batch,
        seed=seed,
        objectives=objs,
        storage=storage or f"{psa.name}.db",
        study=study_name,
        resume=resume,
        executor=executor,
        workers=workers,
        address=ray_address,
    )

    def progress(o: Outcome, finished: int) -> None:
        phase(f"{finished}/{trials} finished ({o.simulated} simulated, {o.infeasible} infeasible)")

    out = run_study(psa, settings, progress=progress)
    phase(None)
    from explore.report import load_study

    study = load_study(settings.storage, out.study)
    data: dict[str, Any] = {
        "run": {
            "seconds": round(out.seconds, 3),
            "simulated": out.simulated,
            "cached": out.cached,
            "infeasible": out.infeasible,
            "interrupted": out.interrupted,
            "retried": out.retried,
            "trials_per_minute": round((out.complete + out.infeasible) / out.seconds * 60, 2)
            if out.seconds > 0
            else None,
        },
        "storage": settings.storage,
        "notes": notes,
        **report(study, top=3, with_importance=False),
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    for n in notes:
        click.echo(f"note: {n}")
    r = data["run"]
    click.echo(
        f"study {data['study']} in {settings.storage}: {data['finished']} finished trials "
        f"({data['complete']} completed, {data['infeasible']} infeasible)"
    )
    click.echo(
        f"  this run: {r['simulated']} simulated, {r['cached']} from the cache, "
        f"{r['infeasible']} infeasible, {r['retried']} retried after a kill, {r['seconds']} s"
        + (f" ({r['trials_per_minute']} trials/min)" if r["trials_per_minute"] else "")
    )
    _print_best(data)
    click.echo(f"next: collc explore report {settings.storage}")


def _fmt(name: str, v: float) -> str:
    if name == "time":
        return f"{v / 1e6:,.3f} ms"
    if name == "cost":
        return f"${v:,.0f}"
    if name == "memory":
        return f"{v:.2f} GiB"
    if name == "time_x_cost":
        return f"{v:,.1f} s*$"
    return f"{v:.4f}"


def _print_best(data: dict[str, Any]) -> None:
    objs = data["objectives"]
    title = "Pareto front" if len(objs) > 1 else "best"
    rows = data["pareto"] if len(objs) > 1 else data["best"]
    if not rows:
        click.echo("  no completed trial yet")
        return
    click.echo(f"  {title} ({', '.join(objs)}):")
    for row in rows[:10]:
        vals = ", ".join(_fmt(o, v) for o, v in zip(objs, row["values"], strict=True))
        params = " ".join(f"{k}={v}" for k, v in row["params"].items())
        derived = " ".join(f"{k}={v}" for k, v in row["derived"].items())
        click.echo(
            f"    #{row['trial']:<5} {vals}   {params}" + (f"  [{derived}]" if derived else "")
        )


@explore.command(name="report")
@click.argument("storage", metavar="STUDY")
@click.option("--study", "study_name", default=None, help="Which study (if the file has several).")
@click.option("--top", type=click.IntRange(1, 1000), default=5, show_default=True)
@click.option(
    "--plot", type=click.Path(path_type=Path), default=None, help="Best-so-far or Pareto plot."
)
@click.option("--json", "as_json", is_flag=True)
def report_cmd(
    storage: str, study_name: str | None, top: int, plot: Path | None, as_json: bool
) -> None:
    """Report the study in STUDY (a SQLite file or an Optuna RDB URL): trial counts, why
    points were infeasible, the best points or Pareto front, the knobs that matter most."""
    _need_optuna()
    if plot is not None:
        from backends.sim.plots import require_matplotlib

        require_matplotlib(plot)
    from explore.report import load_study, plot_study, report

    study = load_study(storage, study_name)
    data = report(study, top=top)
    if plot is not None:
        plot_study(plot, study)
        data["files"] = [str(plot)]
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(
        f"study {data['study']} ({data['psa']}, agent {data['agent']}, seed {data['seed']}, "
        f"batch {data['batch']}): {data['space_size']:,} points in the space"
        if isinstance(data["space_size"], int)
        else f"study {data['study']}"
    )
    click.echo(
        f"  {data['finished']} finished: {data['complete']} completed ({data['simulated']} "
        f"simulated, {data['cached']} from the cache), {data['infeasible']} infeasible "
        f"({data['infeasible_share']:.1%}); {data['failed']} failed ({data['interrupted']} "
        f"interrupted, {data['retries']} retries)"
    )
    if data["trials_per_minute"]:
        click.echo(
            f"  {data['trials_per_minute']} trials/min over {data['span_seconds']} s, "
            f"{data['simulation_seconds']} s simulating"
        )
    for reason, n in data["infeasible_reasons"].items():
        click.echo(f"    infeasible {n:>6}  {reason}")
    _print_best(data)
    for obj, imp in data["importance"].items():
        ranked = ", ".join(f"{k} {v:.2f}" for k, v in list(imp.items())[:6])
        click.echo(f"  importance for {obj}: {ranked}")
    for f in data.get("files", []):
        click.echo(f"wrote {f}")
