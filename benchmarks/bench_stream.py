"""Throughput of the whole FairStream wrapper on ../shared/data/corpus with the shipped model.

Reports docs/s and MB/s, the time split by stage (candidate extraction, model, the rest:
decisions, text surgery, stats), and the overhead versus iterating the raw source, all measured
in the same run.

``--ab BASE NEW`` compares two checkouts end to end (each side in its own process, alternating;
CPU and wall seconds; the two sides' output documents are checked to be identical). ``--new-model``
runs the NEW side with another model (a faster one: then the outputs differ by design).
``--threads-sweep`` runs DataLoader workers x ONNX Runtime threads configurations in turn on the
same documents: 1 worker x 2 intra-op threads, 1 worker x 1 thread, 1 worker with fairstream's
automatic choice (one thread per pass, as many passes at once as cores), 2 workers x 1 thread, 2
workers x ONNX Runtime's default threads, and 2 workers with the automatic choice.

    python benchmarks/bench_stream.py [--corpus DIR] [--limit N] [--threads T] [--quick]
    python benchmarks/bench_stream.py --ab /tmp/base . [--rounds 3] [--threads 1] [--limit N] [--new-model M]
    python benchmarks/bench_stream.py --threads-sweep [--rounds 3] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))
os.environ.setdefault("NLTK_DATA", str(HERE.parent.parent.parent / "shared/data/nltk_data"))

from benchmarks._common import DEFAULT_CORPUS, load_corpus, machine, machine_line, write_results  # noqa: E402


def stage(
    docs: list[dict], threads: int | None, workers: int, cache: str, model_dir: str | None, prefetch: int = 0
) -> dict:
    """One side / configuration: the FairStream of the checkout on sys.path, timed in this process."""
    import hashlib
    import inspect
    import json
    import resource

    from fairstream.models.runtime import JointModel
    from fairstream.stream.dataset import FairStream
    from fairstream.stream.tagger import Tagger

    # "default": the Tagger's own default of that checkout (the base had the cache off)
    cache_size = (
        inspect.signature(Tagger.__init__).parameters["cache_size"].default
        if cache == "default"
        else int(cache)
    )
    model = JointModel(model_dir, intra_op_threads=threads)
    stream = FairStream(docs, model=model, cap=0.01, cache_size=cache_size)
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0, w0 = time.process_time(), time.perf_counter()
    if workers == 0:
        out = list(stream)
    else:
        from torch.utils.data import DataLoader

        # prefetch -1: each worker may run a whole look-ahead window ahead of the in-order delivery
        ahead = {"prefetch_factor": stream.lookahead if prefetch == -1 else prefetch} if prefetch else {}
        out = list(DataLoader(stream, batch_size=None, num_workers=workers, **ahead))
    wall = time.perf_counter() - w0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - t0 + (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    digest = hashlib.sha256()
    doc_digests = {}  # id -> short hash of the output text: which documents two sides disagree on
    for d in sorted(out, key=lambda d: str(d.get("id"))):
        digest.update(json.dumps([d.get("id"), d["text"]]).encode())
        doc_digests[str(d.get("id"))] = hashlib.sha256(d["text"].encode()).hexdigest()[:12]
    counters = stream.stats()["counters"] if workers == 0 else {}
    return {
        "wall_s": wall, "cpu_s": cpu, "docs_out": len(out), "output_sha256": digest.hexdigest(),
        "doc_digests": doc_digests, "sentences_dropped": counters.get("sentences_dropped"),
        "cache_size": cache_size, "cache_hits": counters.get("cache_hits"),
        "mentions_predicted": counters.get("mentions_predicted"), "threads": threads, "workers": workers,
        "seconds": stream.stats()["seconds"] if workers == 0 else None,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--limit", type=int, default=None, help="first N documents")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="ONNX Runtime intra-op threads (default: fairstream's choice; 0: ORT's)",
    )
    ap.add_argument(
        "--model",
        default=None,
        help="model folder or shipped model name (default: the checkout's default; `fairstream eval-models -h` lists them)",
    )
    ap.add_argument(
        "--new-model", default=None, help="with --ab: the NEW side runs this model (the BASE side --model)"
    )
    ap.add_argument("--quick", action="store_true", help="first 600 documents")
    ap.add_argument(
        "--ab", nargs=2, type=Path, metavar=("BASE", "NEW"), help="compare two checkouts end to end"
    )
    ap.add_argument(
        "--threads-sweep", action="store_true", help="DataLoader workers x threads configurations"
    )
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds for --ab / --threads-sweep")
    ap.add_argument(
        "--configs",
        nargs="+",
        choices=list(SWEEP_KEYS),
        metavar="WORKERSxTHREADS",
        help="with --threads-sweep: only these configurations, the first as the reference (of "
        f"{', '.join(SWEEP_KEYS)}; e.g. --configs 1x1 2xauto for process scaling alone)",
    )
    ap.add_argument("--stage", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--checkout", type=Path, help="checkout to run --threads-sweep on (default: this one)")
    ap.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--cache", default="default", help=argparse.SUPPRESS)
    ap.add_argument("--prefetch", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    docs = load_corpus(args.corpus, limit=600 if args.quick else args.limit)
    mb = sum(len(d["text"].encode("utf-8")) for d in docs) / 1e6
    if args.stage:
        import json

        sys.path.insert(0, str(args.checkout.resolve()))
        print(json.dumps(stage(docs, args.threads, args.workers, args.cache, args.model, args.prefetch)))
        return
    if args.ab:
        run_ab(args, docs, mb)
        return
    if args.threads_sweep:
        run_threads_sweep(args, docs, mb)
        return
    from fairstream.models.runtime import JointModel
    from fairstream.stream.dataset import FairStream

    model = JointModel(args.model, intra_op_threads=args.threads)
    model.predict([])  # nothing to load yet; the first real batch loads the session (timed below)

    t0 = time.perf_counter()
    n_raw = sum(1 for d in docs if d["text"] is not None)
    raw_s = time.perf_counter() - t0

    stream = FairStream(docs, model=model, cap=0.01)
    t0 = time.perf_counter()
    n_out = sum(1 for _ in stream)
    total_s = time.perf_counter() - t0

    # the same stream with the co-occurrence sidecar attached (before and after counts)
    from fairstream.stats import BeforeAfterHook, CooccurrenceCounts

    sidecar = BeforeAfterHook(CooccurrenceCounts(), CooccurrenceCounts())
    hook_s = [0.0]

    def hook(text: str, annotation: dict) -> None:
        t = time.perf_counter()
        sidecar(text, annotation)
        hook_s[0] += time.perf_counter() - t

    with_sidecar = FairStream(docs, model=model, cap=0.01, hooks=[hook])
    t0 = time.perf_counter()
    sum(1 for _ in with_sidecar)
    sidecar_total_s = time.perf_counter() - t0
    st = stream.stats()
    scan_s, model_s = st["seconds"]["scan"], st["seconds"]["model"]
    rest_s = total_s - scan_s - model_s
    c = st["counters"]
    m = machine()
    result = {
        "docs": len(docs), "mb": round(mb, 2), "docs_out": n_out, "seconds": round(total_s, 2),
        "docs_per_s": round(len(docs) / total_s, 1), "mb_per_s": round(mb / total_s, 3),
        "stages_s": {"candidates": round(scan_s, 2), "model": round(model_s, 2), "decisions_and_rest": round(rest_s, 2)},
        "mentions_predicted": c["mentions_predicted"], "sentences_judged": c["sentences_candidate"],
        "raw_iteration_s": raw_s, "overhead_vs_raw": round(total_s / max(raw_s, 1e-9)),
        "with_sidecar_s": round(sidecar_total_s, 2), "sidecar_hook_s": round(hook_s[0], 3),
        "sidecar_overhead": round(hook_s[0] / (sidecar_total_s - hook_s[0]), 4),
        "model": model.name, "providers": model.providers, "threads": args.threads, "machine": m,
    }  # fmt: skip
    md = "\n".join([
        "# FairStream throughput",
        "",
        f"Corpus: {args.corpus} ({len(docs)} documents, {mb:.1f} MB). Model {model.name} on {model.providers}. "
        f"Machine: {machine_line(m)}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| documents/s | {len(docs) / total_s:.1f} |",
        f"| MB/s | {mb / total_s:.3f} |",
        f"| mentions judged by the model | {c['mentions_predicted']} ({c['mentions_predicted'] / total_s:.0f}/s) |",
        f"| time: candidate extraction (prefilter, split, tokens) | {scan_s:.1f} s ({scan_s / total_s:.0%}) |",
        f"| time: model (WSD + regard, one pass) | {model_s:.1f} s ({model_s / total_s:.0%}) |",
        f"| time: decisions, text surgery, stats | {rest_s:.1f} s ({rest_s / total_s:.0%}) |",
        f"| raw iteration of the same documents | {raw_s * 1e3:.2f} ms ({n_raw} docs) |",
        f"| co-occurrence sidecar (before + after counts), time inside its hook | {hook_s[0]:.2f} s = "
        f"{hook_s[0] / (sidecar_total_s - hook_s[0]):.1%} of the stream's own time |",
        f"| the same stream with the sidecar attached, end to end | {sidecar_total_s:.1f} s (without: {total_s:.1f} s) |",
        "",
        "The overhead versus the raw source is the whole pipeline: iterating an in-memory list costs "
        "microseconds, so the ratio is large by construction; what matters is documents/s per core "
        "against the trainer's consumption rate.",
    ])  # fmt: skip
    print(md)
    print(f"\nwrote {write_results('stream' + ('-quick' if args.quick else ''), result, md)}")


def _common_args(args: argparse.Namespace, model: str | None = None) -> list[str]:
    """The stage arguments shared by every run; ``model`` (default ``--model``) picks the model."""
    model = model or args.model
    out = ["--corpus", str(args.corpus)]
    if args.quick:
        out.append("--quick")
    elif args.limit is not None:
        out += ["--limit", str(args.limit)]
    if model:
        out += ["--model", model]
    return out


def run_ab(args: argparse.Namespace, docs: list[dict], mb: float) -> None:
    from benchmarks._ab import ab, checkout_commit

    base, new = args.ab
    thread_args = [] if args.threads is None else ["--threads", str(args.threads)]
    extra = _common_args(args) + thread_args
    new_extra = _common_args(args, model=args.new_model) + thread_args if args.new_model else None
    r = ab(HERE, base, new, extra, args.rounds, new_args=new_extra)
    b, n = r["base_last"], r["new_last"]
    same = b["output_sha256"] == n["output_sha256"]
    bd, nd = b.pop("doc_digests"), n.pop("doc_digests")
    differing = sum(bd.get(k) != nd.get(k) for k in set(bd) | set(nd))
    m = machine()
    result = {
        "docs": len(docs), "mb": round(mb, 2), "threads": args.threads, **r, "identical_output": same,
        "documents_differing": differing,
        "base_commit": checkout_commit(base), "new_commit": checkout_commit(new), "machine": m,
    }  # fmt: skip
    threads = "each checkout's default" if args.threads is None else str(args.threads)
    rows = []
    for side, last in (("base", b), ("new", n)):
        cpu, wall = r["cpu_s"][f"{side}_median"], r["wall_s"][f"{side}_median"]
        split = last["seconds"] or {}
        rows.append(
            f"| {side} {result[side + '_commit']} | {cpu:.1f} | {mb / cpu:.2f} | {wall:.1f} | {mb / wall:.2f} | "
            f"{split.get('scan', 0):.1f} / {split.get('model', 0):.1f} | {last['cache_size']} ({last['cache_hits']} hits) |"
        )
    md = "\n".join([
        "# FairStream end to end A/B",
        "",
        f"Corpus: {args.corpus} ({len(docs)} documents, {mb:.1f} MB), "
        + (
            f"base: {args.model or 'its default model'}, new: model {args.new_model}"
            if args.new_model
            else "shipped model"
        )
        + ", cap 1%, one process, "
        f"intra-op threads: {threads}; {args.rounds} alternating rounds, each side in its own process. "
        f"Machine: {machine_line(m)}.",
        "",
        "| checkout | CPU s | MB/s of CPU | wall s | MB/s wall | last run: candidates / model s | cache |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Speed-up base/new (median of pairs): CPU **{r['cpu_s']['speedup_median']}x** "
        f"({r['cpu_s']['speedup_min']}-{r['cpu_s']['speedup_max']}x), wall {r['wall_s']['speedup_median']}x "
        f"({r['wall_s']['speedup_min']}-{r['wall_s']['speedup_max']}x). "
        f"Output documents identical on both sides: **{'yes' if same else 'NO'}**"
        + ("." if same else f" ({differing} of {len(docs)} documents differ; sentences dropped: base "
                             f"{b['sentences_dropped']}, new {n['sentences_dropped']})."),
    ])  # fmt: skip
    name = (
        "stream-ab"
        + ("-quick" if args.quick else "")
        + (f"-threads{args.threads}" if args.threads else "")
        + (f"-{Path(args.new_model).name}" if args.new_model else "")
    )
    print(md)
    print(f"\nwrote {write_results(name, result, md)}")


SWEEP_KEYS = {  # --configs key: (name, workers, threads (None: fairstream's automatic choice), prefetch)
    "1x2": ("1 worker x 2 threads", 1, 2, 0),
    "1x1": ("1 worker x 1 thread", 1, 1, 0),
    "1xauto": ("1 worker x automatic", 1, None, 0),
    "2x1": ("2 workers x 1 thread", 2, 1, 0),
    "2xort": ("2 workers x ORT default threads", 2, 0, 0),
    "2xauto": ("2 workers x automatic", 2, None, 0),
    # DataLoader delivers in order with prefetch_factor=2 tasks per worker: a worker whose window is
    # done waits for the other's; a look-ahead's worth of prefetch lets it start its next window
    "2xauto-ahead": ("2 workers x automatic, prefetch_factor = look-ahead", 2, None, -1),
}


def run_threads_sweep(args: argparse.Namespace, docs: list[dict], mb: float) -> None:
    from benchmarks._ab import configs

    base = _common_args(args)
    keys = list(dict.fromkeys(args.configs or [k for k in SWEEP_KEYS if not k.endswith("-ahead")]))
    named = {
        SWEEP_KEYS[k][0]: [*base, "--workers", str(SWEEP_KEYS[k][1]), "--prefetch", str(SWEEP_KEYS[k][3])]
        + ([] if SWEEP_KEYS[k][2] is None else ["--threads", str(SWEEP_KEYS[k][2])])
        for k in keys
    }
    ref = next(iter(named))
    checkout = args.checkout or HERE.parent.parent
    r = configs(HERE, checkout, named, args.rounds, ref)
    for name in named:  # per-document digests are for the A/B's differing-documents count only
        r[name]["last"].pop("doc_digests", None)
    m = machine()
    # each worker caps its own part, so only configurations with the same workers must agree
    two_workers = [name for name in named if name.startswith("2 workers")]
    shas = {r[name]["last"]["output_sha256"] for name in two_workers}
    # one 2-worker configuration has nothing to agree with: no claim either way
    identical = len(shas) == 1 if len(two_workers) > 1 else None
    result = {
        "docs": len(docs), "mb": round(mb, 2), "checkout": str(checkout), **r,
        "identical_output_2_workers": identical, "machine": m,
    }  # fmt: skip
    rows = [
        f"| {name} | {r[name]['wall_s_median']:.1f} | {mb / r[name]['wall_s_median']:.2f} | "
        f"{r[name]['cpu_s_median']:.1f} | **{r[name][f'speed_vs_{ref}_median']}x** "
        f"({r[name][f'speed_vs_{ref}_min']}-{r[name][f'speed_vs_{ref}_max']}x) |"
        for name in named
    ]
    md = "\n".join([
        "# DataLoader workers x ONNX Runtime threads",
        "",
        f"Corpus: {args.corpus} ({len(docs)} documents, {mb:.1f} MB), FairStream in `DataLoader(num_workers=N)`, "
        f"shipped model; {args.rounds} rounds, configurations in turn (order reversed every other round). "
        f"Wall seconds of the loop (worker start-up included). Machine: {machine_line(m)}.",
        "",
        f"| configuration | wall s | MB/s | CPU s (all processes) | speed vs {ref} (per round) |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "Output documents identical in the 2-worker configurations (threads change speed only): "
        f"**{'n/a (one 2-worker configuration)' if identical is None else 'yes' if identical else 'NO'}**.",
    ])  # fmt: skip
    name = "stream-threads" + ("-" + "-".join(keys) if args.configs else "")
    print(md)
    print(f"\nwrote {write_results(name + ('-quick' if args.quick else ''), result, md)}")


if __name__ == "__main__":
    main()
