"""The Ray executor: a small local Ray on the loopback address gives the same study as the
local executors for the same seed and batch size."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray
from click.testing import CliRunner

from collc.cli import cli
from explore.executors import RayExecutor
from explore.psa import read_psa
from explore.report import load_study
from explore.study import Settings, run_study
from tests.explore.test_study import TINY


@pytest.fixture(scope="module")
def local_ray() -> Iterator[RayExecutor]:
    assert not ray.is_initialized()
    ex = RayExecutor(2)  # starts a local Ray of 2 CPUs on 127.0.0.1
    assert ray.is_initialized()
    yield ex
    ex.close()
    assert not ray.is_initialized()


def test_ray_gives_the_same_study_as_local(local_ray: RayExecutor, tmp_path: Path) -> None:
    psa = tmp_path / "tiny.yaml"
    psa.write_text(TINY)
    p = read_psa(psa)
    common = {"agent": "tpe", "trials": 12, "batch": 4, "seed": 5}
    out = run_study(
        p,
        Settings(storage=str(tmp_path / "r.db"), executor="ray", workers=2, **common),
        executor=local_ray,
    )
    run_study(p, Settings(storage=str(tmp_path / "l.db"), workers=1, **common))
    tr = load_study(str(tmp_path / "r.db")).get_trials()
    tl = load_study(str(tmp_path / "l.db")).get_trials()
    assert out.finished == 12 and out.simulated > 0
    assert [t.params for t in tr] == [t.params for t in tl]
    assert [t.values for t in tr] == [t.values for t in tl]
    assert [t.user_attrs.get("metrics") for t in tr] == [t.user_attrs.get("metrics") for t in tl]


def test_cli_executor_ray_joins_the_running_ray(local_ray: RayExecutor, tmp_path: Path) -> None:
    psa = tmp_path / "tiny.yaml"
    psa.write_text(TINY)
    db = tmp_path / "c.db"
    r = CliRunner().invoke(
        cli,
        [
            "explore",
            str(psa),
            "--executor",
            "ray",
            "--workers",
            "2",
            "--trials",
            "6",
            "--storage",
            str(db),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["finished"] == 6
    assert ray.is_initialized()  # a Ray it did not start is left running
