"""Offline filtering of shards with FairStream: outputs, stats, co-occurrence counts and a report.

Resumable at shard granularity: after each shard the output shard, the cap controller's state,
the stream stats and the co-occurrence counts are written atomically and the shard is recorded in
``_state.json``. A rerun skips finished shards and restarts an interrupted one from the state
saved before it, so the result has no duplicates or gaps and equals an uninterrupted run; it also
deletes the temporary files a killed run left behind. The folder is held through
``fairstream.jobs.run_folder.RunFolder``: one run at a time, and a rerun resumes only with the
same settings and unchanged inputs (its manifest says which).

Each output shard is written under ``data/`` at its input's path relative to the inputs' common
folder, in its input's format (``a/000.jsonl.gz`` -> ``data/a/000.jsonl.gz``, ``x.parquet`` ->
``data/x.parquet``), so no two inputs share an output.

Each shard is streamed through ``fairstream.jobs.reader.ShardReader`` a look-ahead window at a
time and its output written as it is read, to a temporary file beside the output that replaces it
only when the shard is complete: memory does not grow with the shard, and an interrupted shard
leaves no partial output.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig
from fairstream.core.estimates import with_estimates
from fairstream.core.stats import StreamStats, count_unread_records
from fairstream.core.step import FilterStep, output_document
from fairstream.errors import OutputError
from fairstream.io import atomic_write, write_documents, write_json
from fairstream.jobs.reader import PARQUET_BATCH_ROWS, ShardReader
from fairstream.jobs.run_folder import RESUME_HINT, RunFolder, new_manifest
from fairstream.models.calibration import model_calibration
from fairstream.models.card import model_quality
from fairstream.models.loader import load_model_for
from fairstream.progress import Progress
from fairstream.stats.examples import DroppedExamples
from fairstream.summary import format_summary
from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)

STATE_FILE = "_state.json"


def _input_schema(reader: ShardReader) -> Any:
    """A Parquet shard's columns, which its output keeps (``None``: JSON lines, or unreadable)."""
    if not reader.is_parquet:
        return None
    try:
        return reader.parquet_schema()
    except Exception:  # a corrupt file: the reader reports it, the output's columns are inferred
        return None


