"""int8 activation schemes side by side: batch invariance, agreement with fp32 activations, speed.

    python benchmarks/bench_quantization.py [--base-rev 03768b6] [--model-rev 00e01e8] [--rounds 5] [--real-pool ...]

Three graphs of the same trained weights (joint-v2): the per-tensor dynamic int8 graph shipped
before batch-invariant inference (read from git at ``--base-rev``), the per-row graph that shipped
until joint-v2 was retired from the package (read from git at ``--model-rev``), and
the fp32-activation reference (same int8 weights dequantized, see
``export.quantize.fp32_activation_reference``). The fp32 training checkpoint of joint-v2 is not in
the repository, so this isolates activation rounding: the weight rounding is common to all three.

Mentions: the expert dev set (the model was trained on it) and text the model never saw
(CrowS-Pairs and StereoSet sentences, keyword mentions found by the detector; with ``--real-pool``
also real Reddit / Wikipedia / web mentions, as users' text is). Speed: pairs/s of the
model stage, one intra-op thread, length-sorted batches, CPU time of this process (robust to other
load on the machine), rounds interleaved, median reported.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import onnx
import onnxruntime as ort
from _common import ROOT, machine, write_results
from tokenizers import Tokenizer

from export.quantize import fp32_activation_reference
from fairstream.detect import KeywordDetector
from fairstream.models.encoding import MentionInput, encode_batch
from fairstream.models.labels import load_labelled_pairs
from fairstream.models.runtime import default_model_dir
from fairstream.taxonomy import Taxonomy

SHARED = ROOT.parent / "shared" / "data"
MODEL = "fairstream/data/models/joint-v2/model.int8.onnx"


def unseen_mentions(tax: Taxonomy, limit: int) -> list[MentionInput]:
    texts = []
    with (SHARED / "bias" / "crows_pairs" / "crows_pairs_anonymized.csv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            texts += [row["sent_more"], row["sent_less"]]
    with gzip.open(SHARED / "bias" / "stereoset" / "dev.json.gz", "rt", encoding="utf-8") as f:
        data = json.load(f)
    for item in data["data"]["intersentence"]:
        texts += [item["context"] + " " + s["sentence"] for s in item["sentences"]]
    detector = KeywordDetector(tax)
    out = []
    for text in dict.fromkeys(texts):
        for m in detector.find(text):
            attr = tax[m.keyword]
            out.append(MentionInput(text, m.start, m.end, attr.keyword, attr.gloss))
    random.Random(0).shuffle(out)
    return out[:limit]


def session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def probs(sess: ort.InferenceSession, tok: Tokenizer, items: list[MentionInput], order: list[int], bs: int):
    names = {i.name for i in sess.get_inputs()}
    out = np.zeros((len(items), 6), dtype=np.float64)
    for lo in range(0, len(order), bs):
        idx = order[lo : lo + bs]
        feeds = {k: v for k, v in encode_batch(tok, [items[i] for i in idx], 192).items() if k in names}
        logits = np.concatenate(sess.run(["wsd_logits", "regard_logits"], feeds), axis=1)
        for j, row in zip(idx, logits, strict=True):
            w, r = np.exp(row[:3] - row[:3].max()), np.exp(row[3:] - row[3:].max())
            out[j] = np.concatenate([w / w.sum(), r / r.sum()])
    return out


def compare(p: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    person_ref = ref[:, 1] >= 0.5
    return {
        "person_agreement": float(((p[:, 1] >= 0.5) == person_ref).mean()),
        "regard_agreement": float((p[person_ref, 3:].argmax(1) == ref[person_ref, 3:].argmax(1)).mean()),
        "mean_abs_prob_diff": float(np.abs(p - ref).mean()),
        "max_abs_prob_diff": float(np.abs(p - ref).max()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-rev", default="03768b6", help="commit whose model is the per-tensor baseline")
    ap.add_argument(
        "--model-rev",
        default="00e01e8",
        help="a commit that still ships joint-v2's per-row graph (the last one)",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--unseen", type=int, default=1500, help="unseen mentions to compare on")
    ap.add_argument(
        "--real-pool",
        type=Path,
        help="unseen real text as a pool file (export.distill schema), e.g. round 6's runs/round6/unseen.jsonl "
        "(Reddit, Wikipedia and web mentions no shipped model trained on; python -m export.annotation candidates/pool with export/annotation/recipes/round6.json)",
    )
    ap.add_argument("--real-n", type=int, default=3000, help="mentions drawn (seeded) from --real-pool")
    args = ap.parse_args()
    tax = Taxonomy.default()
    tok = Tokenizer.from_file(str(default_model_dir("joint-v6") / "tokenizer.json"))  # joint-v2's too
    tok.no_padding()
    tok.no_truncation()
    sets = {
        "dev (trained on)": [
            p.mention
            for p in load_labelled_pairs(SHARED / "labels" / "dev.jsonl", {a.keyword: a.forms for a in tax})
        ],
        "unseen (CrowS-Pairs + StereoSet)": unseen_mentions(tax, args.unseen),
    }
    if args.real_pool:
        from export.distill import load_pool

        real = [p.mention for p in load_pool(args.real_pool)]
        random.Random(0).shuffle(real)
        sets["unseen real text (Reddit, Wikipedia, web: round-6 pool)"] = real[: args.real_n]
    with tempfile.TemporaryDirectory() as tmp:
        per_tensor, per_row = Path(tmp) / "per_tensor.onnx", Path(tmp) / "per_row.onnx"
        for path, rev in ((per_tensor, args.base_rev), (per_row, args.model_rev)):
            path.write_bytes(
                subprocess.run(
                    ["git", "show", f"{rev}:{MODEL}"], capture_output=True, check=True, cwd=ROOT
                ).stdout
            )
        reference = Path(tmp) / "reference.onnx"
        onnx.save(fp32_activation_reference(onnx.load(str(per_tensor))), str(reference))
        graphs = {
            f"per-tensor int8 ({args.base_rev})": per_tensor,
            f"per-row int8 ({args.model_rev})": per_row,
            "fp32 activations (reference)": reference,
        }
        sessions = {name: session(path) for name, path in graphs.items()}
        quality: dict[str, dict] = {}
        for set_name, items in sets.items():
            by_len = sorted(range(len(items)), key=lambda i: len(items[i].text))
            shuffled = list(range(len(items)))
            random.Random(1).shuffle(shuffled)
            ref = probs(sessions["fp32 activations (reference)"], tok, items, by_len, 8)
            quality[set_name] = {"n": len(items)}
            for name, sess in sessions.items():
                sorted8 = probs(sess, tok, items, by_len, 8)
                alone = probs(sess, tok, items, by_len, 1)
                shuf32 = probs(sess, tok, items, shuffled, 32)
                quality[set_name][name] = {
                    "vs_reference": compare(sorted8, ref),
                    "batch_flips_1_vs_8": int(((alone[:, 1] >= 0.5) != (sorted8[:, 1] >= 0.5)).sum()),
                    "batch_flips_1_vs_shuffled32": int(((alone[:, 1] >= 0.5) != (shuf32[:, 1] >= 0.5)).sum()),
                    "max_prob_change_across_batches": float(
                        max(np.abs(alone - sorted8).max(), np.abs(alone - shuf32).max())
                    ),
                }
        items = sets["dev (trained on)"][:480]
        by_len = sorted(range(len(items)), key=lambda i: len(items[i].text))
        speed: dict[str, dict[str, list[float]]] = {n: {"8": [], "32": []} for n in sessions}
        for _ in range(args.rounds):
            for name, sess in sessions.items():
                for bs in (8, 32):
                    t0 = time.process_time()
                    probs(sess, tok, items, by_len, bs)
                    speed[name][str(bs)].append(len(items) / (time.process_time() - t0))
    base = f"per-tensor int8 ({args.base_rev})"
    speed_summary = {
        n: {
            bs: {
                "median_pairs_per_s": statistics.median(v),
                "min": min(v),
                "max": max(v),
                "ratio_to_per_tensor": statistics.median(v) / statistics.median(speed[base][bs]),
            }
            for bs, v in d.items()
        }
        for n, d in speed.items()
    }
    result = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d"),
        "quality": quality,
        "speed": speed_summary,
    }
    lines = [
        "# int8 activation quantization: batch invariance, parity, speed",
        "",
        f"Machine: {result['machine']['cpu']}, {result['machine']['cores']} cores; onnxruntime {result['machine']['onnxruntime']}; commit {result['machine']['commit']}; {result['date']}.",
        "Produced by `python benchmarks/bench_quantization.py`. Reference: the same int8 weights with fp32 activations.",
        "",
        "| mentions | graph | person agree | regard agree | mean abs dP | person flips bs1 vs 8 / vs shuffled 32 | max dP across batches |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for set_name, q in quality.items():
        for name in graphs:
            r = q[name]
            v = r["vs_reference"]
            lines.append(
                f"| {set_name} (n={q['n']}) | {name} | {100 * v['person_agreement']:.2f}% | {100 * v['regard_agreement']:.2f}% | "
                f"{v['mean_abs_prob_diff']:.4f} | {r['batch_flips_1_vs_8']} / {r['batch_flips_1_vs_shuffled32']} | {r['max_prob_change_across_batches']:.2g} |"
            )
    lines += [
        "",
        "Speed (model stage, 1 thread, CPU time, median of rounds; ratio to the per-tensor graph):",
        "",
        "| graph | batch 8 pairs/s | ratio | batch 32 pairs/s | ratio |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, d in speed_summary.items():
        lines.append(
            f"| {name} | {d['8']['median_pairs_per_s']:.0f} | {d['8']['ratio_to_per_tensor']:.2f}x | {d['32']['median_pairs_per_s']:.0f} | {d['32']['ratio_to_per_tensor']:.2f}x |"
        )
    md = "\n".join(lines) + "\n"
    write_results("quantization", result, md)
    print(md)


if __name__ == "__main__":
    main()
