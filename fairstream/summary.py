"""The per-attribute view of a filter run shared by the CLI summary and the report.

One source of truth: both read ``stats.json`` (the stream's counts plus the run's settings under
``"run"``), so the table printed after ``fairstream filter`` and the report show the same numbers.
An attribute is *above its cap* when its kept negative share exceeds the cap; with the warm-up
rule (``fairstream/core/cap.py``) that happens only while fewer than ``warmup`` of its sentences
are kept, and every such attribute is shown with that reason, never hidden.

Two kinds of negative share, always labelled apart: the **model-judged** share (the sentences the
model called negative; the one the cap bounds, so a guarantee about the model's decisions) and the
**estimated true** share with its 95% interval (``stats.json``'s ``estimates`` block, from the
model's calibrated P(negative): ``fairstream.core.estimates``). A ``stats.json`` written before the
estimates existed shows model-judged shares only, with a note.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fairstream.core.stats import UNREADABLE_SHARD

TOP_ROWS = 10  # attributes within the cap shown in the CLI table (every attribute above it is shown)
WIDTH = 100  # the summary's prose lines are wrapped at this many columns
#: what the summary and the report say when ``stats.json`` has no ``estimates`` block
NO_ESTIMATES = (
    "not available: this stats.json has no estimates (written before they existed; rerun the filter "
    "to get them), so every negative share shown is model-judged"
)


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
    text = f"model-judged negative regard <= {share_text(run['cap'])} of each attribute's person sentences"
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


def estimates_of(stats: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``estimates`` block of a ``stats.json`` (None: written before the estimates existed)."""
    est = stats.get("estimates")
    return est if isinstance(est, Mapping) and "pooled" in est else None


def basis_text(est: Mapping[str, Any]) -> str:
    """What the estimates rest on: "calibrated P(negative)" or "uncalibrated model probabilities"."""
    return "calibrated P(negative)" if est.get("calibrated") else "uncalibrated model probabilities"


def share_pct(share: float | None) -> str:
    """A share as a percentage with one decimal ("-" for None: no sentences)."""
    return "-" if share is None else f"{100 * share:.1f}%"


def estimate_cell(part: Mapping[str, Any] | None, unit: str = "") -> str:
    """One ``before``/``after`` estimate with its 95% interval: "3.1% [1.2-5.0]" ("-": no sentences)."""
    if not part or part.get("estimated_negative_share") is None or not part.get("interval"):
        return "-"
    return f"{100 * part['estimated_negative_share']:.1f}% [{interval_text(part, unit)}]"


def interval_text(part: Mapping[str, Any], unit: str = "%") -> str:
    """The 95% interval of an estimated share in percent: "1.2-5.0%"."""
    lo, hi = part["interval"]
    return f"{100 * lo:.1f}-{100 * hi:.1f}{unit}"


def not_negative_cell(dropped: Mapping[str, Any] | None) -> str:
    """Estimated dropped sentences that were not negative, with the interval: "~6.7 [3.5-9.8]"."""
    if not dropped or not dropped.get("sentences"):
        return "-"
    lo, hi = dropped["interval"]
    return f"~{dropped['estimated_not_negative']:.1f} [{lo:.1f}-{hi:.1f}]"


def guarantee_text(run: Mapping[str, Any], rows: Sequence[AttributeRow], le: str = "<=") -> str:
    """What the cap guaranteed in this run: a bound on the model-judged share, with its exceptions."""
    cap = run["cap"]
    if cap >= 1 and not run.get("caps"):
        return "nothing (cap 100%: the run tags and counts, it drops no sentence for the cap)"
    bound = "its cap" if run.get("caps") else share_text(cap)
    text = f"the model-judged negative share of every attribute {le} {bound}"
    if run.get("cap_scope") == "global":
        text += " (global scope: small attributes included)"
    elif run.get("warmup") == 0:
        text += " after every decision (strict: warm-up 0)"
    else:
        text += f" once it has {run.get('warmup')} kept sentences (the warm-up)"
    over = sorted(r.keyword for r in rows if r.over_cap)
    if over:
        under = all(r.warmup is not None and r.kept < r.warmup for r in rows if r.over_cap)
        text += (
            f"; {len(over)} attribute{'s' if len(over) != 1 else ''} "
            + ("with fewer kept sentences " if under else "")
            + f"{'are' if len(over) != 1 else 'is'} above it ({', '.join(over)})"
        )
    return text


def estimate_text(est: Mapping[str, Any]) -> str:
    """The pooled estimates in words: true negative share after filtering and wrongly dropped sentences."""
    pooled = est["pooled"]
    after, dropped = pooled["after"], pooled["dropped"]
    text = (
        f"the true negative share after filtering is {estimate_cell(after, '%')} pooled over attributes "
        f"(model-judged: {share_pct(after.get('model_negative_share'))})"
        if after.get("sentences")
        else "no person sentence was kept"
    )
    n = dropped.get("sentences", 0)
    if not n:
        return text + "; no person sentence was dropped"
    return (
        f"{text}; {not_negative_cell(dropped)} of {n:,} dropped person sentence{'s' if n != 1 else ''} "
        f"(counted once per attribute) {'were' if n != 1 else 'was'} not negative"
    )


