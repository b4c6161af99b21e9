"""A study killed with SIGKILL in the middle of a batch and resumed: the count of finished
trials is exact, no finished trial is simulated again, and every trial in flight at the kill
is retried exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from optuna.trial import TrialState

from explore.psa import read_psa
from explore.report import load_study, report
from explore.study import Settings, run_study
from tests.explore.test_study import TINY

ROOT = Path(__file__).resolve().parents[2]
FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def _states(db: Path) -> dict[str, int]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            return dict(c.execute("SELECT state, COUNT(*) FROM trials GROUP BY state").fetchall())
    except sqlite3.Error:
        return {}


def test_sigkill_then_resume_is_exact(tmp_path: Path) -> None:
    psa = tmp_path / "tiny.yaml"
    # A wider bandwidth range keeps the cache from answering most points.
    psa.write_text(TINY.replace("{range: [50, 200, 50]}", "{range: [10, 400, 10]}"))
    db = tmp_path / "s.db"
    total = 40
    argv = [
        sys.executable,
        "-m",
        "collc",
        "explore",
        str(psa),
        "--trials",
        str(total),
        "--storage",
        str(db),
        "--batch",
        "4",
        "--workers",
        "2",
        "--agent",
        "random",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    try:
        while True:
            st = _states(db)
            if st.get("COMPLETE", 0) >= 6 and st.get("RUNNING", 0) > 0:
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, f"no trial in flight in time: {st}"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its pool: the group it leads
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    before = load_study(str(db)).get_trials()
    done_before = {t.number: t for t in before if t.state in FINISHED}
    in_flight = [t for t in before if t.state == TrialState.RUNNING]
    assert in_flight and len(done_before) < total

    out = run_study(
        read_psa(psa), Settings(storage=str(db), trials=total, batch=4, agent="random", resume=True)
    )
    assert out.interrupted == len(in_flight) == out.retried

    after = load_study(str(db)).get_trials()
    finished = [t for t in after if t.state in FINISHED]
    assert len(finished) == total
    # Finished trials are untouched.
    for n, t in done_before.items():
        assert after[n].state == t.state and after[n].values == t.values
        assert after[n].datetime_complete == t.datetime_complete
    # Every trial in flight failed as interrupted and was retried once, with its parameters.
    for t in in_flight:
        assert after[t.number].state == TrialState.FAIL
        assert after[t.number].user_attrs["interrupted"] is True
        retries = [r for r in after if r.user_attrs.get("retry_of") == t.number]
        assert len(retries) == 1 and retries[0].params == t.params
        assert retries[0].state in FINISHED
    assert all(
        r.user_attrs.get("retry_of") in {t.number for t in in_flight}
        for r in after
        if "retry_of" in r.user_attrs
    )
    # No point simulated before the kill was simulated again.
    keys_before = {
        t.user_attrs["key"] for t in done_before.values() if t.state == TrialState.COMPLETE
    }
    for t in after[len(before) :]:
        if t.state == TrialState.COMPLETE and t.user_attrs["key"] in keys_before:
            assert t.user_attrs.get("cached_from") is not None
    data = report(load_study(str(db)), with_importance=False)
    assert data["finished"] == total and data["interrupted"] == len(in_flight)
    assert data["running"] == 0 and data["failed"] == len(in_flight)

    # Resuming a finished study runs nothing more.
    again = run_study(read_psa(psa), Settings(storage=str(db), trials=total, resume=True))
    assert again.simulated == again.infeasible == again.interrupted == 0
    assert len(load_study(str(db)).get_trials()) == len(after)
