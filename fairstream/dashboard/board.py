"""``FilterDashboard``: gathers the filter's counts (workers, DDP ranks) and writes them from rank 0."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fairstream.core.estimates import with_estimates
from fairstream.core.stats import StreamStats, stats_from_loader_state
from fairstream.dashboard.backends import BACKENDS, check_backend, open_backend
from fairstream.dashboard.metrics import calibration_from, dashboard_metrics
from fairstream.models.calibration import Calibration

logger = logging.getLogger(__name__)


def _calibration_in_dataset(dataset: Any) -> Calibration | None:
    """The calibration of a FairStream that is ``dataset`` or one of its attributes (a wrapper's)."""
    found = calibration_from(dataset)
    if found is None:
        for value in getattr(dataset, "__dict__", {}).values():
            found = found or calibration_from(value)
    return found


def _distributed() -> Any:
    """``torch.distributed`` when it is initialised (torch is not imported for it), else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


class FilterDashboard:
    """Log the filter's running counts and estimated shares to TensorBoard, W&B and/or MLflow.

    Args:
        backend: ``"tensorboard"``, ``"wandb"``, ``"mlflow"``, or a list of them.
        log_dir: TensorBoard's event folder; W&B's ``dir`` (default: W&B's own). Default for
            TensorBoard: ``runs/fairstream``.
        every: ``log`` writes at steps that are multiples of ``every`` (and when forced).
        prefix: put before every metric name.
        calibration: the model's calibration for the estimated shares: a ``Calibration``, a
            ``FairStream``/``FilterStep`` (theirs) or a ``FilterConfig`` (its model folder's). None:
            the stream given to ``log``, or a FairStream found as the loader's dataset or one of its
            attributes.
        top_k: per-attribute metrics for the ``top_k`` attributes with most person sentences only.
        wandb_project, wandb_mode, wandb_name: ``wandb.init``'s ``project``/``mode``/``name`` (e.g.
            ``mode="offline"``). A W&B run already open in this process is logged into instead.
        mlflow_tracking_uri, mlflow_experiment, mlflow_run_name: where MLflow writes (None: MLflow's
            default URI; a run already active there is logged into instead of a new one).
    """

    def __init__(
        self,
        backend: str | Sequence[str] = "tensorboard",
        *,
        log_dir: str | Path | None = None,
        every: int = 100,
        prefix: str = "fairstream/",
        calibration: Any = None,
        top_k: int | None = None,
        wandb_project: str = "fairstream",
        wandb_mode: str | None = None,
        wandb_name: str | None = None,
        mlflow_tracking_uri: str | None = None,
        mlflow_experiment: str = "fairstream",
        mlflow_run_name: str | None = None,
    ) -> None:
        names = [backend] if isinstance(backend, str) else list(backend)
        bad = [b for b in names if b not in BACKENDS]
        if not names or bad:
            raise ValueError(
                f"backend={backend!r}: must be one of {', '.join(BACKENDS)} (or a non-empty list of them)"
            )
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every={every!r}: must be an integer >= 1 (log every that many steps)")
        if top_k is not None and (not isinstance(top_k, int) or top_k < 0):
            raise ValueError(f"top_k={top_k!r}: must be an integer >= 0 or None (all attributes)")
        self.calibration = calibration_from(calibration) if calibration is not None else None
        if calibration is not None and self.calibration is None:
            raise ValueError(
                f"calibration={type(calibration).__name__}: must be a Calibration, a FairStream, "
                "a FilterStep or a FilterConfig"
            )
        self.backends = list(dict.fromkeys(names))
        for name in self.backends:  # a missing library fails here, on every rank, not at the first write
            check_backend(name)
        self.every, self.prefix, self.top_k = every, prefix, top_k
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self._wandb: dict[str, Any] = {"project": wandb_project, "mode": wandb_mode, "name": wandb_name}
        self._mlflow: dict[str, Any] = {
            "uri": mlflow_tracking_uri,
            "experiment": mlflow_experiment,
            "run_name": mlflow_run_name,
        }
        self._writers: list[Any] | None = None
        self._last: tuple[float, float] | None = None  # (wall clock, docs_in) at the previous log
        self.closed = False

    # -- gathering --------------------------------------------------------------------------------
    def gather(
        self, loader: Any = None, *, stream: Any = None, stats: Mapping[str, Any] | None = None
    ) -> dict:
        """The counts of all workers and ranks with ``estimates`` recomputed (a collective call in DDP)."""
        if loader is not None and callable(getattr(loader, "stats", None)) and not hasattr(loader, "dataset"):
            loader, stream = None, loader  # a FairStream given where a loader goes
        given = [n for n, v in (("loader", loader), ("stream", stream), ("stats", stats)) if v is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of loader=, stream= or stats= (got {given or 'none'})")
        if loader is not None:
            local = stats_from_loader_state(loader.state_dict())
        elif stream is not None:
            local = StreamStats.from_dict(stream.stats())
        else:
            local = StreamStats.from_dict(dict(stats or {}))
        merged = local
        dist = _distributed()
        if dist is not None:
            parts: list[Any] = [None] * dist.get_world_size()
            dist.all_gather_object(parts, local.to_dict())
            merged = StreamStats()
            for part in parts:
                merged = merged + StreamStats.from_dict(part)
        calibration = self.calibration or self._find_calibration(loader, stream, stats)
        return with_estimates(merged.to_dict(), calibration)

    def _find_calibration(self, loader: Any, stream: Any, stats: Any) -> Calibration:
        found = calibration_from(stream) if stream is not None else None
        if found is None and loader is not None:
            found = _calibration_in_dataset(getattr(loader, "dataset", None))
        if found is None:
            raise ValueError(
                "no calibration for the estimated shares: pass calibration= to FilterDashboard "
                "(a FairStream, a FilterConfig or a Calibration)"
            )
        self.calibration = found
        return found

    # -- writing ----------------------------------------------------------------------------------
    def log(
        self,
        step: int,
        loader: Any = None,
        *,
        stream: Any = None,
        stats: Mapping[str, Any] | None = None,
        force: bool = False,
    ) -> dict[str, float] | None:
        """At every ``every``-th step (or ``force``), gather the counts and write them (rank 0).

        Give one of ``loader`` (a torchdata ``StatefulDataLoader`` over a FairStream or a dataset
        wrapping one), ``stream`` (a FairStream iterated in this process) or ``stats`` (a stats
        dict). Under DDP every rank must call ``log`` with the same steps. Returns the metrics
        (on every rank), or None when the step is skipped.
        """
        if self.closed:
            raise RuntimeError("FilterDashboard.log after close()")
        if not force and step % self.every:
            return None
        merged = self.gather(loader, stream=stream, stats=stats)
        metrics = dashboard_metrics(merged, prefix=self.prefix, top_k=self.top_k)
        now, docs = time.monotonic(), metrics[f"{self.prefix}docs_in"]
        if self._last is not None and now > self._last[0]:
            metrics[f"{self.prefix}docs_per_second"] = (docs - self._last[1]) / (now - self._last[0])
        self._last = (now, docs)
        dist = _distributed()
        if dist is None or dist.get_rank() == 0:
            if self._writers is None:
                self._writers = [
                    open_backend(name, self.log_dir, self._wandb, self._mlflow) for name in self.backends
                ]
            for writer in self._writers:
                writer.write(metrics, step)
        return metrics

    def close(self) -> None:
        """Flush and close what this dashboard opened (a W&B or MLflow run it did not open stays open)."""
        for writer in self._writers or []:
            writer.close()
        self._writers, self.closed = [], True

    def __enter__(self) -> FilterDashboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
