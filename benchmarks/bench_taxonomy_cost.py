"""The cost of a larger taxonomy: taxonomy-v2 against taxonomy-v1, side by side in one process.

    NLTK_DATA=../shared/data/nltk_data python benchmarks/bench_taxonomy_cost.py [--limit 1500] [--rounds 3]

Issue 47's cost goal: end-to-end MB/s of the filter with each taxonomy on the same documents, with
the mentions per MB each finds; the cost **per judged mention** must not grow (total time may grow
with the mentions). One model is loaded and shared; each run is a fresh ``FilterStep`` (its own
prediction cache) over the same documents; the taxonomies alternate (v1 v2 v2 v1 ...) so drift of
a shared machine hits both alike. CPU seconds are this process's (all threads). With the default
cascade, the share of judged mentions it sends on to its full (6-layer) model is counted per run: a
mention that goes on costs both models, so a taxonomy whose mentions the fast model is less sure of
costs more per mention.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from _common import DEFAULT_CORPUS, load_corpus, machine, machine_line, write_results

from fairstream.core import FilterStep
from fairstream.core.windows import IndexedDocument
from fairstream.models.runtime import JointModel

TAXONOMIES = ("taxonomy-v1", "taxonomy-v2")


def one_run(docs: list[dict[str, Any]], taxonomy: str, model: Any) -> dict[str, Any]:
    from fairstream.taxonomy import Taxonomy

    step = FilterStep(cap=0.01, model=model, taxonomy=Taxonomy.load(taxonomy))
    seen0, routed0 = getattr(model, "seen", 0), getattr(model, "routed", 0)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    kept = sum(r.kept for _, r in step.filter_documents(IndexedDocument(i, d) for i, d in enumerate(docs)))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    c = step.stats()["counters"]
    mentions = sum(a["mentions"] for a in step.stats()["attributes"].values())
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "kept": kept,
        "mentions": mentions,
        "judged": c["mentions_predicted"],
        # the cascade's own count of the mentions it read and sent on to its full model (0 for one graph)
        "cascade_seen": getattr(model, "seen", 0) - seen0,
        "cascade_routed": getattr(model, "routed", 0) - routed0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=1500, help="first N documents of the shared corpus")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    docs = load_corpus(args.corpus, args.limit)
    mb = sum(len(d["text"].encode("utf-8")) for d in docs) / 1e6
    model = JointModel()
    one_run(docs[:20], "taxonomy-v1", model)  # warm-up: sessions, tokenizer, Punkt
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t in TAXONOMIES}
    for i in range(args.rounds):
        for t in TAXONOMIES if i % 2 == 0 else TAXONOMIES[::-1]:
            runs[t].append(one_run(docs, t, model))
            print(f"round {i + 1} {t}: {runs[t][-1]['wall_s']:.1f} s wall, {runs[t][-1]['cpu_s']:.1f} s CPU")
    out: dict[str, Any] = {
        "machine": machine(),
        "documents": len(docs),
        "mb": round(mb, 3),
        "rounds": args.rounds,
    }
    for t, rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        cpu = statistics.median(r["cpu_s"] for r in rs)
        judged = rs[-1]["judged"]
        out[t] = {
            "wall_s_median": round(wall, 2),
            "cpu_s_median": round(cpu, 2),
            "mb_per_s": round(mb / wall, 3),
            "mentions_per_mb": round(rs[-1]["mentions"] / mb, 1),
            "judged_per_mb": round(judged / mb, 1),
            "cpu_ms_per_judged_mention": round(1000 * cpu / judged, 2) if judged else None,
            "routed_to_full_model": (
                round(rs[-1]["cascade_routed"] / rs[-1]["cascade_seen"], 4)
                if rs[-1]["cascade_seen"]
                else None
            ),
        }
    v1, v2 = out["taxonomy-v1"], out["taxonomy-v2"]
    out["v2_over_v1"] = {
        "wall": round(v2["wall_s_median"] / v1["wall_s_median"], 2),
        "judged_mentions": round(v2["judged_per_mb"] / v1["judged_per_mb"], 2),
        "cpu_per_judged_mention": round(v2["cpu_ms_per_judged_mention"] / v1["cpu_ms_per_judged_mention"], 2),
    }
    lines = [
        "# taxonomy-v2 against taxonomy-v1: cost (benchmarks/bench_taxonomy_cost.py)",
        "",
        f"{len(docs)} documents of ../shared/data/corpus ({mb:.2f} MB), default model, cap 1%, medians of "
        f"{args.rounds} alternating runs each. {machine_line(out['machine'])}.",
        "",
        "| taxonomy | MB/s | mentions / MB | judged mentions / MB | CPU ms per judged mention | "
        "share sent on to the full model | wall s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t in TAXONOMIES:
        r = out[t]
        lines.append(
            f"| {t} | {r['mb_per_s']} | {r['mentions_per_mb']} | {r['judged_per_mb']} | "
            f"{r['cpu_ms_per_judged_mention']} | {r['routed_to_full_model']} | {r['wall_s_median']} |"
        )
    lines += [
        "",
        f"v2 / v1: wall x{out['v2_over_v1']['wall']}, judged mentions x{out['v2_over_v1']['judged_mentions']}, "
        f"CPU per judged mention x{out['v2_over_v1']['cpu_per_judged_mention']}.",
    ]
    print("\n".join(lines))
    print(write_results("taxonomy-v2-cost", out, "\n".join(lines)))


if __name__ == "__main__":
    main()
