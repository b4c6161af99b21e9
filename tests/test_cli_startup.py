"""Start-up: ``import collc.cli`` loads none of the heavy libraries; each command imports what
it needs when it runs (issue 12). The option choices come from `collc.registry`, whose static
copies must equal the real registries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "networkx", "lark", "google.protobuf", "ortools", "matplotlib", "optuna", "ray")


NOT_FOR_COMPILE = (
    "networkx",
    "yaml",
    "google.protobuf",
    "ortools",
    "matplotlib",
    "optuna",
    "ray",
    "tacos.groups",
    "tacos.synthesis",
    "baselines",
    "backends.astrasim",
    "chakra_ir.et.reader",
    "backends.sim.models",
    "backends.sim.analytical",
    "backends.sim.astra_aware",
    "backends.sim.et_tasks",
    "backends.sim.native",
    "backends.sim.plots",
    "backends.sim.concurrent",
)
"""What `collc compile` of a small program has no use for: networkx (`tacos.bounds` takes the
exact min-cut of small topologies with `tacos.maxflow`), YAML (no topology file), protobuf and
the ET reader (the ET writer writes by hand), TACOS's synthesis, the baselines, ASTRA-sim's
exporter and every simulation model (it needs only `backends.sim.gates`)."""


def _loaded_after(statement: str, modules: tuple[str, ...] = HEAVY) -> list[str]:
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.split()


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _loaded_after("import collc.cli") == []
    # The probe sees them when they are loaded: a command that needs numpy does load it.
    assert "numpy" in _loaded_after("import collc.cli\nimport collc.pipeline")


def test_help_and_version_load_no_heavy_library() -> None:
    for args in (
        ["--help"],
        ["--version"],
        ["compile", "--help"],
        ["synthesize", "--help"],
        ["explore", "--help"],
        ["explore", "run", "--help"],
        ["explore", "report", "--help"],
    ):
        statement = (
            "from click.testing import CliRunner\nfrom collc.cli import cli\n"
            f"r = CliRunner().invoke(cli, {args!r})\nassert r.exit_code == 0, r.output"
        )
        assert _loaded_after(statement) == [], args


def test_compile_loads_only_what_it_runs(tmp_path: Path) -> None:
    program = ROOT / "examples" / "allreduce_ring.py"
    args = ["compile", str(program), "-o", str(tmp_path / "out"), "--", "4", "1"]
    statement = (
        "from click.testing import CliRunner\nfrom collc.cli import cli\n"
        f"r = CliRunner().invoke(cli, {args!r})\nassert r.exit_code == 0, r.output"
    )
    assert _loaded_after(statement, NOT_FOR_COMPILE) == []
    assert (tmp_path / "out" / "manifest.json").exists()
    # The probe sees them when they are loaded: synthesizing with a baseline loads baselines.
    synth = ["synthesize", "--topology", "ring:4", "--collective", "allreduce"]
    synth += ["--algorithm", "ring", "-o", str(tmp_path / "ring")]
    statement = statement.replace(repr(args), repr(synth))
    assert "baselines" in _loaded_after(statement, NOT_FOR_COMPILE)


def test_static_registries_match_the_real_ones() -> None:
    from backends.sim import MODELS
    from baselines import ALGORITHMS as BASELINES
    from chakra_ir.outdir import MANIFEST
    from collc import pipeline, registry
    from collc.exporters import EXPORTERS

    assert registry.ALGORITHMS == pipeline.DESCRIPTIONS
    # pipeline.ALGORITHMS takes its names from the registry, so compare with the producers
    assert list(registry.ALGORITHMS) == ["tacos", *BASELINES]
    assert list(registry.ALGORITHMS) == list(pipeline.ALGORITHMS)
    assert registry.DEFAULT_ALGORITHM == pipeline.DEFAULT_ALGORITHM
    assert registry.MAX_TRANSFERS == pipeline.MAX_TRANSFERS
    assert {k: m.description for k, m in MODELS.items()} == registry.SIM_MODELS
    assert tuple(EXPORTERS) == registry.EXPORT_TARGETS
    from backends.fred.compile import FIXES
    from backends.fred.phases import PRIORITIES

    assert (FIXES, PRIORITIES) == (registry.FRED_FIXES, registry.FRED_PRIORITIES)
    assert registry.MANIFEST == MANIFEST
    from payloads.endpoint import CONVERTERS

    assert registry.CONVERTERS == CONVERTERS
    from collc.tune_export import TUNE_TARGETS

    assert registry.TUNE_EXPORT_TARGETS == TUNE_TARGETS
    assert set(TUNE_TARGETS) <= set(EXPORTERS)
    from explore.agents import AGENTS

    assert registry.EXPLORE_AGENTS == AGENTS


def test_the_version_written_into_files_is_the_installed_packages() -> None:
    from importlib.metadata import version

    from chakra_ir.outdir import collc_version

    assert collc_version() == version("collc")
