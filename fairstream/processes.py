"""Helper process pools (the keyword stage's scan workers, the GPU path's tokenizer processes)."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.util
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, where the OS has one).

    The one count that every default sizing threads or processes reads.
    """
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def helper_pool(
    workers: int,
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
    *,
    setting: str,
    doing: str,
    warn: bool = True,
) -> ProcessPoolExecutor | None:
    """``workers`` helper processes, or ``None`` inside a daemonic process (a DataLoader worker).

    A daemonic process may not start processes: then the caller does the work itself and this logs
    ``"{setting}=N ignored: ...; {doing} in this process"`` (a warning when ``warn``, else at debug
    level). The pool forks on Linux: it starts in milliseconds and needs no
    ``if __name__ == "__main__":`` guard in the user's script; the helpers must touch none of the
    locks the parent's threads may hold (the model's, CUDA). Elsewhere it spawns, which needs that guard.

    The pool is shut down when this process exits, also where that is a worker of another pool (the
    offline engine's), and each helper exits by itself once this process is gone (killed).
    """
    if multiprocessing.current_process().daemon:
        logger.log(
            logging.WARNING if warn else logging.DEBUG,
            "%s=%d ignored: a daemonic process (e.g. a DataLoader worker) cannot start processes; "
            "%s in this process",
            setting,
            workers,
            doing,
        )
        return None
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_init_helper,
        initargs=(os.getpid(), initializer, initargs),
    )
    # A multiprocessing child joins its non-daemonic children (these helpers) on exit before the
    # atexit hook that would shut this pool down; kept alive by a module global in a worker of the
    # offline engine, the pool then waited for work forever and so did its parent. Multiprocessing
    # runs finalizers with an exit priority before that join, the highest first: above the pool's own
    # queues' (10), which must still carry the shutdown to the helpers.
    multiprocessing.util.Finalize(pool, _shut_down, args=(weakref.ref(pool),), exitpriority=20)
    return pool


def _shut_down(pool_ref: weakref.ref[ProcessPoolExecutor]) -> None:
    pool = pool_ref()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _init_helper(parent: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
    # a helper blocks reading its work queue, whose write end it holds itself: a parent killed with
    # SIGKILL would leave it waiting forever (and holding the parent's stdout, which a caller reading
    # that pipe waits on)
    die_with_parent(parent)
    initializer(*initargs)


def die_with_parent(parent: int) -> None:
    """End this process when process ``parent`` ends, however it ends (SIGKILL included).

    On Linux the kernel sends SIGTERM at once (``PR_SET_PDEATHSIG``); everywhere a watcher thread
    exits once this process has been handed to another parent (within about half a second). A
    killed parent's workers would otherwise live on and keep writing into its output folder.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)
    threading.Thread(
        target=_exit_when_orphaned, args=(parent,), daemon=True, name="fairstream-orphan-watch"
    ).start()


def _exit_when_orphaned(parent: int, every_s: float = 0.5) -> None:
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(0)
