"""What every filter run writes besides its data: the counts, the dropped examples and the report.

Shared by the stream-scope job (``fairstream.filter_job``) and the global-scope job
(``fairstream.jobs``), so both write the same files the same way: ``examples.json``,
``counts_before.json``, ``counts_after.json`` and, unless turned off, ``report/``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairstream.io import write_json
from fairstream.stats.counts import CooccurrenceCounts
from fairstream.stats.examples import DroppedExamples
from fairstream.stats.hooks import BeforeAfterHook

if TYPE_CHECKING:
    from fairstream.taxonomy import Taxonomy


def run_hooks(
    before: CooccurrenceCounts, after: CooccurrenceCounts, examples: DroppedExamples
) -> list[Callable[[str, dict[str, Any]], None]]:
    """The hooks a run feeds every annotated document: counts before/after and dropped examples."""
    return [BeforeAfterHook(before, after), examples]


def write_run_outputs(
    out: Path,
    before: CooccurrenceCounts,
    after: CooccurrenceCounts,
    examples: DroppedExamples,
    stats: Mapping[str, Any],
    *,
    report: bool = True,
    report_settings: Mapping[str, Any] | None = None,
    taxonomy: Taxonomy | None = None,
) -> list[str]:
    """Save the counts and examples under ``out``; write ``out/report`` when ``report``.

    ``stats`` is the run's ``stats.json`` (stream counters, per-attribute counts, ``"run"``);
    ``taxonomy`` the run's (its forms stay out of the report's vocabularies).

    Returns:
        The report's HTML and Markdown paths (empty without a report).
    """
    write_json(out / "examples.json", examples.to_dict())
    before.save(out / "counts_before.json")
    after.save(out / "counts_after.json")
    if not report:
        return []
    from fairstream.stats.report import write_report

    paths = write_report(
        before,
        after,
        out / "report",
        stream_stats=stats,
        examples=examples.to_dict(),
        taxonomy=taxonomy,
        **dict(report_settings or {}),
    )
    return [str(paths.html), str(paths.markdown)]
