"""Offline filtering of shards with FairStream: outputs, stats, co-occurrence counts and a report.

Resumable at shard granularity: after each shard the output shard, the cap controller's state,
the stream stats and the co-occurrence counts are written atomically and the shard is recorded in
``_state.json``. A rerun skips finished shards and restarts an interrupted one from the state
saved before it, so the result has no duplicates or gaps and equals an uninterrupted run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fairstream.errors import FairStreamError
from fairstream.io import OnError, atomic_write, list_shards, read_documents, write_json, write_jsonl
from fairstream.models.card import model_quality
from fairstream.models.runtime import JointModel
from fairstream.stats.examples import DroppedExamples
from fairstream.stream.dataset import FairStream, Granularity
from fairstream.stream.stats import StreamStats
from fairstream.summary import format_summary
from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)

STATE_FILE = "_state.json"


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
        taxonomy: str | Path | None = None,
        text_field: str = "text",
        on_error: OnError = "raise",
        annotate: bool = False,
        report: bool = True,
        report_settings: dict[str, Any] | None = None,
        progress: bool = True,
    ) -> None:
        self.shards = list_shards(inputs)
        names = [s.name for s in self.shards]
        if len(set(names)) != len(names):
            raise FairStreamError(f"input shards must have distinct file names, got duplicates in {names}")
        self.output_dir = Path(output_dir)
        self.cap, self.warmup, self.granularity, self.seed = cap, warmup, granularity, seed
        self.model = JointModel(model)
        self.taxonomy = Taxonomy.load(taxonomy)
        self.text_field, self.on_error, self.annotate = text_field, on_error, annotate
        self.report, self.progress = report, progress
        self.report_settings = report_settings or {}

    def _stream(self, docs: list[dict[str, Any]], hooks: list[Any]) -> FairStream:
        return FairStream(
            docs,
            text_field=self.text_field,
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
        from tqdm import tqdm

        from fairstream.stats import BeforeAfterHook, CooccurrenceCounts

        out = self.output_dir
        (out / "data").mkdir(parents=True, exist_ok=True)
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
                "use a new --output folder or delete it to start over"
            )
        done: list[str] = state.get("done", [])
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
        for shard in self.shards:
            if shard.name in done:
                continue
            skipped: list[str] = []
            docs = list(read_documents(shard, on_error=self.on_error, skipped=skipped))
            shard_before, shard_after = CooccurrenceCounts(), CooccurrenceCounts()
            stream = self._stream(docs, [BeforeAfterHook(shard_before, shard_after), examples])
            if controller_state is not None:
                stream.controller.load_state_dict(controller_state)
            rows: Iterator[Any] = iter(stream)
            if self.progress:
                rows = tqdm(rows, total=len(docs), desc=shard.name, unit="doc", leave=False)
            name = shard.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".parquet")
            write_jsonl(out / "data" / f"{name}.jsonl.gz", rows)
            shard_stats = StreamStats.from_dict(stream.stats())
            shard_stats.skipped.update({"bad-record": len(skipped)} if skipped else {})
            stats = stats + shard_stats
            before, after = before + shard_before, after + shard_after
            controller_state = stream.controller.state_dict()
            done.append(shard.name)
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
                },
            )
        # the run's settings travel with its counts: the summary and the report read both from here
        run_info = {**settings, "model_quality": model_quality(self.model.model_dir)}
        stats_dict = {**stats.to_dict(), "run": run_info}
        write_json(out / "stats.json", stats_dict)
        write_json(out / "examples.json", examples.to_dict())
        before.save(out / "counts_before.json")
        after.save(out / "counts_after.json")
        summary: dict[str, Any] = {
            "output_dir": str(out),
            "stats": stats_dict,
            "run": run_info,
            "shards": len(self.shards),
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
