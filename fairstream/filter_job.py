"""Offline filtering of shards with FairStream: outputs, stats, co-occurrence counts and a report.

Resumable at shard granularity: after each shard the output shard, the cap controller's state,
the stream stats and the co-occurrence counts are written atomically and the shard is recorded in
``_state.json``. A rerun skips finished shards and restarts an interrupted one from the state
saved before it, so the result has no duplicates or gaps and equals an uninterrupted run; it also
deletes the temporary files a killed run left behind.

Each output shard is written under ``data/`` at its input's path relative to the inputs' common
folder, in its input's format (``a/000.jsonl.gz`` -> ``data/a/000.jsonl.gz``, ``x.parquet`` ->
``data/x.parquet``), so no two inputs share an output.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError, OutputError, option
from fairstream.io import (
    OnError,
    atomic_write,
    check_on_error,
    iter_records,
    list_shards,
    relative_names,
    remove_temp_files,
    write_documents,
    write_json,
)
from fairstream.models.card import model_quality
from fairstream.models.runtime import JointModel
from fairstream.progress import Progress
from fairstream.stats.examples import DroppedExamples
from fairstream.stream.cap import CapController
from fairstream.stream.dataset import GRANULARITIES, FairStream, Granularity
from fairstream.stream.stats import StreamStats
from fairstream.summary import format_summary
from fairstream.taxonomy import Taxonomy
from fairstream.text import DEFAULT_MAX_DOC_CHARS

logger = logging.getLogger(__name__)

STATE_FILE = "_state.json"


def _tagged_progress(
    progress: Progress, start: float, per_doc: float, window: int, n_docs: int
) -> Callable[[str, dict[str, Any]], None]:
    """A hook that moves ``progress`` to the end of the look-ahead window a document was tagged in.

    The model's work is done window by window before the window's first document comes out, so
    counting documents as they come out would make the first ETA wildly long.
    """

    def hook(_text: str, annotation: dict[str, Any]) -> None:
        tagged = min(n_docs, (annotation["doc_index"] // window + 1) * window)
        progress.advance(max(0.0, start + tagged * per_doc - progress.n))

    return hook


def _file_and_line(shard: Path, lines: list[int]) -> Callable[[int], str]:
    """Name document ``i`` of a shard by its file and 1-based line (row for Parquet)."""
    return lambda i: f"{shard}:{lines[i]}"


class FilterJob:
    """Filter a list of shards into ``output_dir`` (see module docstring)."""

    def __init__(
        self,
        inputs: Sequence[str | Path],
        output_dir: Path,
        *,
        cap: float = 0.01,
        warmup: int = 100,
        granularity: Granularity = "sentence",
        seed: int = 0,
        model: str | Path | None = None,
        batch_size: int = 8,
        taxonomy: str | Path | None = None,
        text_field: str = "text",
        on_error: OnError = "raise",
        max_doc_chars: int | None = DEFAULT_MAX_DOC_CHARS,
        annotate: bool = False,
        report: bool = True,
        report_settings: dict[str, Any] | None = None,
        progress: bool = True,
    ) -> None:
        # every setting is checked before a shard is read or the model is loaded
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity={granularity!r} is not one of {GRANULARITIES}")
        check_on_error(on_error)
        CapController(cap, warmup=warmup)  # raises ValueError naming a bad cap or warmup
        if max_doc_chars is not None and max_doc_chars < 1:
            raise ValueError(f"max_doc_chars={max_doc_chars!r} must be >= 1 (None: no limit)")
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} must be >= 1")
        self.shards = list_shards(inputs)
        self.names = [str(p) for p in relative_names(self.shards)]
        self.output_dir = Path(output_dir)
        if self.output_dir.exists() and not self.output_dir.is_dir():
            raise OutputError(
                f"{self.output_dir}: exists and is not a folder; choose another output folder "
                f"({option('output_dir')})"
            )
        self.max_doc_chars = max_doc_chars
        self.cap, self.warmup, self.granularity, self.seed = cap, warmup, granularity, seed
        self.model = JointModel(model, batch_size=batch_size)
        self.taxonomy = Taxonomy.load(taxonomy)
        self.text_field, self.on_error, self.annotate = text_field, on_error, annotate
        self.report, self.progress = report, progress
        self.report_settings = report_settings or {}

    def _stream(
        self, docs: list[dict[str, Any]], hooks: list[Any], locate: Callable[[int], str] | None = None
    ) -> FairStream:
        return FairStream(
            docs,
            text_field=self.text_field,
            max_doc_chars=self.max_doc_chars,
            locate=locate,
            cap=self.cap,
            warmup=self.warmup,
            granularity=self.granularity,
            seed=self.seed,
            model=self.model,
            taxonomy=self.taxonomy,
            annotate=self.annotate,
            on_error=self.on_error,
            hooks=hooks,
        )

    def run(self) -> dict[str, Any]:
        """Filter every shard not finished yet; return the summary."""
        from fairstream.stats import BeforeAfterHook, CooccurrenceCounts

        out = self.output_dir
        try:
            (out / "data").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{out}: cannot create the output folder ({exc.strerror or exc})") from exc
        for tmp in remove_temp_files(out):
            logger.info("removed %s, left by an interrupted run", tmp)
        state_path = out / STATE_FILE
        state: dict[str, Any] = json.loads(state_path.read_text()) if state_path.is_file() else {}
        settings = {
            "cap": self.cap,
            "warmup": self.warmup,
            "granularity": self.granularity,
            "seed": self.seed,
            "model": self.model.name,
            "taxonomy": self.taxonomy.name,
            "shards": [str(s) for s in self.shards],
        }
        if state and state.get("settings") != settings:
            raise FairStreamError(
                f"{state_path}: this folder holds a run with other settings {state.get('settings')}; "
                f"use a new output folder ({option('output_dir')}) or delete it to start over"
            )
        done: list[str] = state.get("done", [])
        problems: list[str] = state.get("problems", [])
        stats = StreamStats.from_dict(state.get("stats", {}))
        before = (
            CooccurrenceCounts.from_dict(state["counts_before"])
            if "counts_before" in state
            else CooccurrenceCounts()
        )
        after = (
            CooccurrenceCounts.from_dict(state["counts_after"])
            if "counts_after" in state
            else CooccurrenceCounts()
        )
        controller_state = state.get("controller")
        examples = DroppedExamples.from_dict(state.get("examples", {}))
        if done:
            logger.info("resuming: %d of %d shards already done", len(done), len(self.shards))
        sizes = {name: shard.stat().st_size for shard, name in zip(self.shards, self.names, strict=True)}
        progress = Progress(
            sum(sizes.values()),
            done=sum(sizes[n] for n in done if n in sizes),
            desc="fairstream filter",
            enabled=self.progress,
        )
        for shard, name in zip(self.shards, self.names, strict=True):
            if name in done:
                continue
            progress.note(name)
            shard_start = progress.n
            skipped: list[str] = []
            lines: list[int] = []
            docs: list[dict[str, Any]] = []
            for line, doc in iter_records(shard, on_error=self.on_error, skipped=skipped):
                lines.append(line)
                docs.append(doc)
            shard_before, shard_after = CooccurrenceCounts(), CooccurrenceCounts()
            per_doc = sizes[name] / max(1, len(docs))
            stream = self._stream(
                docs,
                [
                    BeforeAfterHook(shard_before, shard_after),
                    examples,
                ],
                locate=_file_and_line(shard, lines),
            )
            stream.add_hook(_tagged_progress(progress, shard_start, per_doc, stream.lookahead, len(docs)))
            if controller_state is not None:
                stream.controller.load_state_dict(controller_state)
            write_documents(out / "data" / name, stream)
            progress.advance(shard_start + sizes[name] - progress.n)  # skipped documents, rounding
            shard_stats = StreamStats.from_dict(stream.stats())
            shard_stats.skipped.update(getattr(s, "reason", "bad-record") for s in skipped)
            problems += [str(s) for s in skipped if getattr(s, "reason", "") == "unreadable-shard"]
            stats = stats + shard_stats
            before, after = before + shard_before, after + shard_after
            controller_state = stream.controller.state_dict()
            done.append(name)
            write_json(
                state_path,
                {
                    "settings": settings,
                    "done": done,
                    "stats": stats.to_dict(),
                    "controller": controller_state,
                    "counts_before": before.to_dict(),
                    "counts_after": after.to_dict(),
                    "examples": examples.to_dict(),
                    "problems": problems,
                },
            )
        progress.close()
        # the run's settings travel with its counts: the summary and the report read both from here
        run_info = {**settings, "model_quality": model_quality(self.model.model_dir)}
        # problems: what was lost beyond single records (unreadable rests of shards), named
        stats_dict = {**stats.to_dict(), "run": run_info, "problems": problems}
        write_json(out / "stats.json", stats_dict)
        write_json(out / "examples.json", examples.to_dict())
        before.save(out / "counts_before.json")
        after.save(out / "counts_after.json")
        summary: dict[str, Any] = {
            "output_dir": str(out),
            "stats": stats_dict,
            "run": run_info,
            "shards": len(self.shards),
            "problems": problems,
        }
        if self.report:
            from fairstream.stats import write_report

            paths = write_report(
                before,
                after,
                out / "report",
                stream_stats=stats_dict,
                examples=examples.to_dict(),
                **self.report_settings,
            )
            summary["report"] = [str(paths.html), str(paths.markdown)]
        with atomic_write(out / "summary.txt") as f:
            f.write(format_summary(summary) + "\n")
        return summary
