"""Where a study's points are simulated (docs/explore.md, section 3): in this process, a
local process pool (`LocalExecutor`), or a Ray cluster (`RayExecutor`, connecting to a
running one or starting a local one). Workers only evaluate: the driver asks and tells, so a
study's results depend on its seed and batch size, not on the executor.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from explore.network import ExploreError

Evaluate = Callable[[dict[str, Any]], dict[str, Any]]


class Executor(Protocol):
    """Evaluates a batch of points, results in the batch's order."""

    workers: int

    def map(self, fn: Evaluate, items: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """``workers`` processes (spawned, so they share nothing with the driver); with one
    worker, the driver's own process."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ExploreError(f"--workers must be at least 1, got {workers}")
        self.workers = workers
        self._pool: Any = None
        if workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn")
            )

    def map(self, fn: Evaluate, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._pool is None:
            return [fn(x) for x in items]
        return list(self._pool.map(fn, items))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


class RayExecutor:
    """Ray tasks of one CPU each. ``address`` (or the environment's ``RAY_ADDRESS``): a
    running cluster (``auto`` or ``ray://host:port``); None starts a local Ray of ``workers`` CPUs on the loopback
    address, shut down by `close`."""

    def __init__(self, workers: int, address: str | None = None) -> None:
        if workers < 1:
            raise ExploreError(f"--workers must be at least 1, got {workers}")
        try:
            import ray
        except ImportError:
            raise ExploreError("--executor ray needs Ray: pip install 'collc[ray]'") from None
        self.workers = workers
        self._ray = ray
        self._started = False
        address = address or os.environ.get("RAY_ADDRESS")
        if not ray.is_initialized():
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(
                    num_cpus=workers,
                    include_dashboard=False,
                    log_to_driver=False,
                    _node_ip_address="127.0.0.1",
                )
                self._started = True
        self._remote: dict[Any, Any] = {}

    def map(self, fn: Evaluate, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(num_cpus=1)(fn)
        out: list[dict[str, Any]] = self._ray.get([remote.remote(x) for x in items])
        return out

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


def make_executor(kind: str, workers: int, address: str | None = None) -> Executor:
    """``local`` or ``ray``."""
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(workers, address)
    raise ExploreError(f"unknown executor {kind!r} (known: local, ray)")
