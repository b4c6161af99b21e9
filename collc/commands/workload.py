"""``collc workload``: the group of commands that generate training workloads and simulate
them (docs/workloads.md), with the parsing of their ``--algorithm`` and ASTRA-sim system knobs.

Like every command module, importing this one loads no heavy library; each command imports
the packages it needs when it runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collc import registry
from collc.options import max_transfers_option, size_callback
from collc.printing import phases, us, warn
from topologies.cost_model import COMPLETIONS
from topologies.errors import CollcError

if TYPE_CHECKING:
    from workloads.analytical import NativeConfig

MODELS = {
    "analytical": "ASTRA-sim's congestion-unaware backend with its native collectives (fast)",
    **{
        k: f"collc's collectives on the {k} simulator: {v}"
        for k, v in registry.SIM_MODELS.items()
        if k != "analytical"
    },
}
"""The choices of ``--model``: the analytical mode, or a `backends.sim` model that runs every
collective expanded by a collc producer."""


@click.group()
def workload() -> None:
    """Training workloads: Chakra workload ETs of compute, collectives and messages."""


def parse_algorithms(text: str) -> tuple[str, dict[str, str]]:
    """``tacos`` or ``ring,allgather=direct,pg:3=tacos``: the default producer and overrides
    per collective kind (allreduce, allgather, reduce_scatter, alltoall) or per communicator
    group (``pg:NAME``); ``tuned`` (`registry.TUNED`) is the fastest producer per collective."""
    from chakra_ir.collective import parse_collective_kind

    default = registry.DEFAULT_ALGORITHM
    over: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, eq, algo = part.partition("=")
        name = algo.strip() if eq else key.strip()
        if name not in registry.ALGORITHMS and name != registry.TUNED:
            known = ", ".join([*registry.ALGORITHMS, registry.TUNED])
            raise CollcError(f"--algorithm: unknown producer {name!r} (known: {known})")
        if not eq:
            default = name
            continue
        key = key.strip()
        if key.startswith("pg:"):
            over[key] = name
        else:
            over[parse_collective_kind(key).value] = name
    return default, over


def native_config(system: Path | None, overrides: dict[str, Any]) -> NativeConfig:
    """The analytical knobs: ASTRA-sim's system JSON ``system`` (if given), then the flags."""
    from workloads.analytical import NativeConfig
    from workloads.model import CollKind

    fields: dict[str, Any] = {}
    if system is not None:
        from topologies.jsonfile import load_json

        data = load_json(system, CollcError)
        if not isinstance(data, dict):
            raise CollcError(f"{system}: expected an ASTRA-sim system JSON object")
        simple = {
            "endpoint-delay": ("endpoint_delay_ns", int),
            "preferred-dataset-splits": ("preferred_dataset_splits", int),
            "active-chunks-per-dimension": ("active_chunks_per_dimension", int),
            "local-mem-bw": ("local_mem_bw_gbps", float),
            "peak-perf": ("peak_perf_tflops", float),
            "roofline-enabled": ("roofline", bool),
            "collective-optimization": ("collective_optimization", str),
            "scheduling-policy": ("scheduling_policy", str),
        }
        for key, (name, typ) in simple.items():
            if key in data:
                if typ is bool and data[key] not in (0, 1):  # True, False, 0 and 1; not "0"
                    raise CollcError(f"{system}: {key} {data[key]!r} is not 0, 1, true or false")
                try:
                    fields[name] = typ(data[key])
                except (TypeError, ValueError, OverflowError):
                    raise CollcError(
                        f"{system}: {key} {data[key]!r} is not a {typ.__name__}"
                    ) from None
        per_kind: dict[CollKind, tuple[str, ...]] = {}
        keys = {
            "all-reduce-implementation": CollKind.ALL_REDUCE,
            "all-gather-implementation": CollKind.ALL_GATHER,
            "reduce-scatter-implementation": CollKind.REDUCE_SCATTER,
            "all-to-all-implementation": CollKind.ALL_TO_ALL,
        }
        for key, kind in keys.items():
            v = data.get(key)
            if v is not None:
                if not isinstance(v, list) or not all(isinstance(x, str) for x in v) or not v:
                    raise CollcError(f"{system}: {key} must be a list of algorithm names")
                per_kind[kind] = tuple(v)
        fields["per_kind"] = per_kind
    fields.update({k: v for k, v in overrides.items() if v is not None})
    if "implementation" in fields and isinstance(fields["implementation"], str):
        fields["implementation"] = tuple(x.strip() for x in fields["implementation"].split(","))
        fields["per_kind"] = {}
    try:
        return NativeConfig(**fields)
    except CollcError as e:
        where = f"{system}: " if system is not None else ""
        raise CollcError(f"{where}{e.message}") from None


