"""Mutation campaigns through the real CLI (a few hundred cases; the benchmark
``benchmarks/bench_mutants.py`` runs thousands): truncated, bit-flipped, swapped and deleted
rank files and edited manifests under verify, simulate and inspect, and mutated topology specs
under bounds and synthesize. Every run ends in success, a wrong-program verdict (1) or one
error line with status 2; never a traceback."""

from __future__ import annotations

import random
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hardening.mutants import (
    COMMANDS,
    FOLDER_CLASSES,
    SPEC_COMMANDS,
    acceptable,
    make_base,
    mutate_folder,
    mutate_spec,
    run_cli,
)


@cache
def _bases() -> tuple[Path, ...]:
    root = Path(tempfile.mkdtemp(prefix="collc-mutants-"))
    return tuple(make_base(root))


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(st.sampled_from(FOLDER_CLASSES), st.integers(0, 2**32 - 1))
def test_folder_mutants_never_give_a_traceback(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    base = rng.choice(_bases())
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "m"
        what = mutate_folder(base, dest, kind, rng)
        for cmd in COMMANDS:
            outcome = run_cli([*cmd, str(dest)])
            assert acceptable(outcome), (kind, what, cmd, outcome.traceback or outcome.output)


def test_swapped_and_deleted_rank_files_are_always_refused() -> None:
    """Not only no traceback: a folder whose rank files were swapped or deleted never passes."""
    for kind in ("swap", "delete"):
        for seed in range(6):
            rng = random.Random(seed)
            with tempfile.TemporaryDirectory() as tmp:
                dest = Path(tmp) / "m"
                what = mutate_folder(rng.choice(_bases()), dest, kind, rng)
                for cmd in (("verify",), ("simulate",)):
                    outcome = run_cli([*cmd, str(dest)])
                    assert outcome.exit_code == 2 and acceptable(outcome), (what, outcome.output)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(SPEC_COMMANDS))))
def test_spec_mutants_never_give_a_traceback(seed: int, which: int) -> None:
    spec = mutate_spec(random.Random(seed))
    with tempfile.TemporaryDirectory() as tmp:
        outcome = run_cli(SPEC_COMMANDS[which](spec, Path(tmp) / "o"))
    assert acceptable(outcome), (spec, which, outcome.traceback or outcome.output)
