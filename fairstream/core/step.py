"""``FilterStep``: documents in -> per document the kept text, the dropped spans and an annotation.

The step owns the tagger (keywords, sentences, model), the cap controller and the counts. Every
way in (the torch dataset, ``datasets.map``, datatrove, Ray Data, the offline job) is a thin
adapter that feeds it batches in stream order and maps its results back; so they all keep the
same text from the same documents, seed and granularity.

Decisions are made document by document in the order given, which is what makes them
reproducible: ``state_dict()`` taken between two documents restores exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fairstream.core.cap import CapController, UnitCounts
from fairstream.core.config import FilterConfig, loaded_or_setting
from fairstream.core.estimates import estimates
from fairstream.core.schema import ANNOTATION_SCHEMA_VERSION
from fairstream.core.stats import StreamStats
from fairstream.core.windows import Document, IndexedDocument, lookahead_windows, read_one_ahead
from fairstream.errors import ConfigError, InvalidDocumentError, option
from fairstream.models.calibration import Calibration, model_calibration
from fairstream.models.loader import load_model_for
from fairstream.models.runtime import usable_cores
from fairstream.stream.tagger import MentionModel, TaggedDocument, Tagger, runs_on_gpu
from fairstream.taxonomy import Taxonomy
from fairstream.text import LengthFilter, coerce_text

logger = logging.getLogger(__name__)

D = TypeVar("D", bound=Document)
W = TypeVar("W")
Hook = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class DroppedSpan:
    """A removed sentence: its character span in the original text and why it was dropped."""

    start: int
    end: int
    reason: str


@dataclass
class DocResult:
    """What the step made of one document.

    ``text`` is the text to emit: the original without the dropped sentences (byte for byte
    otherwise); with ``granularity="document"`` a kept document is never changed. ``kept`` is
    False for a dropped document (document granularity, or every sentence of it dropped) and for
    an invalid one skipped under ``on_error="skip"`` (then ``error`` says why and ``text`` is None).
    """

    index: int
    kept: bool
    text: str | None
    original: str | None
    dropped: list[DroppedSpan] = field(default_factory=list)
    annotation: dict[str, Any] | None = None
    error: InvalidDocumentError | None = None
    tagged: TaggedDocument | None = field(default=None, repr=False)

    def annotation_with_tokens(self) -> dict[str, Any] | None:
        """The annotation with each sentence's NLTK tokens (for counters that would tokenize again)."""
        if self.annotation is None or self.tagged is None:
            return self.annotation
        sentences = [
            {**s, "tokens": ts.sentence.tokens}
            for s, ts in zip(self.annotation["sentences"], self.tagged.sentences, strict=True)
        ]
        return {**self.annotation, "sentences": sentences}


def default_scan_workers(model: Any) -> int:
    """Keyword-stage processes for ``scan_workers=None``: the cores but one beside a GPU, else 0.

    A GPU model outruns one core's keyword stage, which then runs in parallel to keep it fed. On CPU
    ``--scan-workers N`` between model calls gained 1.06x on 2 cores (benchmarks/RESULTS.md), but end to end the
    gain was inside the run-to-run spread, for ~7 CPU seconds of pickling and forked processes: the
    CPU default stays 0.
    """
    return max(1, usable_cores() - 1) if runs_on_gpu(model) else 0


