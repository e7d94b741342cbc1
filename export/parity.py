"""Decision agreement of two models on unlabelled text (int8 vs fp32 parity, student vs teacher).

    python -m export.parity --model fairstream/data/models/joint-v2 --run runs/final \
        --text runs/round6/unseen.jsonl [--text ...] [--out parity-unseen.json]

``--model`` is an exported model folder (its int8 graph, threshold and regard decision rule);
``--run`` is the training run it came from: its fp32 ONNX graph is rebuilt (``export_onnx.export_fp32``)
and decides with the same threshold and rule, so every difference is quantization. ``--text`` files
hold mentions in the pool schema of ``export.distill.load_pool``; use text no model trained on. The
model card's parity numbers come from here (``unseen``) and from ``export_onnx --parity-labels``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from export.distill import load_pool
from export.export_onnx import export_fp32, fp32_twin
from fairstream.models.runtime import JointModel

NEAR_TIE = 0.05  # |P(yes) - threshold| below this counts as a near-tie


def decision_agreement(reference: JointModel, other: JointModel, pairs: list) -> dict[str, Any]:
    """How often ``other`` decides as ``reference`` does: person or not, and regard where the reference says person."""
    mentions = [p.mention for p in pairs]
    ref, oth = reference.predict(mentions), other.predict(mentions)
    person_ref = np.array([p.person for p in ref])
    person_oth = np.array([p.person for p in oth])
    flips = person_ref != person_oth
    near = np.array([abs(p.wsd_score - reference.wsd_threshold) < NEAR_TIE for p in ref])
    both = person_ref & person_oth
    regard_same = np.array([a.regard == b.regard for a, b in zip(ref, oth, strict=True)])
    dp = np.array([abs(a.wsd_score - b.wsd_score) for a, b in zip(ref, oth, strict=True)])
    return {
        "n": len(pairs),
        "reference_person": int(person_ref.sum()),
        "wsd_decision_agreement": float((~flips).mean()) if len(pairs) else None,
        "wsd_flips": int(flips.sum()),
        "wsd_flips_near_tie": int((flips & near).sum()),
        # regard is compared where both call the mention a person (where only one does, WSD already differs)
        "regard_decision_agreement": float(regard_same[both].mean()) if both.any() else None,
        "regard_compared": int(both.sum()),
        "negative_reference": int(sum(a.regard == "negative" for a in ref)),
        "negative_other": int(sum(b.regard == "negative" for b in oth)),
        "max_abs_delta_p_yes": float(dp.max()) if len(pairs) else None,
    }


def unseen_parity(model_dir: Path, run: Path, texts: list[Path]) -> list[dict[str, Any]]:
    """int8 (``model_dir``) vs fp32 (rebuilt from ``run``) on each text file."""
    work = Path(tempfile.mkdtemp(prefix="fs-parity-"))
    try:
        cfg = json.loads((model_dir / "config.json").read_text())
        export_fp32(run, work / "model.fp32.onnx", cfg["max_length"])
        fp32 = JointModel(fp32_twin(model_dir, work / "model.fp32.onnx", work))
        int8 = JointModel(model_dir)
        return [{"text": str(t), **decision_agreement(fp32, int8, load_pool(t))} for t in texts]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="exported model folder (int8)")
    ap.add_argument("--run", type=Path, required=True, help="the training run it was exported from")
    ap.add_argument(
        "--text", type=Path, action="append", required=True, help="pool-schema mentions (repeatable)"
    )
    ap.add_argument("--out", type=Path, help="write the report here (default: MODEL/parity-unseen.json)")
    args = ap.parse_args()
    report = {
        "model": str(args.model),
        "run": str(args.run),
        "unseen": unseen_parity(args.model, args.run, args.text),
    }
    out = args.out or args.model / "parity-unseen.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
