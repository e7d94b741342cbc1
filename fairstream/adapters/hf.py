"""The filter as a batched function for ``datasets.Dataset.map`` / ``.filter`` and ``IterableDataset.map``.

    mapper = fairstream_map_fn(cap=0.01)
    ds = ds.map(mapper, batched=True, batch_size=256)          # adds "fairstream_keep" (+ annotations)
    ds = ds.filter(lambda b: b["fairstream_keep"], batched=True)

Rows keep their order and count: with ``granularity="sentence"`` the text column holds the text
with dropped sentences removed and ``fairstream_keep`` is False only for rows that became empty or
were skipped as invalid (``on_error="skip"``); with ``"document"`` the text is unchanged and
``fairstream_keep`` says whether to keep the document. The cap controller lives in the mapper, so
batches must be passed in stream order; with ``num_proc > 1`` each process caps its own part.
A source that shards itself (an HF ``IterableDataset``) is mapped as it comes: nothing here splits it.

A mapper is never served another mapper's result from ``datasets``' cache: each instance carries a
random token of its own,
which ``datasets`` hashes with the rest of the mapper into the fingerprint that names the ``map``'s
cache file. Without it a fresh mapper with the same settings hashes the same in every process, so a
second run of the same script over the same files would load the first run's result from the cache,
the mapper would never run and ``stats()`` would count nothing while the rows had been filtered.
The price is a new cache file per ``map`` call (``keep_in_memory=True`` writes none). A mapper is
one stream: a second ``map`` with the same instance (even over the same dataset) runs again and
continues it, with row positions, cap tallies and counts carried on, so ``stats()`` then covers
both calls; take a new mapper to start over. ``stats()`` has every counter, at 0 before any row.
With ``num_proc > 1`` the rows are mapped by copies of the mapper in the worker processes, whose
counts do not come back: the caller's ``stats()`` stays at 0, and as the caller's mapper does not
change, a second ``map`` of it over the same dataset loads the first one's (equal) result from the cache.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig, loaded_or_setting
from fairstream.core.step import FilterStep
from fairstream.stream.tagger import MentionModel
from fairstream.taxonomy import Taxonomy

KEEP_COLUMN = "fairstream_keep"
ANNOTATION_COLUMN = "fairstream"


class FairStreamMapper:
    """Callable over column batches (``dict[str, list]``) that applies one persistent ``FilterStep``.

    Args:
        config: the filter's settings; ``settings`` override its fields (``cap=``, ``granularity=``, ...).
        annotate: add the annotation of each row under the ``fairstream`` column.
        model, taxonomy: loaded objects used instead of the settings (see ``FilterStep``), or a model
            folder / a taxonomy's name or file (the same as the settings).
    """

    def __init__(
        self,
        config: FilterConfig | None = None,
        *,
        annotate: bool = False,
        model: MentionModel | str | Path | None = None,
        taxonomy: Taxonomy | str | Path | None = None,
        **settings: Any,
    ) -> None:
        model = loaded_or_setting(settings, "model", model)
        taxonomy = loaded_or_setting(settings, "taxonomy", taxonomy)
        config = config or FilterConfig()
        config = config.replace(**settings) if settings else config
        self.step = FilterStep(config, model=model, taxonomy=taxonomy)
        self.text_field = self.step.config.text_field
        self.annotate = annotate
        self._next_index = 0  # stream position of the next row: names rows in errors and annotations
        # hashed by datasets with the rest of the mapper: no two mappers share a cache fingerprint
        self._instance_token = secrets.token_hex(16)

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """Filter one batch of rows; returns the updated text column, the keep column and annotations."""
        columns = list(batch)
        n = len(batch[self.text_field]) if self.text_field in batch else len(next(iter(batch.values()), []))
        docs = [{c: batch[c][i] for c in columns} for i in range(n)]
        results = self.step.process(docs, start=self._next_index, annotate=self.annotate)
        self._next_index += n
        out: dict[str, list[Any]] = {
            # an invalid row skipped under on_error="skip" keeps its value, marked not kept
            self.text_field: [
                r.text if r.text is not None else d.get(self.text_field)
                for r, d in zip(results, docs, strict=True)
            ],
            KEEP_COLUMN: [r.kept for r in results],
        }
        if self.annotate:
            out[ANNOTATION_COLUMN] = [r.annotation for r in results]
        return out

    def stats(self) -> dict[str, Any]:
        """Mergeable counts of everything this mapper mapped so far, every counter present (0 before any row)."""
        return self.step.stats()

    def state_dict(self) -> dict[str, Any]:
        """The step's state and the row position, as plain JSON."""
        return {**self.step.state_dict(), "next_index": self._next_index}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue after the rows ``state_dict()`` had seen."""
        self.step.load_state_dict(state)
        self._next_index = int(state["next_index"])


def fairstream_map_fn(config: FilterConfig | None = None, **kwargs: Any) -> FairStreamMapper:
    """A batched map function; ``kwargs`` are ``FilterConfig`` fields (cap, granularity, ...) or ``annotate``/``model``."""
    return FairStreamMapper(config, **kwargs)
