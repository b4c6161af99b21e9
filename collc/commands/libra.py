"""``collc libra``: LIBRA's per-dimension bandwidth allocation (docs/libra.md), solved on
OR-Tools for a Chakra workload or LIBRA's own inputs, compared with the equal split and the
best point of a grid, and optionally checked by simulating the workload (``--check``).

Like every command module, importing this one loads no heavy library.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collc import registry
from collc.printing import phases
from topologies.errors import CollcError

if TYPE_CHECKING:
    from explore.problem import Allocation, Problem


def _bandwidth(text: str) -> float:
    """``500GB/s`` or a plain number of GB/s, in bytes per ns."""
    from topologies.errors import SourcePos
    from topologies.units import parse_bandwidth_bytes_per_ns

    try:
        return float(text)
    except ValueError:
        return parse_bandwidth_bytes_per_ns(text, SourcePos(file="--total-bw", column=1, text=text))


@click.command(name="libra")
@click.option("--topology", "-t", default=None, help="A stack: spec of ring, fc and switch dims.")
@click.option(
    "--workload",
    "workload_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Chakra workload ETs (a folder or prefix; collc workload generate).",
)
@click.option(
    "--comm-groups",
    type=click.Path(path_type=Path),
    default=None,
    help="Communicator groups JSON (default: the folder's comm_groups.json).",
)
@click.option(
    "--libra-inputs",
    type=click.Path(path_type=Path),
    default=None,
    help="LIBRA's inputs/ folder: the files its libra_configs.py names.",
)
@click.option(
    "--libra-file",
    multiple=True,
    metavar="KIND=NAME",
    help="Another file of --libra-inputs: network, workload, communicator, cost_model "
    "or constraints (=none: LIBRA's constraints dropped).",
)
@click.option("--total-bw", default=None, help="Sum of the per-NPU bandwidths (500GB/s, or GB/s).")
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    help='A linear constraint on bw0..bwN, e.g. "bw0 >= bw1" or "bw2 + bw3 == 200".',
)
@click.option(
    "--objective",
    type=click.Choice(list(registry.LIBRA_OBJECTIVES)),
    default=None,
    help="; ".join(f"{k}: {v}" for k, v in registry.LIBRA_OBJECTIVES.items())
    + " (default: perf, or what libra_configs.py names).",
)
@click.option(
    "--cost-model",
    type=click.Path(path_type=Path),
    default=None,
    help="LIBRA's cost-model YAML (default: its shipped unit costs).",
)
@click.option(
    "--catalogue",
    type=click.Path(path_type=Path),
    default=None,
    help="Link catalogue YAML: the bandwidths each dimension may take (CP-SAT).",
)
@click.option(
    "--tolerance",
    type=float,
    default=1e-4,
    show_default=True,
    help="Relative optimality tolerance of the continuous solver.",
)
@click.option(
    "--grid-step", default=None, help="Step of the comparison grid (default: total / 50)."
)
@click.option("--check", is_flag=True, help="Simulate the allocations (collc workload simulate).")
@click.option(
    "--check-model",
    "check_models",
    multiple=True,
    type=click.Choice(["analytical", *registry.SIM_MODELS]),
    help="Models of --check (default: analytical, and congestion up to 256 NPUs).",
)
@click.option(
    "--algorithm",
    "-a",
    default=registry.DEFAULT_ALGORITHM,
    show_default=True,
    help="Producer of the collectives in --check's contention models.",
)
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--plot",
    type=click.Path(path_type=Path),
    default=None,
    help="Bar chart of the allocations (needs matplotlib).",
)
def libra(
    topology: str | None,
    workload_dir: Path | None,
    comm_groups: Path | None,
    libra_inputs: Path | None,
    libra_file: tuple[str, ...],
    total_bw: str | None,
    constraints: tuple[str, ...],
    objective: str | None,
    cost_model: Path | None,
    catalogue: Path | None,
    tolerance: float,
    grid_step: str | None,
    check: bool,
    check_models: tuple[str, ...],
    algorithm: str,
    as_json: bool,
    plot: Path | None,
) -> None:
    """Choose each network dimension's bandwidth per NPU (LIBRA) for a workload."""
    import time

    from explore.network import ExploreError

    t0 = time.perf_counter()
    phase = phases(as_json)
    if not 1e-9 <= tolerance <= 0.5:
        raise CollcError(f"--tolerance must lie between 1e-9 and 0.5, not {tolerance}")
    if (workload_dir is None) == (libra_inputs is None):
        raise CollcError("give either --workload (with -t) or --libra-inputs")
    if plot is not None:
        from backends.sim.plots import require_matplotlib

        require_matplotlib(plot)
    choose: dict[str, str] = {}
    for item in libra_file:
        kind, eq, name = item.partition("=")
        if not eq or not name.strip():
            raise CollcError(f"--libra-file: expected KIND=NAME, got {item!r}")
        choose[kind.strip()] = name.strip()
    if choose and libra_inputs is None:
        raise CollcError("--libra-file needs --libra-inputs")

    chakra = None
    if libra_inputs is not None:
        from explore.problem import libra_problem

        if topology is not None:
            raise CollcError("--libra-inputs brings its own network: leave out -t")
        phase(f"reading {libra_inputs}")
        case = libra_problem(libra_inputs, choose, [])
        ndims = case.problem.net.ndims
        extra = _constraints(total_bw, constraints, ndims)
        case.problem.cons.extend(extra)
        if cost_model is not None:
            from explore.cost import read_cost_model

            case.problem.cost_model = read_cost_model(
                cost_model, case.problem.cost_model.levels if case.problem.cost_model else None
            )
        problem = case.problem
        objective = objective or case.objective or "perf"
        source = {"libra_inputs": str(libra_inputs), **case.files}
        chakra = case
    else:
        from explore.cost import default_cost_model, read_cost_model
        from explore.network import network_from_topology
        from explore.problem import workload_problem
        from explore.timing import WorkloadShapes
        from topologies import parse_topology
        from workloads.chakra_io import read_workload
        from workloads.model import check_workload

        if topology is None:
            raise CollcError("--workload needs -t (a stack: topology of ring, fc and switch dims)")
        assert workload_dir is not None
        net = network_from_topology(parse_topology(topology))
        extra = _constraints(total_bw, constraints, net.ndims)
        phase(f"reading {workload_dir}")
        w = read_workload(workload_dir, str(comm_groups) if comm_groups else None)
        if w.num_npus != net.num_npus:
            raise ExploreError(
                f"{workload_dir}: the workload has {w.num_npus} NPUs, {net.label()} has "
                f"{net.num_npus}"
            )
        check_workload(w)
        cm = read_cost_model(cost_model) if cost_model is not None else None
        if cm is None:
            try:
                cm = default_cost_model(net)
            except ExploreError:
                cm = None
        phase("building the time model")
        problem = workload_problem(WorkloadShapes(w, net), extra, cm, str(workload_dir))
        objective = objective or "perf"
        source = {"workload": str(workload_dir), "topology": topology}
    if not problem.cons:
        raise CollcError("no constraint bounds the bandwidths: give --total-bw or --constraint")
    if objective == "perf-per-cost" and problem.cost_model is None:
        raise CollcError(
            f"perf-per-cost needs a cost model for {problem.net.ndims} dimensions: give --cost-model"
        )

    cat = None
    if catalogue is not None:
        from explore.solve_cp import read_catalogue

        cat = read_catalogue(catalogue, problem.net.ndims)
    phase("solving")
    best = _solve(problem, objective, tolerance, cat)
    phase("comparing with the equal split and a grid")
    rows = _baselines(problem, objective, best, grid_step)
    data: dict[str, Any] = {
        "source": source,
        "network": problem.net.label(),
        "npus": problem.net.num_npus,
        "objective": objective,
        "constraints": [c.text for c in problem.cons],
        "cost_model": problem.cost_model.source if problem.cost_model else None,
        "tasks": problem.graph.num_tasks,
        "solver": best.solver,
        "tolerance": tolerance if cat is None else None,
        "lower_bound": best.lower_bound,
        "gap": best.gap,
        "rounds": best.rounds,
        "order_rounds": best.order_rounds,
        "notes": best.notes,
        "allocations": rows,
    }
    if check:
        from collc.libra_check import check_allocations

        phase("simulating")
        data["check"] = check_allocations(problem, rows, chakra, check_models, algorithm, phase)
    if plot is not None:
        from explore.plot import plot_allocations

        plot_allocations(plot, problem.net, rows)
        data["files"] = [str(plot)]
    data["seconds"] = round(time.perf_counter() - t0, 3)
    phase(None)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    _print(data)