@workload.command(name="simulate")
@click.argument("location", type=click.Path(path_type=Path))
@click.option("--topology", "-t", required=True, help="Topology spec (topologies/SPEC.md) or file.")
@click.option(
    "--comm-groups",
    type=click.Path(path_type=Path),
    default=None,
    help="ASTRA-sim communicator-group JSON (default: the folder's comm_groups.json).",
)
@click.option(
    "--model",
    type=click.Choice(list(MODELS)),
    default="congestion",
    show_default=True,
    help="; ".join(f"{k}: {v}" for k, v in MODELS.items()),
)
@click.option(
    "--algorithm",
    "-a",
    default=registry.DEFAULT_ALGORITHM,
    show_default=True,
    help="Producer of the collectives (not for analytical): NAME, or NAME plus overrides "
    "KIND=NAME / pg:GROUP=NAME, comma-separated; tuned: the fastest per kind, group and size "
    "(collc tune).",
)
@click.option("--chunks-per-npu", type=int, default=1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@max_transfers_option("a collective")
@click.option(
    "--completion",
    type=click.Choice(list(COMPLETIONS)),
    default="on-arrival",
    show_default=True,
    help="When a send completes (ASTRA-sim: on-arrival).",
)
@click.option("--system", type=click.Path(path_type=Path), help="ASTRA-sim system JSON (knobs).")
@click.option(
    "--native", default=None, help="Analytical: implementation per dimension, e.g. ring,direct."
)
@click.option("--endpoint-delay", type=int, default=None, help="Analytical: ns per step (10).")
@click.option("--splits", type=int, default=None, help="Analytical: preferred-dataset-splits (1).")
@click.option("--active-chunks", type=int, default=None, help="Analytical: per dimension (1).")
@click.option("--local-mem-bw", type=float, default=None, help="GB/s: reductions, roofline.")
@click.option("--peak-perf", type=float, default=None, help="TFLOPS (roofline).")
@click.option("--roofline/--no-roofline", default=None, help="Time COMP nodes by the roofline.")
@click.option(
    "--remote-mem",
    default=None,
    help="LATENCY_NS,BYTES_PER_NS of per-NPU remote memory (MEM_LOAD/STORE nodes).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Analytical: run every NPU, not one per class of identical NPUs (same result).",
)
@click.option(
    "--fred-phases",
    is_flag=True,
    help="FRED: the switches' phases from which groups' collectives overlap, served by "
    "priority MP > PP > DP (docs/fred.md; needs --algorithm fred-innetwork).",
)
@click.option("--fred-m", type=int, default=3, show_default=True, help="FRED: m of FRED_m.")
@click.option(
    "--fred-priority",
    type=click.Choice(list(registry.FRED_PRIORITIES)),
    default="dp",
    show_default=True,
    help="FRED: the class of groups whose role (tp, dp) the workload does not name.",
)
@click.option(
    "--fred-preempt/--fred-no-preempt",
    default=True,
    show_default=True,
    help="FRED: a higher class takes the switches from a lower one.",
)
@click.option(
    "--config-memory",
    default=None,
    callback=size_callback,
    help="FRED: configuration memory per switch (1536 B).",
)
@click.option("--timeline", type=click.Path(path_type=Path), help="Write a Perfetto trace.")
@click.option(
    "--strict",
    is_flag=True,
    help="Analytical mode: refuse what ASTRA-sim's binary would not run, instead of noting it.",
)
@click.option("--json", "as_json", is_flag=True)
def simulate_cmd(
    location: Path,
    topology: str,
    comm_groups: Path | None,
    model: str,
    algorithm: str,
    chunks_per_npu: int,
    seed: int,
    max_transfers: int,
    completion: str,
    system: Path | None,
    native: str | None,
    endpoint_delay: int | None,
    splits: int | None,
    active_chunks: int | None,
    local_mem_bw: float | None,
    peak_perf: float | None,
    roofline: bool | None,
    remote_mem: str | None,
    full: bool,
    fred_phases: bool,
    fred_m: int,
    fred_priority: str,
    fred_preempt: bool,
    config_memory: int | None,
    timeline: Path | None,
    strict: bool,
    as_json: bool,
) -> None:
    """Simulate a training iteration: the workload ETs at LOCATION (a folder or a prefix)."""
    import time

    from topologies import parse_topology
    from workloads.chakra_io import read_workload
    from workloads.engine import Roofline
    from workloads.model import check_workload
    from workloads.report import summary, write_timeline

    phase = phases(as_json)
    t0 = time.perf_counter()
    topo = parse_topology(topology)
    config = native_config(
        system,
        {
            "implementation": native,
            "endpoint_delay_ns": endpoint_delay,
            "preferred_dataset_splits": splits,
            "active_chunks_per_dimension": active_chunks,
            "local_mem_bw_gbps": local_mem_bw,
            "peak_perf_tflops": peak_perf,
            "roofline": roofline,
        },
    )
    mem = _remote_mem(remote_mem)
    algos = parse_algorithms(algorithm)
    phase(f"reading {location}")
    w = read_workload(location, str(comm_groups) if comm_groups else None)
    for warning in w.warnings:
        warn(warning)
    if w.num_npus != topo.num_npus:
        raise CollcError(
            f"{location}: the workload has {w.num_npus} NPUs, {topo.spec} has {topo.num_npus}"
        )
    phase(f"checking {w.num_nodes:,} nodes")
    classes = check_workload(w, roofline=config.roofline)
    roof = (
        Roofline(config.peak_perf_tflops * 1e12, config.local_mem_bw_gbps * 1e9)
        if config.roofline
        else None
    )
    fred: dict[str, Any] | None = None
    tuned: list[dict[str, object]] = []
    if fred_phases and model == "analytical":
        raise CollcError(
            "--fred-phases: the switches' phases need collc's collectives, not --model analytical"
        )
    if fred_phases:
        from backends.fred.compile import FredOptions
        from collc import pipeline
        from collc.workload_run import program_maker
        from workloads.fred_phases import FredPhaseOptions, fred_report, run_fred_phases

        cost = pipeline.cost_model_for(completion)
        make = program_maker(
            topo,
            algos,
            cost=cost,
            model=model,
            chunks_per_npu=chunks_per_npu,
            seed=seed,
            max_transfers=max_transfers,
            tuned=tuned,
        )
        fo = FredOptions(m=fred_m, fix="raise-m")
        if config_memory is not None:
            fo = FredOptions(m=fred_m, fix="raise-m", memory_bytes=config_memory)
        done_f = run_fred_phases(
            w,
            topo,
            make,
            cost=cost,
            options=FredPhaseOptions(fo, preempt=fred_preempt, unknown=fred_priority),
            roofline=roof,
            remote_mem=mem,
            phase=phase,
        )
        run, programs = done_f.run, done_f.programs
        fred = fred_report(done_f)
        sim, shortcut = None, "none"
        notes: list[str] = []
    else:
        from collc.workload_run import run_on_topology

        done = run_on_topology(
            w,
            topo,
            model,
            config=config,
            algos=algos,
            classes=classes,
            completion=completion,
            chunks_per_npu=chunks_per_npu,
            seed=seed,
            max_transfers=max_transfers,
            roofline=roof,
            remote_mem=mem,
            full=full,
            phase=phase,
            tuned=tuned,
            strict=strict,
        )
        run, sim, programs, shortcut = done.run, done.sim, done.programs, done.shortcut
        notes = done.notes
    phase(None)
    data = summary(w, run, sim=sim)
    data["model"] = model
    data["topology"] = topo.spec
    if model != "analytical":
        data["algorithm"] = algorithm
        data["programs"] = programs
        if tuned:
            data["tuned"] = tuned
    else:
        data["system"] = _config_json(config)
        data["symmetry_shortcut"] = shortcut
        data["notes"] = notes
    if fred is not None:
        data["model"] = "fred-phases"
        data["fred"] = fred
    if timeline is not None:
        write_timeline(timeline, w, run, sim, warn)
        data["files"] = [str(timeline)]
    data["seconds"] = round(time.perf_counter() - t0, 3)

    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    _print(data)


def _config_json(config: NativeConfig) -> dict[str, Any]:
    from dataclasses import asdict

    d = asdict(config)
    d["per_kind"] = {k.name: list(v) for k, v in config.per_kind.items()}
    d["implementation"] = list(config.implementation)
    return d


def _remote_mem(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lat, bw = (float(x) for x in text.split(","))
    except ValueError:
        raise CollcError(f"--remote-mem: expected LATENCY_NS,BYTES_PER_NS, got {text!r}") from None
    if not (0 <= lat <= 1e12 and 1e-6 <= bw <= 1e9):  # NaN fails too
        raise CollcError(
            f"--remote-mem: latency must lie in 0..1e12 ns and bandwidth in 1e-6..1e9 bytes/ns, "
            f"got {text!r}"
        )
    return lat, bw


def _print(d: dict[str, Any]) -> None:
    click.echo(
        f"workload: {d['npus']} NPUs, {d['nodes']:,} nodes, {d['collectives']:,} collectives "
        f"on {d['topology']} ({d['model']})"
    )
    click.echo(f"  iteration          {us(d['iteration_ns'])}")
    click.echo(
        f"  NPU {d['slowest_npu']} (slowest)   compute {us(d['compute_ns'])}, exposed "
        f"communication {us(d['exposed_communication_ns'])}"
    )
    if d["per_collective"]:
        click.echo("  collectives (group, kind, bytes: count, total)")
        for c in d["per_collective"][:10]:
            click.echo(
                f"    {c['group']:>6} ({c['group_size']} NPUs) {c['kind']:<15} {c['comm_size']:>12,} B"
                f"  x{c['count']:<5} {us(c['total_ns'])}"
            )
    if d.get("tuned"):
        click.echo("  tuned choices (group, kind, bytes: producer)")
        for t in d["tuned"][:10]:
            click.echo(
                f"    {t['group'] or '-':>6} {t['kind']:<15} {t['bytes']:>12,} B  {t['algorithm']}"
            )
    links = d.get("links")
    if links:
        click.echo(
            f"  links: {links['count']} in use, mean utilisation {links['mean_utilization']:.1%}; "
            "busiest:"
        )
        for lk in links["busiest"][:5]:
            click.echo(f"    {lk['src']}->{lk['dst']}  {lk['utilization']:.1%}")
    for note in d.get("notes", []):
        click.echo(f"  note: {note}")
    fred = d.get("fred")
    if fred:
        per = ", ".join(f"{v} {k}" for k, v in sorted(fred["configurations_per_class"].items()))
        fix = f", {fred['fix']}" if fred["fix"] else ""
        click.echo(
            f"  FRED phases: {fred['configurations']} configurations ({per}) at m={fred['m']}"
            f"{fix}; {fred['preemptions']} preemptions; alone {us(fred['uncontended_iteration_ns'])}"
        )
        click.echo("  switch    ports  configurations  bytes / budget")
        for sw in fred["switches"]:
            over = "" if sw["fits"] else "  OVER"
            click.echo(
                f"    {sw['name']:<6} {sw['ports']:>5}  {sw['configurations']:>14}  "
                f"{sw['bytes']:>5,} / {sw['budget_bytes']:,}{over}"
            )
    for f in d.get("files", []):
        click.echo(f"wrote {f}")
    click.echo(f"  ({d['seconds']} s)")


@workload.command(name="generate")
@click.argument("model")
@click.option("--npus", type=int, required=True, help="NPUs (= dp x tp x pp).")
@click.option("--dp", type=int, default=1, show_default=True, help="Data parallelism.")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor parallelism.")
@click.option("--pp", type=int, default=1, show_default=True, help="Pipeline stages.")
@click.option("--sp", is_flag=True, help="Sequence parallelism (with tensor parallelism).")
@click.option("--zero", type=click.IntRange(0, 2), default=0, show_default=True, help="ZeRO stage.")
@click.option("--microbatches", type=int, default=None, help="Per replica (default: pp).")
@click.option("--microbatch-size", type=int, default=1, show_default=True, help="Sequences.")
@click.option("--seq", type=int, default=None, help="Tokens per sequence (default: the model's).")
@click.option("--peak-tflops", type=float, default=None, help="NPU peak (default: A100 312).")
@click.option("--mem-bw", type=float, default=None, help="NPU memory GB/s (default: A100 2039).")
@click.option("--memory", "memory_gib", type=float, default=None, help="NPU GiB (default 80).")
@click.option("--no-memory-check", is_flag=True, help="Generate even if it does not fit.")
@click.option("--no-optimizer", is_flag=True, help="Leave out the optimizer step.")
@click.option("--output", "-o", "out", type=click.Path(path_type=Path), required=True)
@click.option("--json", "as_json", is_flag=True)
def generate_cmd(
    model: str,
    npus: int,
    dp: int,
    tp: int,
    pp: int,
    sp: bool,
    zero: int,
    microbatches: int | None,
    microbatch_size: int,
    seq: int | None,
    peak_tflops: float | None,
    mem_bw: float | None,
    memory_gib: float | None,
    no_memory_check: bool,
    no_optimizer: bool,
    out: Path,
    as_json: bool,
) -> None:
    """Generate one training iteration of MODEL (gpt3-125m ... gpt3-175b, vit-base/large/huge)
    as Chakra workload ETs in a folder ASTRA-sim and `collc workload simulate` run."""
    import dataclasses
    import time

    from workloads.chakra_io import write_workload
    from workloads.transformer import DEFAULT_NPU, GiB, generate

    t0 = time.perf_counter()
    hw = DEFAULT_NPU
    if peak_tflops is not None or mem_bw is not None or memory_gib is not None:
        for flag, v, unit in (
            ("--peak-tflops", peak_tflops, "TFLOP/s"),
            ("--mem-bw", mem_bw, "GB/s"),
            ("--memory", memory_gib, "GiB"),
        ):
            if v is not None and not (1e-6 <= v <= 1e9):  # NaN fails both
                raise CollcError(f"{flag} must lie between 1e-6 and 1e9 {unit}, got {v}")
        hw = dataclasses.replace(
            hw,
            name="custom",
            peak_flops=hw.peak_flops if peak_tflops is None else peak_tflops * 1e12,
            mem_bw=hw.mem_bw if mem_bw is None else mem_bw * 1e9,
            memory=hw.memory if memory_gib is None else int(memory_gib * GiB),
        )
    w = generate(
        model,
        npus=npus,
        dp=dp,
        tp=tp,
        pp=pp,
        sp=sp,
        microbatches=microbatches,
        microbatch_size=microbatch_size,
        seq=seq,
        zero=zero,
        hw=hw,
        optimizer=not no_optimizer,
        check_memory=not no_memory_check,
    )
    files = write_workload(w, out)
    mem = w.metadata.get("memory", {})
    data: dict[str, Any] = {
        "output": str(out),
        "npus": w.num_npus,
        "nodes": w.num_nodes,
        "groups": len(w.groups),
        "files": len(files),
        "memory_peak_bytes": mem.get("peak") if isinstance(mem, dict) else None,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(
        f"wrote {out}: {w.num_npus} NPUs, {w.num_nodes:,} nodes, {len(w.groups)} communicator "
        f"groups ({data['seconds']} s)"
    )
    if isinstance(data["memory_peak_bytes"], int):
        click.echo(f"  peak memory per NPU {data['memory_peak_bytes'] / GiB:.2f} GiB")
    click.echo(f"next: collc workload simulate {out} -t SPEC   (a topology of {w.num_npus} NPUs)")
