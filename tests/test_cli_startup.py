"""Start-up: ``import collc.cli`` loads none of the heavy libraries; each command imports what
it needs when it runs (issue 12). The option choices come from `collc.registry`, whose static
copies must equal the real registries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "networkx", "lark", "google.protobuf", "ortools", "matplotlib", "optuna", "ray")


def _loaded_after(statement: str) -> list[str]:
    probe = f"import sys\n{statement}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.split()


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert _loaded_after("import collc.cli") == []
    # The probe sees them when they are loaded: a command that needs numpy does load it.
    assert "numpy" in _loaded_after("import collc.cli\nimport collc.pipeline")


def test_help_and_version_load_no_heavy_library() -> None:
    for args in (["--help"], ["--version"], ["compile", "--help"], ["synthesize", "--help"]):
        statement = (
            "from click.testing import CliRunner\nfrom collc.cli import cli\n"
            f"r = CliRunner().invoke(cli, {args!r})\nassert r.exit_code == 0, r.output"
        )
        assert _loaded_after(statement) == [], args


def test_static_registries_match_the_real_ones() -> None:
    from backends.sim import MODELS
    from chakra_ir.outdir import MANIFEST
    from collc import pipeline, registry
    from collc.exporters import EXPORTERS

    assert registry.ALGORITHMS == pipeline.DESCRIPTIONS
    assert list(registry.ALGORITHMS) == list(pipeline.ALGORITHMS)
    assert registry.DEFAULT_ALGORITHM == pipeline.DEFAULT_ALGORITHM
    assert registry.MAX_TRANSFERS == pipeline.MAX_TRANSFERS
    assert {k: m.description for k, m in MODELS.items()} == registry.SIM_MODELS
    assert tuple(EXPORTERS) == registry.EXPORT_TARGETS
    assert registry.MANIFEST == MANIFEST