def _constraints(total_bw: str | None, texts: tuple[str, ...], ndims: int) -> list[Any]:
    from explore.constraints import parse_constraint, total_constraint

    out = []
    if total_bw is not None:
        total = _bandwidth(total_bw)
        if not (0 < total < math.inf):
            raise CollcError(f"--total-bw must be positive, not {total_bw!r}")
        out.append(total_constraint(total, ndims))
    for text in texts:
        out.extend(parse_constraint(text, ndims))
    return out


def _solve(problem: Problem, objective: str, tolerance: float, cat: object | None) -> Allocation:
    from explore.problem import solve

    return solve(problem, objective, tolerance, cat)


def _baselines(
    problem: Problem, objective: str, best: Allocation, grid_step: str | None
) -> list[dict[str, Any]]:
    """The solved allocation, the equal split of its total and the best grid point."""
    from explore.grid import equal_split, grid_best, grid_points
    from explore.solve_lp import bandwidth_box

    def row(name: str, bw: tuple[float, ...], note: str = "") -> dict[str, Any]:
        t = problem.time(bw)
        cost = problem.cost(bw)
        value = (
            problem.objective(objective, bw, t)
            if (objective == "perf" or cost is not None)
            else None
        )
        return {
            "name": name,
            "bw": list(bw),
            "time_ns": t,
            "cost": cost,
            "objective": value,
            "feasible": problem.feasible(bw),
            "note": note,
        }

    rows = [row("libra", best.bw)]
    total = sum(best.bw)
    rows.append(row("equal split", equal_split(total, problem.net.ndims)))
    lo, hi = bandwidth_box(problem.cons, problem.net.ndims)
    hi = [h if not math.isinf(h) else total for h in hi]
    step = _bandwidth(grid_step) if grid_step is not None else total / 50
    if not step > 0:
        raise CollcError(f"--grid-step must be positive, not {grid_step!r}")
    points, used = grid_points(problem.cons, lo, hi, step)
    g = problem.graph

    def values(pts: Any) -> list[float]:
        ts = g.evaluate_many(pts)
        if objective == "perf":
            return ts
        return [t * (problem.cost(p) or 0.0) / 1e10 for t, p in zip(ts, pts, strict=True)]

    got = grid_best(values, points)
    if got is not None:
        rows.append(row(f"grid ({len(points):,} points, step {used:g} GB/s)", got[0]))
    return rows


