"""Offline filtering with the global cap (fairstream.jobs): engines side by side, and memory.

1. Throughput: the same shards (4 gzip JSON-lines shards cut from ../shared/data/corpus) filtered
   with ``--cap-scope global`` by the local pool with 1 and 2 workers and by Ray (a local Ray with
   2 CPUs), each in a fresh process: documents/s, MB/s (uncompressed input), peak RSS of the whole
   process tree (sampled), ratios to 1 worker, and whether the outputs are byte-identical.
2. Memory: one large JSON-lines shard (``--rss-mb``, default 100 MB) built by repeating corpus
   documents with new ids, filtered by 1 worker: peak RSS, its growth over the process with the
   model loaded, against the growth of merely reading the shard into a list.

    python benchmarks/bench_offline.py                 # both parts
    python benchmarks/bench_offline.py --rss-mb 0      # throughput only
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DEFAULT_CORPUS, ROOT, load_corpus, machine, machine_line, write_results

CHILD = """
import json, resource, sys, threading, time
import psutil
spec = json.loads(sys.argv[1])
me = psutil.Process()
peak = {"tree": 0}
def sample():
    while True:
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        peak["tree"] = max(peak["tree"], total)
        time.sleep(0.2)
threading.Thread(target=sample, daemon=True).start()
from fairstream.core.config import FilterConfig
from fairstream.processes import usable_cores
from fairstream.jobs.tasks import worker_step
config = FilterConfig(cap=spec["cap"], cache_size=spec.get("cache_size", 0))
base = None
if spec.get("warm"):  # the model loaded and used once: the baseline the job's growth is measured from
    worker_step(config, usable_cores()).process([{"id": "w", "text": "The Muslim man was kind to his neighbours "
                                                     "and helped them carry their bags home after a long day."}])
    base = me.memory_info().rss
t0 = time.perf_counter()
if spec["engine"] == "read-whole":
    from fairstream.io import iter_records
    docs = [r for _, r in iter_records(spec["inputs"][0])]
    summary = {"documents": len(docs)}
else:
    if spec["engine"] == "ray":
        import ray
        ray.init(num_cpus=spec["workers"], include_dashboard=False, log_to_driver=False)
    from fairstream.jobs import GlobalCapJob
    summary = GlobalCapJob(spec["inputs"], spec["output"], config, engine=spec["engine"],
                           workers=spec["workers"], progress=False).run()
