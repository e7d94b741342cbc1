"""The per-attribute view of a filter run shared by the CLI summary and the report.

One source of truth: both read ``stats.json`` (the stream's counts plus the run's settings under
``"run"``), so the table printed after ``fairstream filter`` and the report show the same numbers.
An attribute is *above its cap* when its kept negative share exceeds the cap; with the warm-up
rule (``fairstream/core/cap.py``) that happens only while fewer than ``warmup`` of its sentences
are kept, and every such attribute is shown with that reason, never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fairstream.core.stats import UNREADABLE_SHARD

TOP_ROWS = 10  # attributes within the cap shown in the CLI table (every attribute above it is shown)


@dataclass(frozen=True)
class AttributeRow:
    """One attribute's counts in a run; only attributes with person sentences get a row."""

    keyword: str
    person_sentences: int
    negative_before: int
    kept: int
    negative_after: int
    dropped: int
    cap: float | None  # None when the run's settings are unknown
    warmup: int | None

    @property
    def share_before(self) -> float:
        """Negative share of the attribute's person sentences before filtering."""
        return self.negative_before / self.person_sentences if self.person_sentences else 0.0

    @property
    def share_after(self) -> float:
        """Negative share of the kept person sentences."""
        return self.negative_after / self.kept if self.kept else 0.0

    @property
    def over_cap(self) -> bool:
        """The kept negative share exceeds the cap."""
        return self.cap is not None and self.negative_after > self.cap * self.kept + 1e-9

    @property
    def reason(self) -> str:
        """Why the attribute is above its cap ("" when it is not)."""
        if not self.over_cap:
            return ""
        if self.warmup is None:  # no warm-up (global scope, whose plan should leave none above)
            return f"{self.negative_after} negative of {self.kept} kept"
        if self.kept < self.warmup:
            return f"under warm-up ({self.kept} kept < {self.warmup})"
        return f"{self.kept} kept >= warm-up {self.warmup}: parallel workers each have their own warm-up"


def cap_for(run: Mapping[str, Any] | None, keyword: str) -> float | None:
    """The cap that applied to ``keyword`` in a run (None when the settings are unknown)."""
    if not run or "cap" not in run:
        return None
    return float(run.get("caps", {}).get(keyword, run["cap"]))


def attribute_rows(stats: Mapping[str, Any], run: Mapping[str, Any] | None = None) -> list[AttributeRow]:
    """Rows of every attribute with at least one person sentence, in keyword order."""
    run = run if run is not None else stats.get("run")
    rows = []
    for kw, a in sorted(stats.get("attributes", {}).items()):
        if not a.get("person_sentences"):
            continue
        rows.append(
            AttributeRow(
                keyword=kw,
                person_sentences=a["person_sentences"],
                negative_before=a["before"]["negative"],
                kept=sum(a["after"].values()),
                negative_after=a["after"]["negative"],
                dropped=a["dropped"],
                cap=cap_for(run, kw),
                warmup=run.get("warmup") if run else None,
            )
        )
    return rows


def headline_numbers(stats: Mapping[str, Any]) -> dict[str, int]:
    """Documents and judged sentences in and out, from the stream's counters."""
    c = stats.get("counters", {})
    sentences = c.get("sentences_candidate", 0)
    return {
        "docs_in": c.get("docs_in", 0),
        "docs_out": c.get("docs_out", 0),
        "docs_dropped": c.get("docs_dropped", 0),
        "docs_modified": c.get("docs_modified", 0),
        "docs_with_keyword": c.get("docs_with_keyword", 0),
        "docs_skipped": sum(n for r, n in stats.get("skipped", {}).items() if r != UNREADABLE_SHARD),
        "sentences_judged": sentences,
        "sentences_dropped": c.get("sentences_dropped", 0),
        "sentences_kept": sentences - c.get("sentences_dropped", 0),
    }


def pct(part: int, whole: int) -> str:
    """``part / whole`` as a percentage with one decimal ("-" for an empty whole)."""
    return f"{100 * part / whole:.1f}%" if whole else "-"


def share_text(value: float) -> str:
    """A cap as a percentage without trailing zeros (0.01 -> "1%", 0.025 -> "2.5%")."""
    return f"{100 * value:.3g}%"


#: What ``--cap-scope global`` guarantees, in the words of the summary and the report.
GLOBAL_GUARANTEE = (
    "global scope: every attribute ends at or under its cap, small ones included, because pass 2 "
    "decides over the whole corpus (no warm-up)"
)


def cap_text(run: Mapping[str, Any]) -> str:
    """The cap setting in words."""
    warmup = run.get("warmup")
    text = f"negative regard <= {share_text(run['cap'])} of each attribute's person sentences"
    if run.get("caps"):
        text += " (" + ", ".join(f"{k} {share_text(v)}" for k, v in sorted(run["caps"].items())) + ")"
    if run.get("cap_scope") == "global":
        return text + "; " + GLOBAL_GUARANTEE
    if warmup == 0:
        return text + "; strict (warm-up 0: holds from the first sentence)"
    return text + f"; warm-up {warmup} (an attribute with fewer kept sentences may end above it)"