def _print(d: dict[str, Any]) -> None:
    click.echo(
        f"libra: {d['network']} ({d['npus']} NPUs), {d['tasks']:,} tasks, objective "
        f"{d['objective']}"
    )
    click.echo(f"  constraints: {'; '.join(d['constraints'])}")
    ndims = len(d["allocations"][0]["bw"])
    head = "  ".join(f"{'bw' + str(k):>8}" for k in range(ndims))
    click.echo(f"  {'':<34} {head}  {'time':>14}  {'cost $':>14}  {'objective':>14}")
    for r in d["allocations"]:
        bws = "  ".join(f"{b:>8.2f}" for b in r["bw"])
        cost = f"{r['cost']:>14,.0f}" if r["cost"] is not None else f"{'-':>14}"
        obj = f"{r['objective']:>14.6g}" if r["objective"] is not None else f"{'-':>14}"
        flag = "" if r["feasible"] else "  (violates the constraints)"
        click.echo(f"  {r['name']:<34} {bws}  {r['time_ns'] / 1e6:>11.3f} ms  {cost}  {obj}{flag}")
    tol = f", tolerance {d['tolerance']:g}" if d["tolerance"] is not None else ""
    click.echo(
        f"  lower bound {d['lower_bound']:.6g} (gap {d['gap']:.2e}{tol}); {d['solver']}, "
        f"{d['rounds']} rounds"
    )
    for n in d["notes"]:
        click.echo(f"  note: {n}")
    chk = d.get("check")
    if chk:
        click.echo("  check (simulated iteration time):")
        for r in chk["rows"]:
            sims = "  ".join(
                f"{m} {v / 1e6:.3f} ms" if isinstance(v, int | float) else f"{m} {v}"
                for m, v in r["simulated"].items()
            )
            click.echo(f"    {r['name']:<34} predicted {r['predicted_ns'] / 1e6:.3f} ms  {sims}")
        for n in chk.get("notes", []):
            click.echo(f"    note: {n}")
    for f in d.get("files", []):
        click.echo(f"wrote {f}")
    click.echo(f"  ({d['seconds']} s)")
