"""Model stage ablation: what each change of issue 15 buys, side by side in one process.

    python benchmarks/bench_model_stage.py [--limit 1500] [--rounds 3]

The unique (sentence, keyword) pairs of the first ``--limit`` corpus documents (the keyword stage's
output) go through the shipped int8 graph five ways, rounds interleaved, median reported:

1. ``v2.1 (main before)``: batches of 8 sorted by characters, onnxruntime's default fusions, one
   intra-op thread (what ``JointModel`` did at c87d401);
2. ``+ token sort``: the same, batches sorted by token count (tokenized once);
3. ``+ no SkipLayerNorm fusion``: and ``SkipLayerNormFusion`` left out (``JointModel`` today, one
   thread);
4. ``v2.1 default, 2 threads``: (1) with intra-op threads = the cores (the old default in one process);
5. ``today's default``: ``JointModel(GRAPH)``: one intra-op thread, as many passes at once as cores.

Rows 1-3 are CPU-bound on one thread (pairs per CPU second); rows 4-5 use every core (pairs per wall
second). Decisions of each row are compared with row 1 (person flips, regard flips where both
call it a person).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from _common import add_pair_arguments, corpus_pairs, machine, machine_line, write_results

from fairstream.models.encoding import MentionInput, encode_batch
from fairstream.models.runtime import JointModel, default_model_dir, make_session, usable_cores

# one graph's kernels are compared here: the default cascade's full model (the default before it)
GRAPH = "joint-v6"


class CharSorted:
    """The pre-issue-15 ``JointModel.predict_logits``: batches sorted by characters, no thread pool."""

    def __init__(self, threads: int, unfused_skip_layer_norm: bool) -> None:
        from tokenizers import Tokenizer

        model = JointModel(GRAPH, intra_op_threads=threads)
        self.max_length, self.batch_size = model.max_length, 8
        path = default_model_dir(GRAPH) / model.config["onnx"]["int8"]
        # None: fairstream's CPU choice (SkipLayerNorm left out); (): onnxruntime's full set, as before
        disabled = None if unfused_skip_layer_norm else ()
        self.session = make_session(path, ["CPUExecutionProvider"], threads, disabled_optimizers=disabled)
        self.names = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(default_model_dir(GRAPH) / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def predict_logits(self, items: list[MentionInput]) -> tuple[np.ndarray, np.ndarray]:
        wsd = np.zeros((len(items), 3), np.float32)
        regard = np.zeros((len(items), 3), np.float32)
        order = sorted(range(len(items)), key=lambda i: len(items[i].text))
        for lo in range(0, len(items), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            feeds = encode_batch(self.tokenizer, [items[i] for i in idx], self.max_length)
            w, r = self.session.run(
                ["wsd_logits", "regard_logits"], {k: v for k, v in feeds.items() if k in self.names}
            )
            wsd[idx], regard[idx] = w, r
        return wsd, regard


def token_sorted_fused() -> JointModel:
    """Today's ``JointModel`` batching on a session with onnxruntime's full fusions (SkipLayerNormalization)."""
    model = JointModel(GRAPH, intra_op_threads=1)
    model._ensure_loaded()
    path = default_model_dir(GRAPH) / model.config["onnx"]["int8"]
    model._session = make_session(path, ["CPUExecutionProvider"], 1, disabled_optimizers=())
    return model


def decisions(logits: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    wsd, regard = logits
    e = np.exp(wsd - wsd.max(axis=1, keepdims=True))
    person = (e / e.sum(axis=1, keepdims=True))[:, 1] >= 0.5
    return person, regard.argmax(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_pair_arguments(ap, rounds=3)
    args = ap.parse_args()

    docs, pairs = corpus_pairs(args.corpus, args.limit)
    cores = usable_cores()
    configs: list[tuple[str, str, Any]] = [
        ("v2.1 (main before): char-sorted batches of 8, default fusions, 1 thread", "cpu", CharSorted(1, False)),
        ("+ batches sorted by token count", "cpu", token_sorted_fused()),
        ("+ SkipLayerNormFusion left out (JointModel, 1 thread)", "cpu", JointModel(GRAPH, intra_op_threads=1)),
        (f"v2.1 default in one process: {cores} intra-op threads", "wall", CharSorted(cores, False)),
        (f"today's default: JointModel(), 1 thread x {cores} passes at once", "wall", JointModel(GRAPH)),
    ]  # fmt: skip
    for _, _, model in configs:  # load and warm up outside the timing
        model.predict_logits(pairs[:16])
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    wall: dict[str, list[float]] = {name: [] for name, _, _ in configs}
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for r in range(args.rounds):
        for name, _, model in configs if r % 2 == 0 else configs[::-1]:
            t0, c0 = time.perf_counter(), time.process_time()
            out[name] = model.predict_logits(pairs)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            print(
                f"round {r + 1}: {name}: {wall[name][-1]:.2f} s wall, {cpu[name][-1]:.2f} s CPU", flush=True
            )

    ref_person, ref_regard = decisions(out[configs[0][0]])
    rows, result_rows = [], []
    base = {"cpu": len(pairs) / statistics.median(cpu[configs[0][0]]),
            "wall": len(pairs) / statistics.median(wall[configs[3][0]])}  # fmt: skip
    for name, clock, _ in configs:
        rate = len(pairs) / statistics.median(cpu[name] if clock == "cpu" else wall[name])
        person, regard = decisions(out[name])
        both = person & ref_person
        flips_p, flips_r = int((person != ref_person).sum()), int((regard[both] != ref_regard[both]).sum())
        result_rows.append({"config": name, "clock": clock, "pairs_per_s": round(rate, 1),
                            "ratio": round(rate / base[clock], 2), "cpu_s": cpu[name], "wall_s": wall[name],
                            "person_flips_vs_v2_1": flips_p, "regard_flips_vs_v2_1": flips_r})  # fmt: skip
        unit = "CPU s" if clock == "cpu" else "wall s"
        rows.append(f"| {name} | {rate:.0f} per {unit} | {rate / base[clock]:.2f}x | {flips_p} / {flips_r} |")
    m = machine()
    result = {
        "docs": len(docs),
        "pairs": len(pairs),
        "rounds": args.rounds,
        "rows": result_rows,
        "machine": m,
    }
    md = "\n".join([
        "# Model stage ablation (issue 15)",
        "",
        f"{len(pairs)} unique (sentence, keyword) pairs of the first {len(docs)} documents of {args.corpus}, "
        f"shipped int8 model, {args.rounds} interleaved rounds (median). Machine: {machine_line(m)}.",
        "",
        "| configuration | pairs/s | ratio | person / regard flips vs v2.1 |",
        "|---|---|---|---|",
        *rows,
        "",
        "Ratios: rows 1-3 against row 1 (one thread, CPU time); rows 4-5 against row 4 (all cores, wall time).",
    ])  # fmt: skip
    print(md)
    print(f"\nwrote {write_results('model-stage', result, md)}")


if __name__ == "__main__":
    main()
