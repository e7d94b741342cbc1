"""Where the shard tasks of a pass run: a local process pool or Ray Data.

Both run the same task functions (``annotate_shard``, ``apply_shard``) on the same task dicts and
write into the same job folder, so they write the same files: a task's output depends only on its
shard and settings, never on which process or machine ran it. The job folder must be shared by
every worker (a local disk for the pool; a shared file system for a Ray cluster).

The local pool starts ``workers`` processes (``spawn``: no model state is inherited), each with its
own ONNX session of ``cores // workers`` threads, so threads x workers <= cores. Workers report
progress (documents, bytes) through a queue after every checkpoint; Ray reports per finished shard.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fairstream.errors import FairStreamError, MissingDependencyError, option
from fairstream.jobs.config import ENGINES
from fairstream.jobs.tasks import Report
from fairstream.processes import usable_cores

logger = logging.getLogger(__name__)


TaskFn = Callable[[Mapping[str, Any], Report | None], dict[str, Any]]


class LocalEngine:
    """A pool of ``workers`` processes on this machine (``workers=1``: in this process)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.cores = usable_cores()
        self.workers = workers or self.cores
        if self.workers < 1:
            raise FairStreamError(f"{option('workers', self.workers)}: must be a whole number >= 1")

    def map(self, fn: TaskFn, tasks: Sequence[dict[str, Any]], report: Report) -> list[dict[str, Any]]:
        """Run ``fn`` on every task; results in task order. The first failure stops the pass.

        The workers die with this process: each watches its parent (and, on Linux, asks the kernel
        for SIGTERM when it dies), ignores Ctrl-C (this process stops them and says so once), and is
        terminated when the pass ends early (a failure, Ctrl-C, SIGTERM turned into an exception).
        """
        processes = min(self.workers, len(tasks))
        # threads x processes <= cores; in this process (one worker or one shard) all the cores
        tasks = [{**t, "threads": max(1, self.cores // max(1, processes))} for t in tasks]
        if processes <= 1:
            return [fn(t, report) for t in tasks]
        import multiprocessing as mp
        from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait

        ctx = mp.get_context("spawn")
        # a plain queue handed over at start (no manager process, which outlived a killed parent)
        updates = ctx.Queue()
        pool = ProcessPoolExecutor(
            max_workers=processes, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(), updates)
        )
        try:
            futures = [pool.submit(_run_reporting, fn, t) for t in tasks]
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
                _drain(updates, report)
                for f in finished:
                    if f.exception() is not None:
                        raise f.exception()  # type: ignore[misc]
            _drain(updates, report)
            results = [f.result() for f in futures]
        except BaseException:
            _stop_workers(pool)
            raise
        pool.shutdown(wait=True)
        updates.close()
        return results


_UPDATES: Any = None  # a worker's queue of progress updates (set by _init_worker)


def _init_worker(parent: int, updates: Any) -> None:
    import signal

    from fairstream.processes import die_with_parent

    global _UPDATES
    _UPDATES = updates
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent handles it
    die_with_parent(parent)


def _stop_workers(pool: Any) -> None:
    """End a pool's workers now: their tasks are checkpointed, a rerun resumes them."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # no public handle on them
    for p in workers:
        with contextlib.suppress(Exception):
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in workers:
        with contextlib.suppress(Exception):
            p.join(timeout=5)


def _run_reporting(fn: TaskFn, task: Mapping[str, Any]) -> dict[str, Any]:
    updates = _UPDATES
    return fn(task, lambda docs, n_bytes: updates.put((docs, n_bytes)))


def _drain(updates: Any, report: Report) -> None:
    while True:
        try:
            docs, n_bytes = updates.get_nowait()
        except queue.Empty:
            return
        report(docs, n_bytes)


class RayEngine:
    """Ray Data over the same tasks: one task per shard, one CPU each.

    Args:
        address: a running cluster (``ray://head:10001`` or ``auto``); ``None`` starts a local Ray.
        num_cpus: CPUs of a local Ray (ignored with ``address``).
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise MissingDependencyError(
                f"{option('engine', 'ray')} needs Ray: pip install 'fairstream[ray]'"
            ) from None
        self.ray = ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address:
                kwargs["address"] = address
            else:
                kwargs["num_cpus"] = num_cpus or usable_cores()
            ray.init(**kwargs)

    def map(self, fn: TaskFn, tasks: Sequence[dict[str, Any]], report: Report) -> list[dict[str, Any]]:
        """Run ``fn`` on every task as Ray Data rows; results in task order."""
        if not tasks:
            return []
        import ray.data

        items = [
            {"task": json.dumps({**t, "threads": 1}), "fn": f"{fn.__module__}:{fn.__name__}"} for t in tasks
        ]
        ds = ray.data.from_items(items, override_num_blocks=len(items)).map(_ray_row, num_cpus=1)
        by_shard: dict[str, dict[str, Any]] = {}
        for row in ds.iter_rows():
            result = json.loads(row["result"])
            by_shard[result["shard"]] = result
            report(int(result["counts"].get("documents", 0)), int(result.get("bytes", 0)))
        return [by_shard[t["name"]] for t in tasks]


def _ray_row(row: dict[str, Any]) -> dict[str, Any]:
    import importlib

    module, name = row["fn"].split(":")
    fn = getattr(importlib.import_module(module), name)
    return {"result": json.dumps(fn(json.loads(row["task"]), None))}


def make_engine(engine: str, *, workers: int | None = None, ray_address: str | None = None) -> Any:
    """The engine named ``engine`` (one of ``ENGINES``)."""
    if engine == "local":
        if ray_address:
            raise FairStreamError(f"{option('ray_address')} needs {option('engine', 'ray')}")
        return LocalEngine(workers)
    if engine == "ray":
        return RayEngine(ray_address, num_cpus=workers)
    raise FairStreamError(f"{option('engine', engine)} is not one of {ENGINES}")