class FilterJob:
    """Filter a list of shards into ``output_dir`` (see module docstring).

    Args:
        inputs: shard files or folders.
        output_dir: the output folder.
        config: the filter's settings (checked when the config was made, before any shard is read
            or the model loaded); ``settings`` override fields of it.
        annotate: add each document's annotation to the output under ``fairstream``.
        report: write the Markdown/HTML report; ``report_settings`` are its vocabulary options.
        progress: show a progress bar.
        overwrite: empty ``output_dir`` first, whatever it holds (else a non-empty folder that is
            not a fairstream run is refused).
        force_restart: discard the run ``output_dir`` holds and start over (else a rerun resumes it,
            and is refused when its settings or inputs differ).

    Inputs are listed by ``fairstream.io.find_shards``: the output folder and other runs' folders
    under the inputs are never read, and what is not read is named in the summary (``not_read``).
    """

    def __init__(
        self,
        inputs: Sequence[str | Path],
        output_dir: Path,
        config: FilterConfig | None = None,
        *,
        annotate: bool = False,
        report: bool = True,
        report_settings: dict[str, Any] | None = None,
        progress: bool = True,
        overwrite: bool = False,
        force_restart: bool = False,
        **settings: Any,
    ) -> None:
        config = config or FilterConfig()
        self.config = config.replace(**settings) if settings else config
        self.output_dir = Path(output_dir)
        self.folder = RunFolder(self.output_dir, overwrite=overwrite, force_restart=force_restart)
        self.shards, self.names, self.not_read = self.folder.find_inputs(inputs)
        c = self.config
        self.cap, self.warmup, self.granularity, self.seed = c.cap, c.warmup, c.granularity, c.seed
        self.taxonomy = Taxonomy.load(c.taxonomy)
        self.annotate = annotate
        self.report, self.progress = report, progress
        self.report_settings = report_settings or {}

    @functools.cached_property
    def model(self) -> Any:
        """The model, loaded on first use (a refused resume loads none)."""
        return load_model_for(self.config)

    def _step(self) -> FilterStep:
        """A step for one shard; the model and taxonomy are loaded once and shared."""
        return FilterStep(self.config, model=self.model, taxonomy=self.taxonomy)

    def _filtered(
        self,
        step: FilterStep,
        reader: ShardReader,
        hooks: list[Callable[[str, dict[str, Any]], None]],
        on_window: Callable[[int], None],
    ) -> Iterator[Any]:
        """The kept documents of one shard, read and filtered a look-ahead window at a time.

        Only one window of the shard is in memory at a time (two with scan workers, which scan the
        next one while this one is judged): the reader is consumed as the output is written.
        """
        annotation_field = "fairstream" if self.annotate else None
        results = step.filter_documents(
            reader.records(),
            locate=lambda rec: f"{reader.path}:{rec.line}",
            hooks=hooks,
            annotate=self.annotate,
            on_window=lambda window: on_window(window[-1].position),
        )
        for rec, result in results:
            if result.kept:
                yield output_document(
                    rec.data, result, text_field=self.config.text_field, annotation_field=annotation_field
                )

    def run(self) -> dict[str, Any]:
        """Filter every shard not finished yet; return the summary."""
        out = self.output_dir
        manifest = new_manifest("stream", self.config, self.shards, self.names)
        with self.folder.claim(manifest):
            return self._run(out)

    def _run(self, out: Path) -> dict[str, Any]:
        from fairstream.stats import CooccurrenceCounts
        from fairstream.stats.outputs import run_hooks, write_run_outputs

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
            reader = ShardReader(shard, on_error=self.config.on_error)
            shard_before, shard_after = CooccurrenceCounts(), CooccurrenceCounts()
            step = self._step()
            if controller_state is not None:
                step.controller.load_state_dict(controller_state)

            def on_window(position: int, start: float = shard_start) -> None:
                progress.advance(max(0.0, start + position - progress.n))

            kept = self._filtered(step, reader, run_hooks(shard_before, shard_after, examples), on_window)
            # written as it is read, to a temporary file that replaces the output only when complete
            try:
                write_documents(
                    out / "data" / name,
                    kept,
                    schema=_input_schema(reader),
                    batch_rows=PARQUET_BATCH_ROWS,
                )
            except OutputError as exc:  # a full disk, say: name the shard, and that a rerun resumes
                raise OutputError(f"{exc} while filtering {shard}; {RESUME_HINT}") from exc
            progress.advance(shard_start + sizes[name] - progress.n)  # skipped documents, rounding
            skipped = reader.skipped
            shard_stats = StreamStats.from_dict(step.counts())
            count_unread_records(shard_stats, skipped)
            problems += [str(s) for s in skipped if getattr(s, "reason", "") == "unreadable-shard"]
            stats = stats + shard_stats
            before, after = before + shard_before, after + shard_after
            controller_state = step.controller.state_dict()
            done.append(name)
            write_json(
                state_path,
                {
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
        stats_dict = {**stats.to_dict(), "run": run_info, "problems": problems, "not_read": self.not_read}
        stats_dict = with_estimates(stats_dict, model_calibration(self.model))
        write_json(out / "stats.json", stats_dict)
        summary: dict[str, Any] = {
            "output_dir": str(out),
            "stats": stats_dict,
            "run": run_info,
            "shards": len(self.shards),
            "problems": problems,
            "not_read": self.not_read,
        }
        report = write_run_outputs(
            out,
            before,
            after,
            examples,
            stats_dict,
            report=self.report,
            report_settings=self.report_settings,
            taxonomy=self.taxonomy,
        )
        if report:
            summary["report"] = report
        with atomic_write(out / "summary.txt") as f:
            f.write(format_summary(summary) + "\n")
        return summary
