"""The filter as a datatrove pipeline step.

    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from fairstream.adapters.datatrove import FairStreamFilter

    LocalPipelineExecutor(pipeline=[
        JsonlReader("shards/"),
        FairStreamFilter(cap=0.01, exclusion_writer=JsonlWriter("removed/")),
        JsonlWriter("kept/"),
    ], tasks=4).run()

Dropped sentences are removed from each document's text in place; what was removed goes to the
exclusion writer: a whole dropped document as it was (``metadata["filter_reason"]``), and the
removed sentences of a kept document as one document ``<id>/removed`` with the spans and their
reasons in ``metadata["fairstream_dropped"]``. Counts go to datatrove's stats
(``sentences_dropped``, ``dropped_<reason>``, ``docs_modified`` ...). Each datatrove task runs its own
``FilterStep`` (model loaded once per task) over its own documents, in the order its reader
gives them; every task's output obeys the cap, so their union does too. With ``stats_dir`` each task
writes its whole stats there when it ends (``rank-00000.stats.json``, ...);
``fairstream.io.stats_parts.merge_stats_parts(stats_dir)`` sums them, with the estimated true
negative shares (datatrove's own stats can only add numbers, not hold shares).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig, loaded_or_setting
from fairstream.core.step import FilterStep
from fairstream.errors import MissingDependencyError
from fairstream.taxonomy import Taxonomy

try:
    from datatrove.data import Document, DocumentsPipeline
    from datatrove.pipeline.filters.base_filter import BaseFilter
    from datatrove.pipeline.writers.disk_base import DiskWriter
except ImportError as exc:
    raise MissingDependencyError(
        f"the datatrove adapter needs datatrove ({exc}): pip install 'fairstream[datatrove]'"
    ) from exc


class FairStreamFilter(BaseFilter):
    """A datatrove filter that removes negative-regard sentences beyond the cap (see module docstring).

    Args:
        config: the filter's settings; ``settings`` override its fields (``cap=``, ``granularity=``, ...).
            Documents are filtered ``config.lookahead`` at a time (one batched model call each).
        exclusion_writer: a datatrove writer for what was removed.
        annotate: keep each document's annotation in ``metadata["fairstream"]``.
        stats_dir: a local folder where each task writes its stats when it ends.
        taxonomy: a loaded taxonomy used instead of ``config.taxonomy`` (a name or a file: the same as
            the setting). Either way it is read here,
            where the pipeline is built, and travels with the step to every task (which may run in
            another process or folder).
    """

    name = "⚖️ fairstream"

    def __init__(
        self,
        config: FilterConfig | None = None,
        *,
        exclusion_writer: DiskWriter | None = None,
        annotate: bool = False,
        stats_dir: str | Path | None = None,
        taxonomy: Taxonomy | str | Path | None = None,
        **settings: Any,
    ) -> None:
        taxonomy = loaded_or_setting(settings, "taxonomy", taxonomy)
        config = config or FilterConfig()
        self.config = config.replace(**settings) if settings else config
        self.taxonomy = taxonomy if taxonomy is not None else Taxonomy.load(self.config.taxonomy)
        super().__init__(exclusion_writer=exclusion_writer, batch_size=self.config.lookahead)
        self.annotate = annotate
        self.stats_dir = stats_dir
        self._step: FilterStep | None = None  # built in the task: the model is not pickled to workers
        self._rank, self._index = 0, 0  # the task's rank; stream index of its next document

    @property
    def step(self) -> FilterStep:
        """The task's filter step (created on first use)."""
        if self._step is None:
            self._step = FilterStep(self.config, taxonomy=self.taxonomy)
        return self._step

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        """One document (datatrove calls ``filter_batch``, ``config.lookahead`` documents at a time)."""
        return self.filter_batch([doc])[0]

    def run(self, data: DocumentsPipeline, rank: int = 0, world_size: int = 1) -> DocumentsPipeline:
        """``BaseFilter.run``; the task's rank is kept for the removed sentences' documents."""
        self._rank, self._index = rank, 0
        yield from super().run(data, rank, world_size)
        if self.stats_dir is not None:
            from fairstream.io.stats_parts import write_stats_part

            write_stats_part(self.stats_dir, f"rank-{rank:05d}", self.step.counts(), self.config.model)

    def filter_batch(self, batch: list[Document]) -> list[bool | tuple[bool, str]]:
        """Filter documents in stream order: keep (with dropped sentences removed in place) or drop, with why.

        The removed sentences of a kept document go to the exclusion writer here (``BaseFilter.run``
        writes only whole dropped documents, which it does with the reason returned).
        """
        records = [{"text": d.text, "id": d.id} for d in batch]
        results = self.step.process(records, start=self._index, annotate=True)
        self._index += len(batch)
        return [self._decision(doc, result) for doc, result in zip(batch, results, strict=True)]

    def _decision(self, doc: Document, result: Any) -> bool | tuple[bool, str]:
        if result.error is not None:  # on_error="skip"
            return False, result.error.reason
        if self.annotate:
            doc.metadata["fairstream"] = result.annotation
        for d in result.dropped:
            self.stat_update("sentences_dropped", f"sentences_{d.reason}")
        if not result.kept:
            return (
                False,
                "document-dropped" if self.config.granularity == "document" else "all-sentences-dropped",
            )
        if result.dropped:
            self.stat_update("docs_modified")
            if self.exclusion_writer is not None:
                removed = Document(
                    text="\n".join(result.original[d.start : d.end] for d in result.dropped),
                    id=f"{doc.id}/removed",
                    metadata={
                        "filter_reason": "sentences-dropped",
                        "fairstream_dropped": [[d.start, d.end, d.reason] for d in result.dropped],
                    },
                )
                self.exclusion_writer.write(removed, self._rank)
            doc.text = result.text
        return True

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_step"] = None  # workers load their own model
        return state
