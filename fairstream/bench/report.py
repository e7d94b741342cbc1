"""A run's table (terminal and Markdown), its sweep plot and its output folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairstream.bench.results import BenchResult
from fairstream.io import atomic_write, write_json


def _fmt(v: Any, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def format_table(result: BenchResult) -> str:
    """The terminal / Markdown table of a run."""
    m, e, k = result.machine, result.end_to_end, result.keyword_stage
    gpu = m.get("gpu")
    lines = [
        f"Machine: {m['cpu']}"
        + (f" ({', '.join(m['cpu_features'])})" if m.get("cpu_features") else "")
        + f", {m['cores']} cores; "
        + (f"GPU {gpu['name']} ({gpu['memory_gb']} GB, CUDA {gpu['cuda']})" if gpu else "no GPU")
        + f"; Python {m['python']}, onnxruntime {m['onnxruntime']}, torch {m.get('torch')}; {m['date']}.",
        f"Corpus: {result.corpus['docs']} documents, {result.corpus['mb']} MB ({', '.join(result.corpus['shards'][:3])}"
        + (" ..." if len(result.corpus["shards"]) > 3 else "")
        + ")"
        + (f", keywords of {result.corpus['taxonomy']}." if result.corpus.get("taxonomy") else "."),
        "",
        f"End to end (the filter step, {e['backend']} on {e['device']}, "
        f"{e.get('scan_workers', 0)} keyword-stage worker processes"
        + (f", {e['tokenize_workers']} tokenizer processes" if e.get("tokenize_workers") else "")
        + (f", look-ahead {e['lookahead']} documents" if e.get("lookahead") else "")
        + f"): {_fmt(e['docs_per_s'], 1)} docs/s, "
        f"{_fmt(e['mb_per_s'], 3)} MB/s, {_fmt(e['mentions_per_s'], 1)} judged mentions/s "
        f"({e['mentions_judged']} mentions, {e['wall_s']} s wall, {e['cpu_s']} s CPU); "
        f"time: model {e['split']['model_share']:.0%}, keyword stage {e['split']['keyword_share']:.0%}."
        + (
            f" The cascade sent {e['cascade_routed_share']:.1%} of the judged pairs on to its full model."
            if e.get("cascade_routed_share") is not None
            else ""
        ),
        f"Keyword stage alone: {_fmt(k['mb_per_s'], 3)} MB/s ({_fmt(k['mb_per_cpu_s'], 3)} MB per CPU s), "
        f"{k['candidate_sentences']} candidate sentences, {k['mentions']} mentions, {k['unique_pairs']} unique "
        f"pairs ({k['duplicate_share']:.1%} repeats).",
        "",
        "Model stage on the unique pairs (rates per wall second / per CPU second of this process):",
        "",
        "| backend | device | batch | pairs/s | pairs per CPU s | person agree vs int8 | mean abs dP "
        "| max dP vs first batch | GPU util / peak mem |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in result.rows:
        if r.skipped:
            lines.append(f"| {r.backend} | {r.device} | - | not run: {r.skipped} | | | | | |")
            continue
        a = r.agreement_vs_int8 or {}
        g = r.gpu or {}
        gpu_cell = (
            f"{g.get('util_mean_pct', '-')}% / {g.get('peak_allocated_mib', '-')} MiB"
            + (f" ({g['nvidia_smi']})" if "nvidia_smi" in g else "")
            if g
            else ""
        )
        lines.append(
            f"| {r.backend} | {r.device} | {r.batch_size} | {_fmt(r.pairs_per_s, 1)} | {_fmt(r.pairs_per_cpu_s, 1)} | "
            f"{a.get('person_agreement', 0):.2%} | {a.get('mean_abs_dp', 0):.4f} | "
            f"{_fmt(r.max_dp_vs_first_batch, 4)} | {gpu_cell} |"
        )
    best = best_rates(result)
    base = best.get("pytorch fp32 (transformers, sdpa)")
    if base:
        ratios = ", ".join(f"{name} {rate / base:.2f}x" for name, rate in best.items())
        lines += ["", f"Best per backend, ratio to PyTorch fp32 on CPU (pairs per CPU second): {ratios}."]
    return "\n".join(lines)


def best_rates(result: BenchResult) -> dict[str, float]:
    """Each measured backend's best pairs/s over its batch sizes (per CPU second on CPU, wall on GPU)."""
    best: dict[str, float] = {}
    for r in result.rows:
        rate = r.pairs_per_cpu_s if r.device == "cpu" else r.pairs_per_s
        if rate is not None:
            best[r.backend] = max(best.get(r.backend, 0.0), rate)
    return best


def plot_sweep(result: BenchResult) -> bytes:
    """PNG: pairs/s against batch size, one line per backend."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    series: dict[str, list[tuple[int, float]]] = {}
    for r in result.rows:
        if r.pairs_per_s is None or r.batch_size in ("-", "auto"):
            continue
        rate = r.pairs_per_cpu_s if r.device == "cpu" and r.pairs_per_cpu_s else r.pairs_per_s
        series.setdefault(f"{r.backend} ({r.device})", []).append((int(r.batch_size), rate))
    for name, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    sizes = sorted({p[0] for pts in series.values() for p in pts})
    if sizes:
        ax.set_xticks(sizes, [str(b) for b in sizes])
        ax.minorticks_off()
    ax.set_xlabel("batch size (pairs per forward pass)")
    ax.set_ylabel("pairs/s (CPU: per CPU second)")
    ax.set_title("fairstream bench: model stage throughput", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def write_outputs(result: BenchResult, folder: Path, *, plot: bool = True) -> list[Path]:
    """``bench.json``, ``bench.md`` and ``batch_sweep.png`` in ``folder`` (each written atomically).

    ``plot=False`` leaves the plot out (the partial results written while a run goes on).
    """
    paths = [folder / "bench.json", folder / "bench.md"]
    write_json(paths[0], result.to_dict())
    head = "# fairstream bench\n\n" + ("" if result.complete else "*Partial: the run has not finished.*\n\n")
    with atomic_write(paths[1]) as f:
        f.write(head + format_table(result) + "\n")
    if plot:
        paths.append(folder / "batch_sweep.png")
        with atomic_write(paths[2], "wb") as f:
            f.write(plot_sweep(result))
    return paths