class FilterStep:
    """The filter over batches of documents, in stream order (see module docstring).

    Args:
        config: the settings (``FilterConfig()``: the defaults); ``settings`` override fields of it.
        model: a loaded model (anything with ``name`` and ``predict``) used instead of
            ``config.model`` (so several steps can share one).
        taxonomy: a loaded taxonomy used instead of ``config.taxonomy``, or a shipped taxonomy's name
            or a JSON file (the same as the ``taxonomy`` setting).
    """

    def __init__(
        self,
        config: FilterConfig | None = None,
        *,
        model: MentionModel | None = None,
        taxonomy: Taxonomy | str | Path | None = None,
        **settings: Any,
    ) -> None:
        taxonomy = loaded_or_setting(settings, "taxonomy", taxonomy)
        config = config or FilterConfig()
        self.config = config.replace(**settings) if settings else config
        c = self.config
        if taxonomy is None and c.taxonomy is not None:
            taxonomy = Taxonomy.load(c.taxonomy)
        if model is None:  # one place turns the device setting into a backend (no torch for cpu)
            model = load_model_for(c)
        self.tagger = Tagger(
            model,
            taxonomy=taxonomy,
            splitter=c.splitter,
            length_filter=LengthFilter(c.min_tokens, c.max_tokens),
            cache_size=c.cache_size,
            batch_size=c.batch_size,
            scan_workers=c.scan_workers if c.scan_workers is not None else default_scan_workers(model),
            scan_overlap={"auto": None, "on": True, "off": False}[c.scan_overlap],
            # a default computed in the main process may reach a DataLoader worker: no warning there
            scan_fallback_warns=c.scan_workers is not None,
        )
        self.taxonomy = self.tagger.taxonomy
        self.controller = CapController(
            c.cap, caps=c.caps, taxonomy=self.taxonomy, warmup=c.warmup, seed=c.seed
        )
        #: the model's shipped calibration of P(negative) (identity when it ships none): the
        #: estimated true shares in ``stats()["estimates"]`` are computed with it
        self.calibration: Calibration = model_calibration(model)
        self._stats = StreamStats()

    # -- documents in ------------------------------------------------------------------------------
    def text_of(self, doc: Any, name: str) -> str | InvalidDocumentError:
        """The text of a document (a dict or a string), or the error that makes it unusable.

        ``name`` names the document in the error (e.g. ``file:line`` or ``document 7``).
        """
        field_name = self.config.text_field
        id_field = self.config.id_field
        if id_field and isinstance(doc, Mapping) and doc.get(id_field) is not None:
            name = f"{name} (id={doc[id_field]!r})"
        try:
            if isinstance(doc, Mapping):
                if field_name not in doc:
                    raise InvalidDocumentError(
                        f"{name}: no field {field_name!r} (fields: {sorted(doc)[:10]})",
                        reason="missing-field",
                        fix=f"set {option('text_field')} or pass {option('on_error', 'skip')}",
                    )
                value = doc[field_name]
            else:
                value = doc
            return coerce_text(
                value, where=f"{name} field {field_name!r}", max_chars=self.config.doc_char_limit
            )
        except InvalidDocumentError as exc:
            return exc

    @property
    def prefetches(self) -> bool:
        """Whether callers should hand the next window to ``prefetch`` (the keyword stage runs in workers)."""
        return self.tagger.prefetches

    def prefetch(self, docs: Sequence[Any]) -> None:
        """Start the keyword stage of the next window's documents while this one is judged."""
        texts = [self.text_of(doc, "document") for doc in docs]
        self.tagger.prefetch([t for t in texts if isinstance(t, str)])

    def read_ahead(self, windows: Iterable[W], docs_of: Callable[[W], Sequence[Any]]) -> Iterator[W]:
        """``windows`` in order, for callers that ``process`` one window at a time.

        With scan workers each next window is read and handed to ``prefetch`` (its documents:
        ``docs_of(window)``) before the current one comes out, so the workers scan it while this
        one is judged; if reading it fails, the current window still comes out first. Without
        them windows are read lazily, one at a time.
        """
        if not self.prefetches:
            yield from windows
            return
        for window, following in read_one_ahead(iter(windows)):
            if following is not None:
                self.prefetch(docs_of(following))
            yield window

    def tag(self, texts: list[str]) -> list[TaggedDocument]:
        """Keywords, candidate sentences and model judgements of several texts (one batched model call)."""
        return self.tagger.tag_batch(texts)

    def filter_documents(
        self,
        docs: Iterable[D],
        *,
        locate: Callable[[D], str] | None = None,
        hooks: Sequence[Hook] = (),
        annotate: bool = False,
        emit_from: int = 0,
        on_window: Callable[[list[D]], None] | None = None,
        stop_scan_workers: bool = True,
    ) -> Iterator[tuple[D, DocResult]]:
        """The document loop every streaming way in drives: each document with what the step made of it.

        ``docs`` (anything with ``index`` and ``data``, in stream order) are read in windows of
        ``lookahead`` documents; a window's keyword stage and model run in one batch (with scan
        workers the next window is scanned meanwhile), then its documents are decided one by one,
        each decision followed by the ``hooks`` (``hook(original_text, annotation)``) and by the
        ``(doc, result)`` pair: a state taken after any pair describes exactly what came out.

        Documents with ``index < emit_from`` (already emitted before a resume) are tagged again
        only to rebuild their window's batch, then passed over. An invalid document raises under
        ``on_error="raise"`` after every document before it; under ``"skip"`` it is counted and
        comes out with ``result.error`` set. ``on_window(window)`` runs after a window's model call.
        The scan workers stop when the loop ends, unless ``stop_scan_workers=False`` (a caller that
        runs the loop once per part of a shard keeps them, and calls ``tagger.close()`` itself).
        """
        name = locate or (lambda d: f"document {d.index}")
        windows = lookahead_windows(docs, self.config.lookahead)
        try:
            for window in self.read_ahead(windows, lambda w: [d.data for d in w]):
                texts = [self.text_of(d.data, name(d)) for d in window]
                yield from self._judge(
                    window, texts, hooks=hooks, annotate=annotate, emit_from=emit_from, on_tagged=on_window
                )
        finally:  # the scan workers end with the pass (a next pass starts new ones)
            if stop_scan_workers:
                self.tagger.close()

    def process(
        self,
        docs: Sequence[Any],
        *,
        start: int = 0,
        annotate: bool = True,
        locate: Callable[[int], str] | None = None,
    ) -> list[DocResult]:
        """Filter a batch of documents, in order; ``start`` is the index of ``docs[0]`` in the stream.

        With ``on_error="raise"`` a bad document raises before any document of the batch is
        decided, so the step's state is as before the call.
        """
        name = locate or (lambda i: f"document {i}")
        texts = [self.text_of(doc, name(start + i)) for i, doc in enumerate(docs)]
        if self.config.on_error == "raise":
            for t in texts:
                if isinstance(t, InvalidDocumentError):
                    raise t
        window = [IndexedDocument(start + i, doc) for i, doc in enumerate(docs)]
        return [result for _, result in self._judge(window, texts, annotate=annotate)]

    def _judge(
        self,
        window: list[D],
        texts: list[str | InvalidDocumentError],
        *,
        hooks: Sequence[Hook] = (),
        annotate: bool = False,
        emit_from: int = 0,
        on_tagged: Callable[[list[D]], None] | None = None,
    ) -> Iterator[tuple[D, DocResult]]:
        """One window: its texts tagged in one batch, then each document decided in order."""
        annotate = annotate or bool(hooks)
        tagged = iter(self.tag([t for t in texts if isinstance(t, str)]))
        if on_tagged is not None:
            on_tagged(window)
        for d, text in zip(window, texts, strict=True):
            if d.index < emit_from:  # emitted before a resume; tagged again only to rebuild the batch
                if isinstance(text, str):
                    next(tagged)
                continue
            if isinstance(text, InvalidDocumentError):
                if self.config.on_error == "raise":
                    raise text  # after every document before it
                yield d, self.skip(d.index, text)
                continue
            result = self.decide(d.index, d.data, text, next(tagged), annotate=annotate)
            if hooks:
                # hooks also get each sentence's NLTK tokens, so a sidecar need not tokenize again
                with_tokens = result.annotation_with_tokens()
                for hook in hooks:
                    hook(text, with_tokens)  # type: ignore[arg-type]
            yield d, result

    def skip(self, index: int, error: InvalidDocumentError) -> DocResult:
        """Count an invalid document as skipped (``on_error="skip"``)."""
        self._stats.counters["docs_in"] += 1
        self._stats.skipped[error.reason] += 1
        logger.warning("skipped %s", error.problem)
        return DocResult(index, kept=False, text=None, original=None, error=error)

    def decide(
        self, index: int, doc: Any, text: str, tagged: TaggedDocument, *, annotate: bool = True
    ) -> DocResult:
        """Apply the cap to one tagged document (the next in stream order) and count it."""
        stats = self._stats
        stats.counters["docs_in"] += 1
        if not text.strip():
            stats.counters["docs_empty"] += 1
        if tagged.scan.has_keyword:
            stats.counters["docs_with_keyword"] += 1
        stats.counters["sentences_candidate"] += len(tagged.sentences)
        stats.counters["sentences_out_of_length"] += tagged.scan.n_mention_sentences_out_of_length
        sentence_units: list[UnitCounts] = []
        judged: list[dict[str, tuple[str, float]]] = []  # per sentence: attribute -> (regard, P(negative))
        for ts in tagged.sentences:
            per_attr = stats.count_mentions(
                (m.keyword, p.person, p.regard, p.regard_probs[0])
                for m, p in zip(ts.sentence.mentions, ts.predictions, strict=True)
            )
            unit = UnitCounts()
            for kw, (regard, _) in per_attr.items():
                unit.add(kw, regard)
            sentence_units.append(unit)
            judged.append(per_attr)
        decisions = self._decide(sentence_units)
        dropped: list[DroppedSpan] = []
        for ts, per_attr, (keep, reason) in zip(tagged.sentences, judged, decisions, strict=True):
            for kw, (regard, p_negative) in per_attr.items():
                stats.count_person_sentence(kw, regard, p_negative, keep)
            if not keep:
                stats.counters["sentences_dropped"] += 1
                dropped.append(DroppedSpan(ts.sentence.start, ts.sentence.end, reason))
        new_text = remove_spans(text, [(d.start, d.end) for d in dropped]) if dropped else text
        doc_dropped = bool(dropped) and (self.config.granularity == "document" or not new_text.strip())
        if doc_dropped:
            stats.counters["docs_dropped"] += 1
        else:
            stats.counters["docs_out"] += 1
            if dropped:
                stats.counters["docs_modified"] += 1
        annotation = self._annotation(index, doc, tagged, decisions, not doc_dropped) if annotate else None
        if self.config.granularity == "document":
            new_text = text  # a kept document is whole; a dropped one is dropped whole
        return DocResult(index, not doc_dropped, new_text, text, dropped, annotation, tagged=tagged)

    def _decide(self, units: list[UnitCounts]) -> list[tuple[bool, str]]:
        if self.config.granularity == "sentence":
            return [self.controller.decide(u) for u in units]
        doc_unit = UnitCounts()
        for u in units:
            for kw, counts in u.by_attr.items():
                for r, c in counts.items():
                    doc_unit.add(kw, r, c)
        keep, reason = self.controller.decide(doc_unit)
        # a dropped document drops all its sentences, so the stats agree with the controller's tallies
        return [(keep, reason if keep or u.negative_attributes else "document-dropped") for u in units]

    def _annotation(
        self, index: int, doc: Any, tagged: TaggedDocument, decisions: list[tuple[bool, str]], kept: bool
    ) -> dict[str, Any]:
        id_field = self.config.id_field
        doc_id = doc.get(id_field) if (id_field and isinstance(doc, Mapping)) else None
        sentences = []
        for ts, (keep, reason) in zip(tagged.sentences, decisions, strict=True):
            mentions = []
            for m, p in zip(ts.sentence.mentions, ts.predictions, strict=True):
                d = m.to_dict()
                d.update(
                    {
                        "wsd_score": round(p.wsd_score, 4),
                        "person": p.person,
                        "regard": p.regard,
                        "regard_probs": [round(x, 4) for x in p.regard_probs],
                    }
                )
                mentions.append(d)
            sentences.append(
                {
                    "start": ts.sentence.start,
                    "end": ts.sentence.end,
                    "n_tokens": ts.sentence.n_tokens,
                    "kept": keep,
                    "reason": reason,
                    "mentions": mentions,
                }
            )
        return {
            "schema_version": ANNOTATION_SCHEMA_VERSION,
            "doc_index": index,
            "id": doc_id,
            "taxonomy": self.taxonomy.name,
            # name and content hash: counts of different taxonomies refuse to add up (fairstream.stats.provenance)
            "taxonomy_identity": self.taxonomy.identity,
            "model": self.tagger.model.name,
            "granularity": self.config.granularity,
            "sentences": sentences,
            # what the scan saw beside the judged sentences, so a count made from annotations alone (the
            # global cap's report pass) has the stream's docs_with_keyword and sentences_out_of_length
            "has_keyword": tagged.scan.has_keyword,
            "sentences_out_of_length": tagged.scan.n_mention_sentences_out_of_length,
            # counters of documents out read this, so theirs equal stats()["counters"]["docs_out"]
            "doc_kept": kept,
        }

    # -- counts and state --------------------------------------------------------------------------
    def counts(self) -> dict[str, Any]:
        """Mergeable counts (JSON-able); add several with ``StreamStats.from_dict(a) + ...``.

        What ``stats()`` holds without its derived ``estimates`` block: what a worker hands on to be
        summed (``write_stats_part``, a job's shards), where the estimates are computed once, on the total.
        """
        out = self._stats.to_dict()
        out["counters"]["model_calls"] = self.tagger.model_calls
        out["counters"]["mentions_predicted"] = self.tagger.mentions_predicted
        out["counters"]["cache_hits"] = self.tagger.cache_hits
        out["seconds"] = {k: round(v, 3) for k, v in self.tagger.seconds.items()}
        out["taxonomy"] = self.taxonomy.identity  # counts of different taxonomies are not added up
        return out

    def stats(self) -> dict[str, Any]:
        """``counts()`` with its ``estimates`` block.

        Model-judged and estimated true negative shares with intervals and estimated wrong drops
        (``fairstream.core.estimates``), derived from the counts; after merging several steps' counts,
        compute it with ``with_estimates(merged, step.calibration)``.
        """
        out = self.counts()
        out["estimates"] = estimates(out, self.calibration)
        return out

    def state_dict(self) -> dict[str, Any]:
        """The cap controller's tallies and generator and the counts, as plain JSON.

        With the taxonomy's identity (name and content hash): the tallies are per keyword of it.
        """
        return {
            "controller": self.controller.state_dict(),
            "stats": self._stats.to_dict(),
            "taxonomy": self.taxonomy.identity,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what ``state_dict()`` saved; the next document decided continues the stream.

        Raises:
            ConfigError: The state was saved with another taxonomy (a state from before the
                taxonomy was recorded is taken as it is).
        """
        saved = state.get("taxonomy")
        if saved is not None and saved != self.taxonomy.identity:
            raise ConfigError(
                f"the state was saved with taxonomy {saved} but this stream has taxonomy "
                f"{self.taxonomy.identity}; resume with the taxonomy the state was saved with "
                f"({option('taxonomy')}), or start a new stream without the state"
            )
        self.controller.load_state_dict(state["controller"])
        self._stats = StreamStats.from_dict(state["stats"])


def output_document(
    doc: Any, result: DocResult, *, text_field: str, annotation_field: str | None = None
) -> Any:
    """The emitted form of a kept document: its fields with the new text (and the annotation)."""
    if isinstance(doc, Mapping):
        out = dict(doc)
        out[text_field] = result.text
    elif annotation_field is not None:
        out = {text_field: result.text}
    else:
        return result.text
    if annotation_field is not None:
        out[annotation_field] = result.annotation
    return out


def remove_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """Remove sentence spans and the whitespace after each (before it, for a final sentence).

    Everything else, including the whitespace between kept sentences, is kept byte-for-byte.
    """
    out, pos = [], 0
    for start, end in sorted(spans):
        stop = end
        while stop < len(text) and text[stop].isspace():
            stop += 1
        if stop == len(text):  # last sentence: eat the whitespace before it instead
            while start > pos and text[start - 1].isspace():
                start -= 1
        out.append(text[pos:start])
        pos = stop
    out.append(text[pos:])
    return "".join(out)
