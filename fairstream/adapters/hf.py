"""FairStream as a batched function for ``datasets.Dataset.map`` / ``.filter`` and ``IterableDataset.map``.

    mapper = fairstream_map_fn(cap=0.01)
    ds = ds.map(mapper, batched=True, batch_size=256)          # adds "fairstream_keep" (+ annotations)
    ds = ds.filter(lambda b: b["fairstream_keep"], batched=True)

Rows keep their order and count: with ``granularity="sentence"`` the text column holds the text
with dropped sentences removed and ``fairstream_keep`` is False only for rows that became empty or
were skipped as invalid (``on_error="skip"``); with ``"document"`` the text is unchanged and
``fairstream_keep`` says whether to keep the document. The cap controller lives in the mapper, so
batches must be passed in stream order; with ``num_proc > 1`` each process caps its own part.
"""

from __future__ import annotations

from typing import Any

from fairstream.stream.dataset import FairStream, remove_spans

KEEP_COLUMN = "fairstream_keep"


class FairStreamMapper:
    """Callable over column batches (``dict[str, list]``) that applies one persistent FairStream."""

    def __init__(self, *, text_field: str = "text", annotate: bool = False, **fairstream_kwargs: Any) -> None:
        self.text_field = text_field
        self.annotate = annotate
        self._annotations: dict[int, tuple[str, dict[str, Any]]] = {}
        self.stream = FairStream(
            [], text_field=text_field, annotate=False, hooks=[self._collect], **fairstream_kwargs
        )

    def _collect(self, text: str, annotation: dict[str, Any]) -> None:
        self._annotations[annotation["doc_index"]] = (text, annotation)

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """Filter one batch of rows; returns the updated text column, the keep column and annotations."""
        columns = list(batch)
        n = len(batch[self.text_field]) if self.text_field in batch else len(next(iter(batch.values()), []))
        docs = [{c: batch[c][i] for c in columns} for i in range(n)]
        self._annotations = {}
        self.stream.source = docs
        for _ in self.stream:
            pass
        texts: list[Any] = []
        keep: list[bool] = []
        notes: list[dict[str, Any] | None] = []
        for i, doc in enumerate(docs):
            if i not in self._annotations:  # skipped as invalid (counted in stats())
                texts.append(doc.get(self.text_field))
                keep.append(False)
                notes.append(None)
                continue
            text, ann = self._annotations[i]  # the text as the stream decoded and checked it
            dropped = [(s["start"], s["end"]) for s in ann["sentences"] if not s["kept"]]
            if self.stream.granularity == "document":
                texts.append(text)
                keep.append(not dropped)
            else:
                new = remove_spans(text, dropped) if dropped else text
                texts.append(new)
                keep.append(not dropped or bool(new.strip()))
            notes.append(ann)
        out: dict[str, list[Any]] = {self.text_field: texts, KEEP_COLUMN: keep}
        if self.annotate:
            out["fairstream"] = notes
        return out

    def stats(self) -> dict[str, Any]:
        """Mergeable counts of everything mapped so far."""
        return self.stream.stats()


def fairstream_map_fn(**kwargs: Any) -> FairStreamMapper:
    """A batched map function; ``kwargs`` are those of :class:`FairStream` (cap, granularity, model, ...)."""
    return FairStreamMapper(**kwargs)
