"""How the default cascade's two graphs decide with 8-bit and 7-bit activations, against their fp32 twins.

    NLTK_DATA=../shared/data/nltk_data python export/tools/activation_bits_parity.py \
        [--fast joint-v7-fast] [--full joint-v6] [--limit 0] [--json OUT.json]

On the unique (sentence, keyword) pairs of ``../shared/data/corpus`` (unlabelled), for each member: the
shipped graph as it stands, the same graph moved to the other activation width (``export.quantize
--rebit``), and the fp32 twin (the int8 weights dequantized, exported as ``fairstream bench`` does):
person decisions, regard decisions and |dP(person)| of each int8 graph against the fp32 twin, and of
the two int8 graphs against each other. For the cascade (fast member, route, full member) built from
each width: the share routed on, and rule (g)'s two measures against the full member alone (decisions
equal, negative Jaccard) with which the route was chosen (session 23). All on this machine's CPU: on
CPUs without VNNI 8-bit activations can saturate onnxruntime's integer sums, 7-bit ones cannot.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import corpus_pairs, machine  # noqa: E402

from export.quantize import METADATA_KEY, quantization_tag, set_activation_bits  # noqa: E402
from fairstream.bench import _export_fp32  # noqa: E402
from fairstream.models.cascade import CascadeRoute  # noqa: E402
from fairstream.models.runtime import JointModel, resolve_model_dir, softmax  # noqa: E402


def activation_bits(model_dir: Path) -> int:
    graph = onnx.load(str(model_dir / "model.int8.onnx"), load_external_data=False)
    tag = {p.key: p.value for p in graph.metadata_props}.get(METADATA_KEY, "")
    return 7 if tag == quantization_tag(7) else 8


def rebit_copy(src: Path, dst: Path, bits: int) -> Path:
    """A copy of model folder ``src`` whose int8 graph has ``bits``-bit activations."""
    shutil.copytree(src, dst)
    graph = set_activation_bits(onnx.load(str(src / "model.int8.onnx")), bits)
    onnx.save(graph, str(dst / "model.int8.onnx"))
    cfg = json.loads((dst / "config.json").read_text())
    cfg["quantization"] = quantization_tag(bits)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return dst


def decisions(wsd: np.ndarray, regard: np.ndarray, threshold: float) -> np.ndarray:
    """-1 for not a person, else the regard index."""
    return np.where(softmax(wsd)[:, 1] >= threshold, softmax(regard).argmax(axis=1), -1)


def agreement(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], threshold: float) -> dict:
    pa, pb = softmax(a[0])[:, 1], softmax(b[0])[:, 1]
    da, db = decisions(*a, threshold), decisions(*b, threshold)
    person_a, person_b = da >= 0, db >= 0
    both = person_a & person_b
    dp = np.abs(pa - pb)
    return {
        "person_agreement": round(float((person_a == person_b).mean()), 5),
        "person_flips": int((person_a != person_b).sum()),
        "regard_agreement_where_both_person": round(float((da[both] == db[both]).mean()), 5)
        if both.any()
        else None,
        "decision_agreement": round(float((da == db).mean()), 5),
        "negatives": [int((da == 0).sum()), int((db == 0).sum())],
        "mean_abs_dp": round(float(dp.mean()), 5),
        "max_abs_dp": round(float(dp.max()), 4),
    }


def cascade_measures(
    fast: tuple[np.ndarray, np.ndarray],
    full: tuple[np.ndarray, np.ndarray],
    route: CascadeRoute,
    threshold: float,
) -> tuple[dict, np.ndarray]:
    routed = route.routed(fast[0], fast[1], threshold)
    full_d, fast_d = decisions(*full, threshold), decisions(*fast, threshold)
    cascade = np.where(routed, full_d, fast_d)
    neg_full, neg_cascade = full_d == 0, cascade == 0
    union = (neg_full | neg_cascade).sum()
    return {
        "routed": round(float(routed.mean()), 4),
        "agreement_with_full": round(float((cascade == full_d).mean()), 4),
        "negative_jaccard_with_full": round(float((neg_full & neg_cascade).sum() / union), 4)
        if union
        else 1.0,
    }, cascade


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fast", default="joint-v7-fast")
    ap.add_argument("--full", default="joint-v6")
    ap.add_argument("--route-from", default="joint-v6-cascade", help="the cascade whose route is measured")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared/data/corpus")
    ap.add_argument("--limit", type=int, default=0, help="first N documents (0: all)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    route_cfg = json.loads((resolve_model_dir(args.route_from) / "config.json").read_text())["cascade"][
        "route"
    ]
    route = CascadeRoute(**route_cfg)
    _, pairs = corpus_pairs(args.corpus, args.limit)
    print(f"{len(pairs)} unique corpus pairs", flush=True)
    report: dict = {"pairs": len(pairs), "machine": machine(), "route": route_cfg, "members": {}}
    logits: dict[str, dict[int | str, tuple]] = {}
    with tempfile.TemporaryDirectory(prefix="fs-bits-") as tmp:
        for role, name in (("fast", args.fast), ("full", args.full)):
            src = resolve_model_dir(name)
            shipped = activation_bits(src)
            other = 15 - shipped  # 7 <-> 8
            dirs: dict[int | str, Path] = {
                shipped: src,
                other: rebit_copy(src, Path(tmp) / f"{role}-{other}", other),
                "fp32": _export_fp32(src, Path(tmp) / f"{role}-fp32"),
            }
            logits[role] = {}
            for key, d in dirs.items():
                logits[role][key] = JointModel(d).predict_logits(pairs)[:2]
                print(f"{name} {key}: done", flush=True)
            threshold = JointModel(src).wsd_threshold
            report["members"][role] = {
                "model": name,
                "shipped_activation_bits": shipped,
                "8-bit vs fp32": agreement(logits[role]["fp32"], logits[role][8], threshold),
                "7-bit vs fp32": agreement(logits[role]["fp32"], logits[role][7], threshold),
                "7-bit vs 8-bit": agreement(logits[role][8], logits[role][7], threshold),
            }
            report["threshold"] = threshold
        cascades = {}
        for key in (8, 7, "fp32"):
            measures, cascade_d = cascade_measures(
                logits["fast"][key], logits["full"][key], route, report["threshold"]
            )
            cascades[key] = cascade_d
            report[f"cascade {key}"] = measures
        for key in (8, 7):
            report[f"cascade {key} vs cascade fp32: decision agreement"] = round(
                float((cascades[key] == cascades["fp32"]).mean()), 5
            )
        report["cascade 7 vs cascade 8: decision agreement"] = round(
            float((cascades[7] == cascades[8]).mean()), 5
        )
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
