"""Static registries of names the CLI shows before any command runs.

``import collc.cli`` must load none of numpy, networkx, lark, protobuf, ortools, matplotlib,
optuna or ray (issue 12: start-up time), so the choices and help texts of its options come
from here, not from the packages that implement them; each command imports what it needs when
it runs. ``tests/test_cli_startup.py`` holds that these copies equal the real registries
(`collc.pipeline.DESCRIPTIONS`, TACOS and `baselines.ALGORITHMS`, `backends.sim.MODELS`,
`collc.exporters.EXPORTERS`): add a producer, model or target there and here.
`collc.producers.ALGORITHMS` takes its names from `ALGORITHMS` below, so that a producer's
package is imported only when it runs.
"""

from __future__ import annotations

ALGORITHMS: dict[str, str] = {
    "tacos": (
        "TACOS: greedy link-chunk matching on a time-expanded network (any topology, "
        "switches, failures, heterogeneous links); RS/Reduce/Scatter by reversal, AR = RS "
        "+ AG"
    ),
    "ring": (
        "unidirectional ring along a Hamiltonian cycle of the placed NPUs, pipelined over "
        "sub-chunks (all-reduce = reduce-scatter + all-gather, 2(N-1) steps)"
    ),
    "ring-bidir": ("two rings in opposite directions, each carrying half of the data"),
    "direct": (
        "every rank exchanges with every other rank directly, shift-scheduled (all-reduce "
        "= direct reduce-scatter + direct all-gather)"
    ),
    "rhd": (
        "recursive halving-doubling, log2 N steps per phase; non-powers of two fold the "
        "extra ranks into partners (Rabenseifner)"
    ),
    "dbt": (
        "double binary tree (NCCL style): two complementary trees, chunks alternate "
        "trees, reduce up then broadcast down, pipelined"
    ),
    "dimensional": (
        "all-to-all dimension by dimension on a grid topology: a direct all-to-all inside "
        "every line of one dimension, then the next (chunks for each peer sent together)"
    ),
    "hierarchical": (
        "multi-dimensional on a grid topology, every NPU one rank (ASTRA-sim "
        "localBWAware): reduce-scatter along dims 0..n-1, all-gather back n-1..0; ring on "
        "ring/mesh dims, direct on fc/switch dims; chunks_per_rank/natural streams "
        "pipelined through per-dimension queues"
    ),
    "themis": (
        "hierarchical with Themis (offlineGreedy) scheduling: each stream its own "
        "dimension order, chosen to keep heterogeneous dimensions equally busy"
    ),
    "swing": (
        "Swing (NSDI 2024), bandwidth-optimal: reduce-scatter + all-gather over peers at "
        "distance 1, -1, 3, -5, 11, ..., dimensions alternating, one instance per torus port "
        "(2D on a D-dim torus); tori of 1-4 dims (meshes outside the paper's claim)"
    ),
    "swing-latency": (
        "Swing, latency-optimal: the whole part exchanged and reduced at every step (log2 N "
        "steps), one instance per torus port"
    ),
    "fred-innetwork": (
        "in-network (FRED): the switches reduce and multicast while forwarding; all-reduce "
        "is one flow in which every NPU sends and receives the buffer once, reduce-scatter "
        "and all-gather one flow per rank (needs fred:N or switch:N,innet=yes)"
    ),
    "sparcml-rd": (
        "SparCML sparse recursive doubling all-reduce: log2 N exchanges of the whole partial "
        "sum (sparse messages turn dense under --payload's auto format once dense is smaller)"
    ),
    "sparcml-split": (
        "SparCML split all-gather all-reduce: direct sparse reduce-scatter, then recursive "
        "doubling all-gather of the reduced regions"
    ),
    "oktopk": (
        "Ok-Topk all-reduce: split-and-reduce, then a balanced all-gather of each region's "
        "top-k after the reduction (the payload keeps one rank's density, not the fill-in)"
    ),
}
"""Producers by name, with their descriptions (`collc.pipeline.DESCRIPTIONS`)."""

DEFAULT_ALGORITHM = "tacos"
MAX_TRANSFERS = 50_000_000
"""`collc.pipeline.MAX_TRANSFERS`."""


SIM_MODELS: dict[str, str] = {
    "congestion": ("links as FIFO servers, store-and-forward hop by hop, under collc's cost model"),
    "analytical": (
        "ASTRA-sim's congestion-unaware analytical backend running the program as a "
        "custom collective"
    ),
    "astra-aware": (
        "ASTRA-sim's congestion-aware analytical backend running the program as a custom "
        "collective (per-link FIFO, whole ns per hop, ASTRA-sim's routes)"
    ),
}
"""Simulation models by name, with their descriptions (`backends.sim.MODELS`)."""

EXPORT_TARGETS = ("msccl-xml", "astra-sim", "mesh", "torus", "fred", "chakra-et")
"""`collc.exporters.EXPORTERS`, in order."""

CONVERTERS = ("sw", "hw")
"""`payloads.endpoint.CONVERTERS`: format conversion in software or in the accelerator."""
FRED_FIXES = ("none", "raise-m")
"""`backends.fred.compile.FIXES`."""
FRED_PRIORITIES = ("mp", "pp", "dp")
"""`backends.fred.phases.PRIORITIES`."""

MANIFEST = "manifest.json"
"""`chakra_ir.outdir.MANIFEST`."""

LIBRA_OBJECTIVES: dict[str, str] = {
    "perf": "PerfOpt: least iteration time",
    "perf-per-cost": "PerfPerCostOpt: least iteration time x network cost",
}
"""`explore.problem.OBJECTIVES`."""
TUNE_EXPORT_TARGETS = ("msccl-xml", "astra-sim")
"""`collc.tune_export.TUNE_TARGETS`: what ``collc tune --export`` writes, one per range."""

TUNED = "tuned"
"""The ``--algorithm`` of ``collc workload simulate`` that picks, per collective kind, group
and size, the fastest producer (`collc.tune_workload`)."""

EXPLORE_AGENTS: dict[str, str] = {
    "random": "uniform random sampling",
    "tpe": "tree-structured Parzen estimator (Bayesian)",
    "nsga2": "NSGA-II genetic algorithm (multi-objective)",
    "cmaes": "CMA-ES on the numeric knobs (the cmaes package; categorical knobs at random)",
    "gp": "Gaussian-process Bayesian optimisation (needs torch: collc[gp])",
    "grid": "every point of a small set, in random order",
    "rw": "random walk: one knob of the latest feasible point moved per step",
}
"""``collc explore --agent`` (`explore.agents.AGENTS`)."""

PROGRAM_FORMS = ("auto", "full", "symmetric")
"""``collc synthesize --form``: the form of a program file (collc/program_files.py)."""