def model_text(run: Mapping[str, Any]) -> str:
    """The model's name and measured quality in words: a range over unseen sets where the card has one."""
    q = run.get("model_quality")
    if not q:
        return f"{run.get('model', '?')} (no measured quality: its folder has no model card)"
    if q.get("sets"):
        names = {
            "regard_macro_f1": "regard macro-F1",
            "negative_f1": "negative-regard F1",
            "wsd_kappa": "WSD kappa",
        }
        ranges = [f"{names[m]} {r[0]:.2f}-{r[1]:.2f}" for m, r in q["range"].items() if r]
        sizes = [s["pairs"] for s in q["sets"]]
        return (
            f"{run.get('model', '?')}, on {len(sizes)} unseen labelled sets of {min(sizes):,}-{max(sizes):,} "
            f"pairs: {', '.join(ranges)} (the lowest regard macro-F1 on {q['sets'][0]['set']}); "
            f"every set in its card, {q.get('card', 'MODEL_CARD.md')}"
        )
    parts = [f"regard macro-F1 {q['regard_macro_f1']:.2f}" if q.get("regard_macro_f1") is not None else ""]
    if q.get("negative_f1") is not None:
        parts.append(f"negative-regard F1 {q['negative_f1']:.2f}")
    if q.get("wsd_kappa") is not None:
        parts.append(f"WSD kappa {q['wsd_kappa']:.2f}")
    # a card without held-out dev runs quotes real text no model trained on (model_quality's fallback)
    basis = "unseen real text" if "unseen" in str(q.get("source", "")).lower() else "held-out"
    return (
        f"{run.get('model', '?')} (its card gives one {basis} figure, no range over unseen sets: "
        + ", ".join(p for p in parts if p)
        + ")"
    )


def _table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(headers), *[line(r) for r in rows]]


def not_read_lines(not_read: list[str], shown: int = 10) -> list[str]:
    """Summary lines naming what under the inputs was not read (every such path is in ``stats.json``)."""
    if not not_read:
        return []
    lines = [f"  not read under the inputs ({len(not_read)}):"]
    lines += [f"    {item}" for item in not_read[:shown]]
    if len(not_read) > shown:
        lines.append(f'    ... {len(not_read) - shown} more (stats.json, "not_read")')
    return lines


def format_summary(summary: Mapping[str, Any], top: int = TOP_ROWS) -> str:
    """The table printed after ``fairstream filter`` (and saved as ``summary.txt``)."""
    stats = summary["stats"]
    run = summary.get("run") or stats.get("run") or {}
    h = headline_numbers(stats)
    n_shards = summary.get("shards", 0)
    lines = [
        f"fairstream filter: {n_shards} shard{'s' if n_shards != 1 else ''} -> {summary['output_dir']}",
        f"  documents: {h['docs_in']} in = {h['docs_out']} out ({h['docs_modified']} shortened) + "
        f"{h['docs_dropped']} dropped + {h['docs_skipped']} skipped as bad records; "
        f"{h['docs_with_keyword']} with keywords",
        f"  sentences: {h['sentences_judged']} with person keywords judged, {h['sentences_dropped']} dropped "
        f"({pct(h['sentences_dropped'], h['sentences_judged'])})",
    ]
    if run:
        lines.append(f"  cap: {cap_text(run)}")
        lines.append(f"  model: {model_text(run)}")
    rows = attribute_rows(stats, run)
    over = [r for r in rows if r.over_cap]
    within = sorted(
        (r for r in rows if not r.over_cap), key=lambda r: (-r.dropped, -r.negative_before, r.keyword)
    )
    shown = sorted(over, key=lambda r: (-r.share_after, r.keyword)) + within[:top]
    if shown:
        table = [
            [
                r.keyword,
                str(r.person_sentences),
                pct(r.negative_before, r.person_sentences),
                str(r.kept),
                pct(r.negative_after, r.kept),
                str(r.dropped),
                f"ABOVE CAP: {r.reason}" if r.over_cap else "",
            ]
            for r in shown
        ]
        headers = [
            "attribute",
            "person sentences",
            "negative before",
            "kept",
            "negative after",
            "dropped",
            "",
        ]
        lines.append("")
        lines.append(
            "  per attribute: sentences naming people with it, their negative-regard share, and how many"
            " of them were kept / dropped"
        )
        lines += ["  " + s for s in _table(headers, table, right={1, 2, 3, 4, 5})]
        rest = len(within) - min(top, len(within))
        if rest:
            lines.append(
                f"  ... {rest} more attributes, all within the cap (every one: stats.json and the report)"
            )
    if over:
        names = ", ".join(r.keyword for r in over)
        lines.append(
            f"  {len(over)} attribute{'s' if len(over) != 1 else ''} above the cap ({names}): fewer kept "
            "sentences than the warm-up; --warmup 0 makes the cap strict (drops more)"
            if all(r.warmup is not None and r.kept < r.warmup for r in over)
            else f"  {len(over)} attribute(s) above the cap: {names} (see the reason column)"
        )
    elif rows and run:
        lines.append("  every attribute is within its cap")
    lines += not_read_lines(summary.get("not_read", []))
    if "seconds" in summary:
        lines.append(f"  time: {summary['seconds']} s")
    for p in summary.get("report", []):
        lines.append(f"  report: {p}")
    return "\n".join(lines)
