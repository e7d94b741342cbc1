"""The metric tables every card section shares: a run's dev metrics as one row, its header, and the mean row.

The row follows ``export.train.evaluate``'s dict (and ``export.sweep``'s ``dev`` results); the same header
serves the held-out, cross-validated and shipped-model tables, so ``fairstream.models.card`` finds its
columns in each.
"""

from __future__ import annotations

from typing import Any


def fmt_score(x: float | None) -> str:
    """A score as in the card's tables; "n/a" where there is none (None, NaN, or not recorded)."""
    return "n/a" if x is None or x != x else f"{x:.3f}"


def fmt_metrics(m: dict) -> str:
    rf = m.get("regard_f1", {})
    rp, rr = m.get("regard_precision", {}), m.get("regard_recall", {})
    return (
        f"| {m['n']} | {m['wsd_kappa']:.3f} | {m['wsd_f1']:.3f} | {m['regard_n']} | {m['regard_micro_f1']:.3f} | "
        f"{m['regard_macro_f1']:.3f} | {fmt_score(rf.get('negative'))} / {fmt_score(rf.get('neutral'))} / "
        f"{fmt_score(rf.get('positive'))} | {fmt_score(m.get('negative_precision', rp.get('negative')))} | "
        f"{fmt_score(m.get('negative_recall', rr.get('negative')))} |"
    )


# negative precision / recall: the filter drops the sentences decided negative, so negative precision is
# the share of its regard-driven drops that were right ("n/a": not recorded by older sweep results)
HEADER = (
    "| pairs | WSD kappa | WSD F1 (yes) | regard n | regard micro-F1 | regard macro-F1 | F1 neg / neu / pos "
    "| negative precision | negative recall |\n|---|---|---|---|---|---|---|---|---|"
)


# the sweep tables name each run in a first column
SWEEP_HEADER = "| run " + HEADER.split("\n")[0] + "\n|---" + HEADER.split("\n")[1]


def _mean(values: list[float | None]) -> float | None:
    """Mean, or None when a run did not record the value (or it is undefined for that run)."""
    return None if any(v is None for v in values) else sum(values) / len(values)  # type: ignore[arg-type]


def mean_row(devs: list[dict], label: str = "mean") -> str:
    """A table row of the mean of several runs' metrics (same items: n and regard n of the first)."""
    mean: dict[str, Any] = {
        k: sum(d[k] for d in devs) / len(devs)
        for k in ("wsd_kappa", "wsd_f1", "regard_micro_f1", "regard_macro_f1")
    }
    mean["regard_f1"] = {k: _mean([d["regard_f1"][k] for d in devs]) for k in devs[0]["regard_f1"]}
    for k, per_class in (("negative_precision", "regard_precision"), ("negative_recall", "regard_recall")):
        mean[k] = _mean([d.get(k, d.get(per_class, {}).get("negative")) for d in devs])
    mean["n"], mean["regard_n"] = devs[0]["n"], devs[0]["regard_n"]
    return f"| **{label}** " + fmt_metrics(mean)