def wrap_line(text: str) -> list[str]:
    """One summary line, wrapped at ``WIDTH`` columns (continuations indented)."""
    wrapper = textwrap.TextWrapper(WIDTH, "  ", "    ", break_long_words=False, break_on_hyphens=False)
    return wrapper.wrap(text)


def claim_lines(stats: Mapping[str, Any], run: Mapping[str, Any], rows: Sequence[AttributeRow]) -> list[str]:
    """The summary's lines on what the cap guaranteed and what the true shares are estimated to be."""
    lines = []
    if run and "cap" in run:
        lines += wrap_line(
            f"guaranteed (a bound on the model's decisions, not on the text): {guarantee_text(run, rows)}"
        )
    est = estimates_of(stats)
    if est is None:
        return lines + wrap_line(f"estimated true negative shares: {NO_ESTIMATES}")
    lines += wrap_line(f"estimated ({basis_text(est)}, 95% interval): {estimate_text(est)}")
    return lines + wrap_line(f"calibration: {est.get('calibration', '?')}")


def _table(
    headers: list[str],
    rows: list[list[str]],
    right: set[int],
    groups: Sequence[tuple[str, int, int]] = (),
) -> list[str]:
    """A plain-text table; ``groups`` are labels drawn over column spans ``(label, first, last)``."""
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    for label, first, last in groups:  # widen a span's columns until its label fits
        span = sum(widths[first : last + 1]) + 2 * (last - first)
        for k in range(max(0, len(label) + 2 - span)):
            widths[first + k % (last - first + 1)] += 1

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [line(headers), *[line(r) for r in rows]]
    if groups:
        starts = [sum(widths[:i]) + 2 * i for i in range(len(widths))]
        top = [" "] * (starts[-1] + widths[-1])
        for label, first, last in groups:
            span = starts[last] + widths[last] - starts[first]
            top[starts[first] : starts[first] + span] = f" {label} ".center(span, "-")
        out.insert(0, "".join(top).rstrip())
    return out


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
        *wrap_line(
            f"documents: {h['docs_in']} in = {h['docs_out']} out ({h['docs_modified']} shortened) + "
            f"{h['docs_dropped']} dropped + {h['docs_skipped']} skipped as bad records; "
            f"{h['docs_with_keyword']} with keywords"
        ),
        f"  sentences: {h['sentences_judged']} with person keywords judged, {h['sentences_dropped']} dropped "
        f"({pct(h['sentences_dropped'], h['sentences_judged'])})",
    ]
    if run:
        lines += wrap_line(f"cap: {cap_text(run)}")
        lines += wrap_line(f"model: {model_text(run)}")
    rows = attribute_rows(stats, run)
    lines += claim_lines(stats, run, rows)
    est = estimates_of(stats)
    per = est.get("attributes", {}) if est is not None else {}
    over = [r for r in rows if r.over_cap]
    within = sorted(
        (r for r in rows if not r.over_cap), key=lambda r: (-r.dropped, -r.negative_before, r.keyword)
    )
    shown = sorted(over, key=lambda r: (-r.share_after, r.keyword)) + within[:top]
    if shown:
        headers = ["attribute", "sentences", "kept", "dropped", "neg. before", "neg. after"]
        groups = [("model-judged", 4, 5)]
        if est is not None:
            headers += ["true neg. after", "dropped not neg."]
            groups.append(("estimated, 95% interval", 6, 7))
        table = []
        for r in shown:
            e = per.get(r.keyword, {})
            cells = [r.keyword + ("*" if r.over_cap else ""), str(r.person_sentences), str(r.kept), str(r.dropped),
                     pct(r.negative_before, r.person_sentences), pct(r.negative_after, r.kept)]  # fmt: skip
            if est is not None:
                cells += [estimate_cell(e.get("after")), not_negative_cell(e.get("dropped"))]
            table.append(cells)
        lines.append("")
        lines += wrap_line(
            "per attribute, of its person sentences: model-judged = the share the model called negative "
            "(what the cap bounds); "
            + (
                "estimated = the true negative share of the kept ones, and how many dropped ones were "
                "not negative"
                if est is not None
                else "no estimated true shares (none in this stats.json)"
            )
        )
        lines += ["  " + s for s in _table(headers, table, right={1, 2, 3, 4, 5, 6, 7}, groups=groups)]
        rest = len(within) - min(top, len(within))
        if rest:
            lines.append(
                f"  ... {rest} more attributes, all within the cap (every one: stats.json and the report)"
            )
    if over:
        names = ", ".join(r.keyword for r in over)
        lines += wrap_line(
            f"* {len(over)} attribute{'s' if len(over) != 1 else ''} above the cap ({names}): fewer kept "
            "sentences than the warm-up; --warmup 0 makes the cap strict (drops more)"
            if all(r.warmup is not None and r.kept < r.warmup for r in over)
            else f"* {len(over)} attribute{'s' if len(over) != 1 else ''} above the cap: "
            + "; ".join(f"{r.keyword}: {r.reason}" for r in over)
        )
    elif rows and run:
        lines.append("  every attribute is within its cap")
    lines += not_read_lines(summary.get("not_read", []))
    if "seconds" in summary:
        lines.append(f"  time: {summary['seconds']} s")
    for p in summary.get("report", []):
        lines.append(f"  report: {p}")
    return "\n".join(lines)
