"""The filter for Ray Data: a callable class for ``Dataset.map_batches`` (model loaded once per actor).

    import ray
    from fairstream.adapters.ray import filter_dataset

    ds = ray.data.read_json("shards/")
    kept = filter_dataset(ds, FilterConfig(cap=0.01))          # or map_batches(RayFilter, ...)

Each actor runs its own ``FilterStep`` over the batches it is given, in the order it gets them, so
every actor's output obeys the cap and so does their union; with one actor and
``DataContext.get_current().execution_options.preserve_order = True`` the output equals the other
adapters' on the same documents. Rows that are dropped are left out; kept rows carry the text with
dropped sentences removed (and the annotation as JSON in ``fairstream`` when ``annotate``).

Counts: with ``stats_dir``, each actor writes its running stats there after every batch (one file
per actor); ``fairstream.io.stats_parts.merge_stats_parts(stats_dir)`` sums them once the dataset
is consumed, with the estimated true negative shares.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig
from fairstream.core.step import FilterStep
from fairstream.taxonomy import Taxonomy

ANNOTATION_COLUMN = "fairstream"


class RayFilter:
    """``map_batches`` callable over ``batch_format="numpy"`` batches (dict of column arrays).

    Args:
        config: the filter's settings; ``settings`` override its fields.
        annotate: add each kept row's annotation (JSON text) under ``fairstream``.
        stats_dir: a folder (on a file system every actor sees) where each actor keeps its stats.
        taxonomy: a loaded taxonomy used instead of ``config.taxonomy`` (``filter_dataset`` reads it
            in the driver and hands it over, so an actor on another node needs no copy of the file).
    """

    def __init__(
        self,
        config: FilterConfig | None = None,
        *,
        annotate: bool = False,
        stats_dir: str | Path | None = None,
        taxonomy: Taxonomy | str | Path | None = None,
        **settings: Any,
    ) -> None:
        self.step = FilterStep(config, taxonomy=taxonomy, **settings)  # once per actor: the model loads here
        self.text_field = self.step.config.text_field
        self.annotate = annotate
        self.stats_dir = stats_dir
        self._name = f"ray-actor-{uuid.uuid4().hex[:12]}"
        self._next_index = 0

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        """Filter one batch; returns the kept rows (all columns) with their new text."""
        columns = list(batch)
        n = len(batch[self.text_field])
        docs = [{c: _plain(batch[c][i]) for c in columns} for i in range(n)]
        results = self.step.process(docs, start=self._next_index, annotate=self.annotate)
        self._next_index += n
        out: dict[str, list[Any]] = {c: [] for c in columns}
        if self.annotate:
            out[ANNOTATION_COLUMN] = []
        for doc, result in zip(docs, results, strict=True):
            if not result.kept:
                continue
            for c in columns:
                out[c].append(result.text if c == self.text_field else doc[c])
            if self.annotate:
                out[ANNOTATION_COLUMN].append(json.dumps(result.annotation))
        if self.stats_dir is not None:
            from fairstream.io.stats_parts import write_stats_part

            write_stats_part(self.stats_dir, self._name, self.step.counts(), self.step.config.model)
        return out


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value documents hold (``str``, ``int``, ...)."""
    return value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value


def filter_dataset(
    ds: Any,
    config: FilterConfig | None = None,
    *,
    concurrency: int = 1,
    annotate: bool = False,
    stats_dir: str | Path | None = None,
    **settings: Any,
) -> Any:
    """``ds.map_batches`` with ``RayFilter``: batches of ``config.lookahead`` rows, one GPU per actor on a GPU.

    A GPU is asked for when ``device`` is ``cuda`` or ``cuda:N``, or ``auto`` on a cluster with GPUs.
    Ray hands each actor one GPU of its own (``CUDA_VISIBLE_DEVICES``), so inside the actor the model
    runs on ``cuda``: an index means nothing there. With ``stats_dir`` the actors keep their stats
    there (``merge_stats_parts(stats_dir)`` after the dataset is consumed). The taxonomy is read
    here, in the driver, and handed to the actors (a file of it need not exist on their nodes).
    """
    config = config or FilterConfig()
    config = config.replace(**settings) if settings else config
    taxonomy = Taxonomy.load(config.taxonomy)
    gpus = gpus_per_actor(config.device)
    if gpus:
        config = config.replace(device="cuda")
    return ds.map_batches(
        RayFilter,
        fn_constructor_kwargs={
            "config": config,
            "annotate": annotate,
            "stats_dir": stats_dir,
            "taxonomy": taxonomy,
        },
        batch_size=config.lookahead,
        batch_format="numpy",
        concurrency=concurrency,
        num_gpus=gpus,
    )


def gpus_per_actor(device: str) -> int:
    """GPUs a filter actor asks Ray for: 1 for ``cuda``/``cuda:N``, and for ``auto`` where the cluster has one."""
    if device.startswith("cuda"):
        return 1
    if device == "auto":
        import ray

        return 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
    return 0
