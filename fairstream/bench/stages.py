"""The documents of a run, the keyword stage alone, and the filter step end to end."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairstream.bench.results import rate
from fairstream.io import iter_records, list_shards, sample_corpus_path
from fairstream.models.encoding import MentionInput

if TYPE_CHECKING:
    from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)


def load_texts(
    shards: Sequence[str | Path], *, text_field: str = "text", limit: int | None = None
) -> tuple[list[str], list[str]]:
    """Texts of the first ``limit`` documents of ``shards`` (default: the shipped sample corpus)."""
    paths = list_shards(shards) if shards else [sample_corpus_path()]
    texts: list[str] = []
    for path in paths:
        for line, record in iter_records(path, on_error="skip"):
            text = record.get(text_field)
            if not isinstance(text, str):
                logger.warning("%s:%d: no string field %r; skipped", path, line, text_field)
                continue
            texts.append(text)
            if limit is not None and len(texts) >= limit:
                return texts, [str(p) for p in paths]
    return texts, [str(p) for p in paths]


def keyword_stage(
    texts: list[str], taxonomy: Taxonomy | None = None
) -> tuple[dict[str, Any], list[MentionInput]]:
    """Time the keyword stage over ``texts`` (with ``taxonomy``, default ``taxonomy-v1``); return its numbers and the unique pairs to judge."""
    from fairstream.candidates import CandidateExtractor

    extractor = CandidateExtractor(taxonomy)
    extractor.scan("warm up the splitter and tokenizer with a Muslim keyword in a sentence.")
    unique: dict[tuple[str, int, int, str], MentionInput] = {}
    occurrences = sentences = 0
    t0, c0 = time.perf_counter(), time.process_time()
    scans = [extractor.scan(t) for t in texts]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for text, scan in zip(texts, scans, strict=True):
        for cand in scan.candidates:
            sentences += 1
            sent = text[cand.start : cand.end]
            for m in cand.mentions:
                occurrences += 1
                key = (sent, m.start - cand.start, m.end - cand.start, m.keyword)
                if key not in unique:
                    attr = extractor.taxonomy[m.keyword]
                    unique[key] = MentionInput(sent, key[1], key[2], attr.keyword, attr.gloss)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    stats = {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "docs_per_s": rate(len(texts), wall),
        "mb_per_s": rate(mb, wall, 3),
        "mb_per_cpu_s": rate(mb, cpu, 3),
        "candidate_sentences": sentences,
        "mentions": occurrences,
        "unique_pairs": len(unique),
        "duplicate_share": round(1 - len(unique) / occurrences, 4) if occurrences else 0.0,
    }
    return stats, list(unique.values())


def _children_cpu() -> float:
    """CPU seconds of this process's ended child processes (the scan workers), where the OS says."""
    try:
        import resource
    except ImportError:  # Windows: the scan workers' time is not counted
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def end_to_end(
    texts: list[str],
    device: str,
    threads: int | None,
    batch_size: int | None,
    scan_workers: int | None = None,
    lookahead: int | None = None,
    model_name: str | Path | None = None,
    taxonomy: str | None = None,
) -> dict[str, Any]:
    """The filter over ``texts`` with the model of ``device`` (and ``taxonomy``): rates and the stage split.

    Runs ``FilterStep``, the core that every adapter (``FairStream``, ``fairstream filter``,
    ``datasets.map``, ...) feeds, over look-ahead windows as the adapters do (with scan workers, the
    next window is handed to them before the current one is judged); no torch on the CPU path.
    """
    from fairstream.core.config import FilterConfig
    from fairstream.core.step import FilterStep
    from fairstream.models.loader import load_model, resolve_device

    device = resolve_device(device)
    model = load_model(model_name, device=device, batch_size=batch_size, threads=threads)
    settings: dict[str, Any] = {"lookahead": lookahead} if lookahead is not None else {}
    step = FilterStep(
        FilterConfig(cap=0.01, device=device, scan_workers=scan_workers, taxonomy=taxonomy, **settings),
        model=model,
    )
    window = step.config.lookahead
    # warm up outside the timing: the scan workers first (a scan the run never asks for), so they
    # fork before CUDA starts in this process
    step.tagger.prefetch(["An Asian visitor met a Muslim neighbour.", "A Muslim family opened a bakery."])
    if hasattr(model, "start_workers"):  # the torch backend's tokenizer processes (on a GPU)
        model.start_workers()
    model.predict_logits(
        [MentionInput("A Muslim family opened a bakery.", 2, 8, "muslim", "who believes in Islam")]
    )
    if getattr(model, "cascade", None) is not None:  # count the run's pairs only
        model.cascade.seen = model.cascade.routed = 0
    t0, c0, k0 = time.perf_counter(), time.process_time(), _children_cpu()
    n_out = 0
    windows = ((lo, texts[lo : lo + window]) for lo in range(0, len(texts), window))
    for lo, chunk in step.read_ahead(windows, lambda w: w[1]):
        n_out += len(step.process(chunk, start=lo, annotate=False))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # both wait for their helper processes (scan workers, tokenizer processes): their CPU time counts
    step.tagger.close()
    if hasattr(model, "close"):
        model.close()
    cpu += _children_cpu() - k0
    stats = step.stats()
    seconds = stats.get("seconds", {})
    mentions = stats.get("counters", {}).get("mentions_predicted", 0)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    keyword_s, model_s = float(seconds.get("scan", 0.0)), float(seconds.get("model", 0.0))
    return {
        "device": device,
        "model": model.name,
        "backend": type(model).__name__,
        "scan_workers": step.tagger.scan_workers,
        "tokenize_workers": getattr(model, "tokenize_workers", 0),
        "lookahead": window,
        "docs": len(texts),
        "docs_out": n_out,
        "mb": round(mb, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "docs_per_s": rate(len(texts), wall),
        "mb_per_s": rate(mb, wall, 3),
        "mb_per_cpu_s": rate(mb, cpu, 3),
        "mentions_judged": mentions,
        "mentions_per_s": rate(mentions, wall),
        "docs_per_cpu_s": rate(len(texts), cpu),
        "mentions_per_cpu_s": rate(mentions, cpu),
        "split": {
            "keyword_stage_s": round(keyword_s, 3),
            "model_s": round(model_s, 3),
            "rest_s": round(max(0.0, wall - keyword_s - model_s), 3),
            "model_share": round(model_s / wall, 3) if wall else None,
            "keyword_share": round(keyword_s / wall, 3) if wall else None,
        },
        # a cascade (the default): the share of judged pairs its fast model sent on to the full one
        "cascade_routed_share": _routed_share(model),
    }


def _routed_share(model: Any) -> float | None:
    cascade = getattr(model, "cascade", None)
    if cascade is None or not cascade.seen:
        return None
    return round(cascade.routed / cascade.seen, 4)
