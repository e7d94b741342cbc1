"""The writers of ``FilterDashboard``: TensorBoard, Weights & Biases and MLflow, imported lazily."""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fairstream.errors import MissingDependencyError

logger = logging.getLogger(__name__)

#: the dashboards ``FilterDashboard`` writes to
BACKENDS = ("tensorboard", "wandb", "mlflow")
_MLFLOW_BATCH = 1000  # MLflow's limit of metrics per log_batch call

_LIBRARIES = {
    "tensorboard": [("tensorboard", "tensorboard"), ("torch.utils.tensorboard", "torch")],
    "wandb": [("wandb", "wandb")],
    "mlflow": [("mlflow", "mlflow")],
}


def _require(module: str, extra: str, what: str) -> Any:
    """Import ``module``, or raise a one-line error naming the pip extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} needs {module.split('.')[0]} ({exc}): pip install 'fairstream[{extra}]'"
        ) from exc


def check_backend(name: str) -> None:
    """Import the libraries of backend ``name``, or raise naming the pip extra that installs them."""
    for module, extra in _LIBRARIES[name]:
        _require(module, extra, f"FilterDashboard({name!r})")


def open_backend(name: str, log_dir: Path | None, wandb: dict[str, Any], mlflow: dict[str, Any]) -> Any:
    """The writer of backend ``name`` (``write(metrics, step)``, ``close()``)."""
    if name == "tensorboard":
        return _TensorBoard(log_dir or Path("runs") / "fairstream")
    if name == "wandb":
        return _WandB(log_dir, **wandb)
    return _MLflow(**mlflow)


class _TensorBoard:
    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))
        logger.info("TensorBoard: writing the filter's metrics to %s", log_dir)

    def write(self, metrics: Mapping[str, float], step: int) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, global_step=step)
        self.writer.flush()  # a script that never closes the dashboard still leaves every point

    def close(self) -> None:
        self.writer.close()


class _WandB:
    def __init__(self, log_dir: Path | None, project: str, mode: str | None, name: str | None) -> None:
        import wandb

        self.own = wandb.run is None
        self.run: Any = wandb.run
        if self.own:
            settings: dict[str, Any] = {"project": project, "mode": mode, "name": name}
            if log_dir is not None:
                log_dir.mkdir(parents=True, exist_ok=True)
                settings["dir"] = str(log_dir)
            self.run = wandb.init(**settings)
        logger.info("W&B: writing the filter's metrics to run %s", self.run.id)

    def write(self, metrics: Mapping[str, float], step: int) -> None:
        # our own run: the step is written now (W&B holds a step given without commit until a later
        # one); the user's run: left open for the user's own metrics of that step
        self.run.log(dict(metrics), step=step, commit=True if self.own else None)

    def close(self) -> None:
        if self.own:
            self.run.finish()


class _MLflow:
    def __init__(self, uri: str | None, experiment: str, run_name: str | None) -> None:
        import mlflow
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(uri)
        active = mlflow.active_run() if uri is None else None
        self.own = active is None
        if active is not None:
            self.run_id = active.info.run_id
        else:
            found = self.client.get_experiment_by_name(experiment)
            exp_id = found.experiment_id if found else self.client.create_experiment(experiment)
            self.run_id = self.client.create_run(exp_id, run_name=run_name).info.run_id
        logger.info("MLflow: writing the filter's metrics to run %s", self.run_id)

    def write(self, metrics: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        rows = [Metric(key, value, stamp, step) for key, value in metrics.items()]
        for i in range(0, len(rows), _MLFLOW_BATCH):
            self.client.log_batch(self.run_id, metrics=rows[i : i + _MLFLOW_BATCH])

    def close(self) -> None:
        if self.own:
            self.client.set_terminated(self.run_id)
