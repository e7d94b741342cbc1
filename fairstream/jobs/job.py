"""The offline job with an exact global cap: pass 1 annotate, pass 2 decide, pass 3 apply.

Folder layout (``output_dir``)::

    attributes/<shard>.fairstream.jsonl.gz   pass 1: one line per document (see annotate_pass)
    attributes/<shard>.fairstream.state.json pass 1: the shard's planner states and counts
    plan.json                                pass 2: units dropped, counts before/after
    data/<shard>                             pass 3: the filtered shard, in its input's format
    stats.json, summary.txt                  the run's counts and settings
    counts_before.json, counts_after.json,   the report's counts (as the stream scope writes them),
    examples.json, report/                   counted after pass 3 (not with ``report=False``)
    _manifest.json                           settings and inputs, checked on every rerun (run_folder)
    _parts/                                  checkpoints of shards in progress

``<shard>`` is the shard's path relative to the inputs' common folder, so two inputs never share
an output. ``--annotate-only`` stops after pass 1; ``--from-annotations DIR`` skips it and reads
``DIR/attributes`` (a second cap costs only passes 2 and 3), after checking that they were made
with the same tagging settings and inputs.

The folder is held through ``fairstream.jobs.run_folder.RunFolder`` for the whole run: one run at
a time, resumed only with the same settings and unchanged inputs. The local engine's workers die
with the job's process (``fairstream.jobs.engines``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fairstream.core.config import FilterConfig
from fairstream.errors import FairStreamError, OutputError, option
from fairstream.io import atomic_write, write_json
from fairstream.jobs.annotate_pass import annotate_shard
from fairstream.jobs.apply_pass import apply_shard, done_path
from fairstream.jobs.decide_pass import PLAN_FILE, decide, write_plan
from fairstream.jobs.engines import TaskFn, make_engine
from fairstream.jobs.report_pass import count_shard, counted_path
from fairstream.jobs.run_folder import RESUME_HINT, RunFolder, check_annotations, new_manifest
from fairstream.jobs.tasks import state_path
from fairstream.progress import Progress
from fairstream.summary import basis_text, estimate_text, not_read_lines, wrap_line
from fairstream.taxonomy import Taxonomy, portable_taxonomy_setting

logger = logging.getLogger(__name__)

DEFAULT_CHECKPOINT_EVERY = 1000


class GlobalCapJob:
    """Filter shards with the cap enforced over the whole corpus (see module docstring).

    Args:
        inputs: shard files or folders.
        output_dir: the job folder.
        config: the filter's settings (``cap``, ``caps``, ``seed``, ``granularity`` decide in pass 2;
            ``warmup`` and ``lookahead`` do not change the output).
        engine: ``"local"`` (a process pool) or ``"ray"``.
        workers: local processes (default: the cores); with Ray, the CPUs of a local Ray.
        checkpoint_every: documents between two checkpoints inside a shard.
        annotate_only: stop after pass 1.
        from_annotations: a folder written by an earlier pass 1 (skip pass 1).
        ray_address: the Ray cluster to use (default: a local Ray).
        progress: show one progress bar per pass.
        report: after pass 3, count the shards as the stream scope does (``stats.json`` gets the
            stream's ``counters``, ``attributes`` and ``run``) and write the counts, the dropped
            examples and the Markdown/HTML report; ``report_settings`` are its vocabulary options.
            ``False`` skips that extra read of the shards.
        overwrite, force_restart: as ``fairstream.filter_job.FilterJob``'s.
    """

    def __init__(
        self,
        inputs: Sequence[str | Path],
        output_dir: str | Path,
        config: FilterConfig | None = None,
        *,
        engine: str = "local",
        workers: int | None = None,
        checkpoint_every: int = DEFAULT_CHECKPOINT_EVERY,
        annotate_only: bool = False,
        from_annotations: str | Path | None = None,
        ray_address: str | None = None,
        progress: bool = True,
        report: bool = True,
        report_settings: dict[str, Any] | None = None,
        overwrite: bool = False,
        force_restart: bool = False,
    ) -> None:
        self.config = config or FilterConfig()
        if annotate_only and from_annotations is not None:
            raise FairStreamError(
                f"{option('annotate_only')} and {option('from_annotations')} exclude each other "
                "(the first runs only pass 1, the second skips it)"
            )
        if checkpoint_every < 1:
            raise FairStreamError(f"{option('checkpoint_every', checkpoint_every)}: must be >= 1")
        self.output_dir = Path(output_dir)
        self.folder = RunFolder(self.output_dir, overwrite=overwrite, force_restart=force_restart)
        self.shards, self.names, self.not_read = self.folder.find_inputs(inputs)
        self.annotations = Path(from_annotations) if from_annotations is not None else self.output_dir
        self.engine_name, self.workers, self.ray_address = engine, workers, ray_address
        self.every = checkpoint_every
        self.annotate_only = annotate_only
        self.from_annotations = from_annotations is not None
        self.progress = progress
        self.report = report
        self.report_settings = report_settings or {}

    def manifest(self) -> dict[str, Any]:
        """What a rerun must share with this run (``fairstream.jobs.run_folder.new_manifest``)."""
        job = {
            "checkpoint_every": self.every,
            "from_annotations": str(self.annotations.resolve()) if self.from_annotations else None,
        }
        return new_manifest(
            "global", self.config, self.shards, self.names, decide=not self.annotate_only, job=job
        )

    def _tasks(self, extra: dict[str, Any]) -> list[dict[str, Any]]:
        config = self.config.to_dict()
        # a worker process or Ray node may start in another folder: a taxonomy file by its absolute path
        config["taxonomy"] = portable_taxonomy_setting(self.config.taxonomy)
        return [
            {"shard": str(s), "name": n, "config": config, "every": self.every, **extra}
            for s, n in zip(self.shards, self.names, strict=True)
        ]

    def _pass(
        self, title: str, fn: TaskFn, tasks: list[dict[str, Any]], done: list[bool], engine: Any
    ) -> tuple[list[dict[str, Any]], dict[str, float]]:
        sizes = [s.stat().st_size for s in self.shards]
        bar = Progress(
            sum(sizes),
            done=sum(b for b, d in zip(sizes, done, strict=True) if d),
            desc=title,
            enabled=self.progress,
        )
        seen = {"docs": 0, "shards": sum(done)}
        n = len(tasks)

        def report(docs: int, n_bytes: int) -> None:
            seen["docs"] += docs
            bar.note(f"{seen['docs']:,} docs")
            bar.advance(n_bytes)

        t0 = time.perf_counter()
        try:
            results = engine.map(fn, tasks, report)
        except OutputError as exc:  # a full disk, say: name the pass, and that a rerun resumes
            raise OutputError(f"{exc} in {title}; {RESUME_HINT}") from exc
        bar.note(f"{seen['docs']:,} docs, {n} shards")
        bar.close()
        seconds = time.perf_counter() - t0
        todo_bytes = sum(b for b, d in zip(sizes, done, strict=True) if not d)
        timing = {"seconds": round(seconds, 3), "documents": seen["docs"], "bytes": todo_bytes}
        return results, timing

    def run(self) -> dict[str, Any]:
        """Run the passes not done yet; return the summary."""
        manifest = self.manifest()
        if self.from_annotations:
            check_annotations(self.annotations, manifest)
        with self.folder.claim(manifest):
            return self._run(manifest)

    def _run(self, manifest: dict[str, Any]) -> dict[str, Any]:
        out = self.output_dir
        engine = make_engine(self.engine_name, workers=self.workers, ray_address=self.ray_address)
        timings: dict[str, Any] = {}
        tasks = self._tasks({"work": str(self.annotations)})
        done = [state_path(self.annotations, n).is_file() for n in self.names]
        if not self.from_annotations:
            _, timings["annotate"] = self._pass("pass 1/3 annotate", annotate_shard, tasks, done, engine)
        missing = [n for n in self.names if not state_path(self.annotations, n).is_file()]
        if missing:
            raise FairStreamError(f"{self.annotations}: pass 1 did not annotate {missing[:3]}; run it again")
        states = [json.loads(state_path(self.annotations, n).read_text(encoding="utf-8")) for n in self.names]
        summary: dict[str, Any] = {
            "output_dir": str(out),
            "shards": len(self.shards),
            "engine": self.engine_name,
            "workers": getattr(engine, "workers", None),
            "documents": sum(s["counts"]["documents"] for s in states),
            "problems": [p for s in states for p in s.get("problems", [])],
            "not_read": self.not_read,
        }
        if self.annotate_only:
            summary["timings"] = timings
            summary["settings"] = manifest["settings"]
            return self._finish(summary)
        t0 = time.perf_counter()
        plan = write_plan(out, decide(states, self.config), manifest["settings"])
        timings["decide"] = {"seconds": round(time.perf_counter() - t0, 3)}
        tasks = self._tasks(
            {"work": str(out), "annotations": str(self.annotations), "plan": str(out / PLAN_FILE)}
        )
        done = [done_path(out, n).is_file() for n in self.names]
        results, timings["apply"] = self._pass("pass 3/3 apply", apply_shard, tasks, done, engine)
        totals: dict[str, int] = {}
        for r in results:
            for k, v in r["counts"].items():
                totals[k] = totals.get(k, 0) + int(v)
        summary.update(
            {
                "settings": manifest["settings"],
                "timings": timings,
                "counts": totals,
                "units_dropped": len(plan["dropped"]),
                "rounds": plan["rounds"],
                "attributes_over_cap_before": _over_cap(plan["before"], self.config),
                "attributes_over_cap_after": _over_cap(plan["kept"], self.config),
            }
        )
        stats: dict[str, Any] = {**summary, "before": plan["before"], "kept": plan["kept"]}
        if self.report:
            stats.update(self._report(engine, tasks, timings, summary))
            summary["estimates"] = stats["estimates"]  # counted by the report pass, printed in the summary
        write_json(out / "stats.json", stats)
        return self._finish(summary)

    def _report(
        self, engine: Any, tasks: list[dict[str, Any]], timings: dict[str, Any], summary: dict[str, Any]
    ) -> dict[str, Any]:
        """Count the filtered shards as the stream does; write counts, examples and the report.

        Returns the stream's stats (``counters``, ``skipped``, ``attributes``, ``run``) for ``stats.json``.
        """
        from fairstream.core.estimates import with_estimates
        from fairstream.core.stats import StreamStats
        from fairstream.models.calibration import calibration_in
        from fairstream.models.card import model_quality
        from fairstream.models.runtime import resolve_model_dir
        from fairstream.stats import CooccurrenceCounts, DroppedExamples
        from fairstream.stats.outputs import write_run_outputs

        out, c = self.output_dir, self.config
        done = [counted_path(out, n).is_file() for n in self.names]
        results, timings["report"] = self._pass("report: counting", count_shard, tasks, done, engine)
        stats, examples = StreamStats(), DroppedExamples()
        before, after = CooccurrenceCounts(), CooccurrenceCounts()
        for r in results:  # in shard order, as the stream scope counts them
            stats = stats + StreamStats.from_dict(r["stats"])
            before = before + CooccurrenceCounts.from_dict(r["before"])
            after = after + CooccurrenceCounts.from_dict(r["after"])
            examples.extend(DroppedExamples.from_dict(r["examples"]))
        cap_for = _cap_for(c)
        model = next((r["model"] for r in results if r.get("model")), c.model)
        run = {
            "cap_scope": "global",
            "cap": c.cap,
            # per attribute keyword (a class's cap resolved), as the summary and the report look them up
            "caps": {kw: cap for kw in sorted(stats.attributes) if (cap := cap_for(kw)) != c.cap},
            "granularity": c.granularity,
            "seed": c.seed,
            "model": model,
            "taxonomy": next((r["taxonomy"] for r in results if r.get("taxonomy")), c.taxonomy),
            "shards": [str(s) for s in self.shards],
            "model_quality": model_quality(resolve_model_dir(c.model)),
        }
        stream_stats = {**stats.to_dict(), "run": run, "problems": summary["problems"]}
        stream_stats = with_estimates(stream_stats, calibration_in(resolve_model_dir(c.model)))
        report = write_run_outputs(
            out,
            before,
            after,
            examples,
            stream_stats,
            report=True,
            report_settings=self.report_settings,
            taxonomy=Taxonomy.load(c.taxonomy),
        )
        summary["report"] = report
        return stream_stats

    def _finish(self, summary: dict[str, Any]) -> dict[str, Any]:
        with atomic_write(self.output_dir / "summary.txt") as f:
            f.write(format_job_summary(summary) + "\n")
        return summary


def _cap_for(config: FilterConfig) -> Any:
    from fairstream.core.cap import CapController

    return CapController(config.cap, caps=config.caps, taxonomy=Taxonomy.load(config.taxonomy)).cap_for


def _over_cap(counts: dict[str, dict[str, int]], config: FilterConfig) -> list[str]:
    cap_for = _cap_for(config)
    over = []
    for kw, c in sorted(counts.items()):
        total = sum(c.values())
        if total and c["negative"] > cap_for(kw) * total:
            over.append(kw)
    return over


def _claim_lines(summary: dict[str, Any]) -> list[str]:
    """What the global cap guaranteed (the model-judged shares) and what is estimated (the true ones)."""
    lines = wrap_line(
        "guaranteed (a bound on the model's decisions, not on the text): the model-judged negative share of "
        "every attribute over the whole output <= its cap (exact: the global plan checks every attribute)"
    )
    est = summary.get("estimates")
    if est is None:
        return lines + wrap_line(
            "estimated true negative shares: not counted (the report's pass counts sentences; --no-report skipped it)"
        )
    return (
        lines
        + wrap_line(f"estimated ({basis_text(est)}, 95% interval): {estimate_text(est)}")
        + wrap_line(f"calibration: {est.get('calibration', '?')}")
    )


def format_job_summary(summary: dict[str, Any]) -> str:
    """The lines printed at the end of a run (and saved as ``summary.txt``)."""
    lines = [
        f"fairstream filter (global cap): {summary['shards']} shards, {summary['documents']:,} documents"
    ]
    for name, t in summary.get("timings", {}).items():
        secs = t["seconds"]
        rate = ""
        if "bytes" in t and secs > 0:
            rate = f", {t['documents'] / secs:,.1f} docs/s, {t['bytes'] / 1e6 / secs:,.2f} MB/s"
        lines.append(f"  {name}: {secs:,.1f} s{rate}")
    if "counts" in summary:
        c = summary["counts"]
        lines.append(
            f"  kept {c.get('kept', 0):,} documents ({c.get('modified', 0):,} shortened), dropped "
            f"{c.get('dropped', 0):,}, skipped {c.get('skipped', 0):,} as bad records; "
            f"{c.get('sentences_dropped', 0):,} sentences dropped "
            f"({summary['units_dropped']:,} units, {summary['rounds']} rounds)"
        )
        before, after = summary["attributes_over_cap_before"], summary["attributes_over_cap_after"]
        lines.append(
            f"  attributes over their cap: {len(before)} before, {len(after)} after"
            + (f" ({', '.join(after)})" if after else "")
        )
        lines += _claim_lines(summary)
        lines.append(f"  outputs: {summary['output_dir']}/data, plan: {summary['output_dir']}/{PLAN_FILE}")
    else:
        lines.append(
            f"  annotations: {summary['output_dir']}/attributes (filter with {option('from_annotations')} "
            f"{summary['output_dir']})"
        )
    lines += not_read_lines(summary.get("not_read", []))
    for p in summary.get("report", []):
        lines.append(f"  report: {p}")
    for p in summary.get("problems", []):
        lines.append(f"  lost: {p}")
    return "\n".join(lines)
