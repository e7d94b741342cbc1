"""The filter's running numbers in training dashboards: TensorBoard, Weights & Biases, MLflow.

``FilterDashboard.log(step, loader)`` gathers the filter's counts (from a torchdata
``StatefulDataLoader``'s state, a ``FairStream``'s ``stats()`` or a given stats dict), adds them
up across DDP ranks when ``torch.distributed`` is initialised, recomputes the estimated true
negative shares on the merged counts (``fairstream.core.estimates``) and writes flat scalars
(``dashboard_metrics``) from rank 0 only. Every rank must call ``log`` at the same steps: the
ranks' counts are gathered with a collective call.

The backend libraries are imported only when a dashboard that uses them is made (the
``tensorboard``, ``wandb`` and ``mlflow`` extras). docs/dashboards.md lists the metrics.
"""

from __future__ import annotations

from fairstream.dashboard.backends import BACKENDS
from fairstream.dashboard.board import FilterDashboard
from fairstream.dashboard.metrics import calibration_from, dashboard_metrics

__all__ = ["BACKENDS", "FilterDashboard", "calibration_from", "dashboard_metrics"]
