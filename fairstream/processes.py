"""Helper process pools (the keyword stage's scan workers, the GPU path's tokenizer processes)."""

from __future__ import annotations

import logging
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)


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
    return ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context(method), initializer=initializer, initargs=initargs
    )