seconds = time.perf_counter() - t0
print(json.dumps({
    "seconds": seconds,
    "documents": summary["documents"],
    "timings": summary.get("timings"),
    "peak_rss_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "peak_rss_children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    "peak_rss_tree": peak["tree"],
    "base_rss": base,
}))
"""


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration in a fresh process; its JSON result."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, cwd=ROOT
    )
    if out.returncode != 0:
        raise SystemExit(f"{spec['engine']} run failed:\n{out.stderr[-3000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def digest(folder: Path) -> str:
    """One hash of every output shard's bytes (with its relative path)."""
    h = hashlib.sha256()
    for p in sorted((folder / "data").rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def build_shards(docs: list[dict[str, Any]], folder: Path, mb: float, n: int = 4) -> int:
    """``n`` gzip shards of distinct corpus documents, about ``mb`` MB of JSON in all; the bytes."""
    folder.mkdir(parents=True)
    lines, size = [], 0
    for d in docs:
        line = json.dumps({"id": d["id"], "text": d["text"]}) + "\n"
        lines.append(line)
        size += len(line.encode())
        if size >= mb * 1e6:
            break
    per = -(-len(lines) // n)
    for i in range(n):
        with gzip.open(folder / f"{i:03d}.jsonl.gz", "wt", encoding="utf-8") as f:
            f.writelines(lines[i * per : (i + 1) * per])
    return size


def build_large(docs: list[dict[str, Any]], path: Path, mb: float) -> tuple[int, int]:
    """One JSON-lines shard of about ``mb`` MB: corpus documents repeated under new ids."""
    n = size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < mb * 1e6:
            d = docs[n % len(docs)]
            line = json.dumps({"id": f"r{n // len(docs)}-{d['id']}", "text": d["text"]}) + "\n"
            f.write(line)
            size += len(line.encode())
            n += 1
    return n, size


def main() -> None:
    """Run the benchmark and write results/offline.{json,md}."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--shards-mb", type=float, default=6.0, help="JSON MB of the throughput shards")
    ap.add_argument("--rss-mb", type=float, default=100.0, help="MB of the large shard (0: skip)")
    ap.add_argument("--cap", type=float, default=0.01)
    ap.add_argument(
        "--cache-size",
        type=int,
        default=20000,
        help="judged mentions remembered in the large-shard run (its documents repeat; 0: off)",
    )
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    docs = load_corpus(args.corpus)
    result: dict[str, Any] = {"machine": machine(), "cap": args.cap, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        root = Path(tmp)
        size = build_shards(docs, root / "in", args.shards_mb)
        result["shards_bytes"] = size
        configs = [("local-1", "local", 1), ("local-2", "local", 2)]
        if not args.no_ray:
            configs.append(("ray-2", "ray", 2))
        digests = {}
        for name, engine, workers in configs:
            print(f"{name} ...", file=sys.stderr, flush=True)
            spec = {
                "engine": engine,
                "workers": workers,
                "inputs": [str(root / "in")],
                "output": str(root / name),
                "cap": args.cap,
            }
            run = child(spec)
            run["docs_per_s"] = run["documents"] / run["seconds"]
            run["mb_per_s"] = size / 1e6 / run["seconds"]
            result["runs"][name] = run
            digests[name] = digest(root / name)
        result["identical_outputs"] = len(set(digests.values())) == 1
        result["digests"] = digests
        base = result["runs"]["local-1"]
        for run in result["runs"].values():
            run["speedup_vs_local_1"] = base["seconds"] / run["seconds"]
        if args.rss_mb > 0:
            n, big = build_large(docs, root / "large.jsonl", args.rss_mb)
            print(f"large shard: {n} documents, {big / 1e6:.1f} MB ...", file=sys.stderr, flush=True)
            common = {
                "inputs": [str(root / "large.jsonl")],
                "cap": args.cap,
                "warm": True,
                "workers": 1,
                "cache_size": args.cache_size,
            }
            job = child({**common, "engine": "local", "output": str(root / "large-out")})
            whole = child({**common, "engine": "read-whole", "output": ""})
            result["large"] = {
                "documents": n,
                "bytes": big,
                "cache_size": args.cache_size,
                "job": job,
                "read_whole": whole,
                "job_growth": job["peak_rss_self"] - job["base_rss"],
                "read_whole_growth": whole["peak_rss_self"] - whole["base_rss"],
            }
    md = render(result)
    path = write_results("offline", result, md)
    print(md)
    print(f"wrote {path}", file=sys.stderr)


def render(r: dict[str, Any]) -> str:
    """The Markdown table of a result."""
    mb = 1e6
    lines = [
        "# Offline filter, global cap: engines and memory",
        "",
        f"Machine: {machine_line(r['machine'])}. Cap {r['cap']}, passes 1-3 end to end, each run in a fresh process.",
        "",
        f"Throughput on {r['shards_bytes'] / mb:.1f} MB of JSON in 4 gzip shards "
        f"(outputs byte-identical across runs: **{'yes' if r['identical_outputs'] else 'NO'}**):",
        "",
        "| run | seconds | docs/s | MB/s | x local-1 | peak RSS, all processes (MB) |",
        "|---|---|---|---|---|---|",
    ]
    for name, run in r["runs"].items():
        lines.append(
            f"| {name} | {run['seconds']:.1f} | {run['docs_per_s']:.1f} | {run['mb_per_s']:.3f} | "
            f"{run['speedup_vs_local_1']:.2f} | {run['peak_rss_tree'] / mb:.0f} |"
        )
    if "large" in r:
        big = r["large"]
        job = big["job"]
        lines += [
            "",
            f"Memory on one {big['bytes'] / mb:.0f} MB JSON-lines shard ({big['documents']:,} documents, "
            f"1 worker, cache_size {big['cache_size']:,} since its documents repeat): peak RSS **{job['peak_rss_self'] / mb:.0f} MB**, "
            f"{big['job_growth'] / mb:.0f} MB above the process with the model loaded "
            f"({job['seconds']:.0f} s, {big['bytes'] / mb / job['seconds']:.2f} MB/s); reading the same "
            f"shard whole into a list grows a process by {big['read_whole_growth'] / mb:.0f} MB.",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
