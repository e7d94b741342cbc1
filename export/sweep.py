"""Run many training configurations in one process and score each on the expert dev set.

    python -m export.sweep --encoder DIR --pairs pool.jsonl --dev dev.jsonl --configs sweep.json \\
        --out results/ [--device cuda]

For recipe and data decisions: a GPU runs a MiniLM configuration in well under a minute, so
several seeds and k-fold cross-validation fit in one call. ``pool.jsonl`` comes from
``python -m export.train ... --dump-pairs`` (resolved text; keep it out of the repository).
Each config is a JSON object; every key but ``name`` is optional:

    {"name": "b-seed1", "eval": "heldout" | "cv", "folds": 5, "seed": 1, "epochs": 4, "lr": 8e-5,
     "batch_size": 16, "regard_weight": 2, "exclude": ["sheng"], "repeat": {"bias-": 2}}

``exclude`` drops pool pairs whose source starts with any prefix; ``repeat`` duplicates the pairs
of a source prefix (a cheap per-source weight). Items of the documents that hold dev sentences
(source "devdoc-...", see ``export.train.dev_document_pairs``) never train a held-out run; in
cross-validation they train the folds that evaluate none of their document's dev items
when the config sets ``"with_dev_documents": true``. Results go to ``OUT/results.jsonl`` (one line per
config, appended as soon as it finishes) and the dev probabilities of all configs to ``OUT/probs.npz``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

from export.config import TrainConfig
from export.train import dev_fold, devdoc_folds, evaluate, fit, predict
from fairstream.models.labels import LabelledPair, load_labelled_pairs

logger = logging.getLogger(__name__)

# data selection and evaluation keys; the recipe's keys and defaults come from TrainConfig
DEFAULTS = {
    "eval": "heldout",
    "folds": 5,
    "exclude": [],
    "repeat": {},
    "regard_only_data": False,
    "with_dev_documents": False,
    **TrainConfig().to_dict(),
}


def select(pool: list[LabelledPair], cfg: dict) -> list[LabelledPair]:
    # items of dev documents: only in cross-validation, and then per fold (see run_config)
    out = [
        p
        for p in pool
        if not any(p.source.startswith(x) for x in cfg["exclude"]) and not p.source.startswith("devdoc-")
    ]
    if cfg["regard_only_data"]:
        out = [p for p in out if p.wsd == "yes"]
    for prefix, times in cfg["repeat"].items():
        extra = [p for p in out if p.source.startswith(prefix)]
        out += extra * (int(times) - 1)
    return out


def run_config(
    cfg: dict, pool: list[LabelledPair], dev: list[LabelledPair], encoder: str, tokenizer, device: str
) -> tuple[dict, np.ndarray, np.ndarray]:
    hp = TrainConfig.from_mapping(cfg)
    train = select(pool, cfg)
    wsd = np.zeros((len(dev), 3), dtype=np.float32)
    reg = np.zeros((len(dev), 3), dtype=np.float32)
    t0 = time.time()
    if cfg["eval"] == "heldout":
        model, _ = fit(encoder, tokenizer, train, hp, device=device, quiet=True)
        wsd, reg = predict(model, tokenizer, dev, cfg["max_length"])
    elif cfg["eval"] == "cv":
        folds = [dev_fold(p.uid, cfg["folds"]) for p in dev]
        devdoc = [p for p in pool if p.source.startswith("devdoc-")] if cfg["with_dev_documents"] else []
        for k in range(cfg["folds"]):
            extra = [p for p, f in zip(dev, folds, strict=True) if f != k]
            extra += [p for p in devdoc if k not in (devdoc_folds(p.source, cfg["folds"]) or set())]
            held = [i for i, f in enumerate(folds) if f == k]
            model, _ = fit(encoder, tokenizer, train + extra, hp, device=device, quiet=True)
            w, r = predict(model, tokenizer, [dev[i] for i in held], cfg["max_length"])
            wsd[held], reg[held] = w, r
    else:
        raise ValueError(f"eval={cfg['eval']!r}: expected 'heldout' or 'cv'")
    result = {
        "name": cfg["name"],
        "config": {k: v for k, v in cfg.items() if k != "name"},
        "n_train": len(train),
        "seconds": round(time.time() - t0, 1),
        "dev": evaluate(wsd, reg, dev, 0.5),
    }
    return result, wsd, reg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoder", required=True)
    ap.add_argument("--pairs", type=Path, required=True)
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--configs", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.backends.cuda.matmul.allow_tf32 = True
    pool = load_labelled_pairs(args.pairs)
    dev = load_labelled_pairs(args.dev)
    tokenizer = Tokenizer.from_file(str(Path(args.encoder) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    configs = json.loads(args.configs.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    probs: dict[str, np.ndarray] = {}
    for raw in configs:
        unknown = set(raw) - set(DEFAULTS) - {"name"}
        if unknown:
            raise SystemExit(
                f"config {raw.get('name')!r}: unknown keys {sorted(unknown)}; allowed {sorted(DEFAULTS)}"
            )
        cfg = {**DEFAULTS, **raw}
        result, wsd, reg = run_config(cfg, pool, dev, args.encoder, tokenizer, args.device)
        d = result["dev"]
        logger.info(
            "%s: kappa %.3f macro %.3f (neg %.2f pos %.2f) in %.0f s",
            cfg["name"], d["wsd_kappa"], d["regard_macro_f1"],
            d["regard_f1"]["negative"], d["regard_f1"]["positive"], result["seconds"],
        )  # fmt: skip
        with (args.out / "results.jsonl").open("a") as f:
            f.write(json.dumps(result) + "\n")
        probs[f"{cfg['name']}/wsd"], probs[f"{cfg['name']}/regard"] = wsd, reg
        np.savez_compressed(args.out / "probs.npz", **probs)


if __name__ == "__main__":
    main()
