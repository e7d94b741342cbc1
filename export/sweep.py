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
import os
import time
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

from export.config import TrainConfig
from export.modeling import JointCrossEncoder
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
    "save_logits": False,
    "distill_from": None,
    "distill_pool": 0,
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


def save_npz(path: Path, **arrays: np.ndarray) -> None:
    """Write an npz atomically: a parallel fit waiting for this file never reads half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        np.savez_compressed(f, **arrays)  # type: ignore[arg-type]  # numpy's stub types allow_pickle only
    os.replace(tmp, path)


def tag_of(cfg: dict, fold: int | None) -> str:
    """File stem of one fitted model of a config: NAME-fK, NAME-heldout or NAME-full."""
    return f"{cfg['name']}-" + (f"f{fold}" if fold is not None else cfg["eval"])


def soft_labels_for(
    train: list[LabelledPair], ctx: SweepContext, teacher_tag: str
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Index into ``train`` -> the teacher's (WSD, regard) logits, for every pair the teacher scored."""
    path = ctx.logits_dir / f"{teacher_tag}.npz"
    if not path.is_file():
        raise SystemExit(
            f"distill_from: no teacher logits {path}; run the teacher config with save_logits first"
        )
    with np.load(path) as z:
        wsd, reg = z["wsd"].astype(np.float32), z["regard"].astype(np.float32)
    if len(wsd) != len(ctx.scored):
        raise SystemExit(
            f"{path}: {len(wsd)} rows, but --pairs and --pool hold {len(ctx.scored)}; pass the teacher's files"
        )
    row_of = ctx.row_of
    # NaN rows: pairs the teacher never scored (e.g. labels added after it ran) train on gold only
    scored = np.isfinite(wsd).all(axis=1) & np.isfinite(reg).all(axis=1)
    return {
        i: (wsd[row_of[id(p)]], reg[row_of[id(p)]])
        for i, p in enumerate(train)
        if id(p) in row_of and scored[row_of[id(p)]]
    }


def fit_one(
    cfg: dict,
    train: list[LabelledPair],
    ctx: SweepContext,
    fold: int | None,
) -> JointCrossEncoder:
    """Fit one model of a config (distilled when it names a teacher); save its logits when asked."""
    hp = TrainConfig.from_mapping(cfg)
    soft = None
    if cfg["distill_from"]:
        teacher_cfg = {**cfg, "name": cfg["distill_from"]}
        soft = soft_labels_for(train, ctx, tag_of(teacher_cfg, fold))
    model, _ = fit(ctx.encoder, ctx.tokenizer, train, hp, device=ctx.device, quiet=True, soft=soft)
    if cfg["save_logits"]:
        wsd, reg = predict(model, ctx.tokenizer, ctx.scored, hp.max_length, bs=128, logits=True)
        save_npz(ctx.logits_dir / f"{tag_of(cfg, fold)}.npz", wsd=wsd, regard=reg)
    return model


class SweepContext:
    """What every fit of one sweep process shares: encoder, tokenizer, device, scored items, folders."""

    def __init__(
        self,
        encoder: str,
        tokenizer,
        device: str,
        pairs: list[LabelledPair],
        pool: list[LabelledPair],
        out: Path,
    ) -> None:
        self.encoder, self.tokenizer, self.device, self.out = encoder, tokenizer, device, out
        self.pool = pool
        self.scored = pairs + pool  # the rows of every logits file, in this order
        self.row_of = {id(p): i for i, p in enumerate(self.scored)}
        self.logits_dir = out / "logits"


def run_config(
    cfg: dict,
    pool: list[LabelledPair],
    dev: list[LabelledPair],
    ctx: SweepContext,
    only_fold: int | None = None,
) -> tuple[dict, np.ndarray, np.ndarray]:
    tokenizer = ctx.tokenizer
    train = select(pool, cfg)
    if cfg["distill_pool"]:
        n = len(ctx.pool) if cfg["distill_pool"] < 0 else int(cfg["distill_pool"])
        if n > len(ctx.pool):
            raise SystemExit(
                f"config {cfg['name']!r}: distill_pool {n} > the {len(ctx.pool)} --pool mentions"
            )
        if not cfg["distill_from"]:
            raise SystemExit(f"config {cfg['name']!r}: distill_pool needs distill_from (a teacher's labels)")
        train = train + ctx.pool[:n]
    wsd = np.zeros((len(dev), 3), dtype=np.float32)
    reg = np.zeros((len(dev), 3), dtype=np.float32)
    t0 = time.time()
    scored_rows = list(range(len(dev)))
    if cfg["eval"] == "heldout":
        model = fit_one(cfg, train, ctx, None)
        wsd, reg = predict(model, tokenizer, dev, cfg["max_length"])
    elif cfg["eval"] == "full":
        fit_one(cfg, train + dev, ctx, None)
        scored_rows = []
    elif cfg["eval"] == "cv":
        folds = [dev_fold(p.uid, cfg["folds"]) for p in dev]
        devdoc = [p for p in pool if p.source.startswith("devdoc-")] if cfg["with_dev_documents"] else []
        scored_rows = []
        for k in range(cfg["folds"]) if only_fold is None else [only_fold]:
            extra = [p for p, f in zip(dev, folds, strict=True) if f != k]
            extra += [p for p in devdoc if k not in (devdoc_folds(p.source, cfg["folds"]) or set())]
            held = [i for i, f in enumerate(folds) if f == k]
            model = fit_one(cfg, train + extra, ctx, k)
            w, r = predict(model, tokenizer, [dev[i] for i in held], cfg["max_length"])
            wsd[held], reg[held] = w, r
            scored_rows += held
    else:
        raise ValueError(f"eval={cfg['eval']!r}: expected 'heldout', 'cv' or 'full'")
    result = {
        "name": cfg["name"],
        "config": {k: v for k, v in cfg.items() if k != "name"},
        "n_train": len(train),
        "seconds": round(time.time() - t0, 1),
    }
    if only_fold is not None:
        result["fold"] = only_fold
    if scored_rows:
        rows = sorted(scored_rows)
        result["dev"] = evaluate(wsd[rows], reg[rows], [dev[i] for i in rows], 0.5)
    return result, wsd, reg


def merge_folds(
    cfg: dict, dev: list[LabelledPair], out: Path, folds: list[int] | None = None
) -> tuple[dict, np.ndarray, np.ndarray] | None:
    """Pool the per-fold files of a cv config run with ``--fold``; None when a fold is missing.

    ``folds`` pools only those folds (and scores only their dev items): a partial CV, for comparing
    configs on the folds they all finished. Rows of other folds stay zero in the returned arrays.
    """
    wanted = list(range(cfg["folds"])) if folds is None else folds
    wsd = np.zeros((len(dev), 3), dtype=np.float32)
    reg = np.zeros((len(dev), 3), dtype=np.float32)
    seconds = 0.0
    scored: list[int] = []
    for k in wanted:
        path = out / "folds" / f"{tag_of(cfg, k)}.npz"
        if not path.is_file():
            logger.warning("%s: fold %d missing (%s); not merged", cfg["name"], k, path)
            return None
        with np.load(path) as z:
            rows = z["rows"]
            wsd[rows], reg[rows] = z["wsd"], z["regard"]
            seconds += float(z["seconds"])
            scored += [int(r) for r in rows]
    scored.sort()
    result = {
        "name": cfg["name"],
        "config": {k: v for k, v in cfg.items() if k != "name"},
        "seconds": round(seconds, 1),
        "merged_folds": cfg["folds"] if folds is None else wanted,
        "dev": evaluate(wsd[scored], reg[scored], [dev[i] for i in scored], 0.5),
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
    ap.add_argument("--pool", type=Path, action="append", default=[], help="unlabelled mentions (repeatable)")
    ap.add_argument("--fold", type=int, help="run only this fold of each cv config (parallel processes)")
    ap.add_argument(
        "--merge", action="store_true", help="pool the --fold files of each cv config, train nothing"
    )
    ap.add_argument(
        "--merge-folds",
        type=int,
        nargs="+",
        help="with --merge: pool only these folds (a partial CV; configs compared on the same folds)",
    )
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads of this process")
    args = ap.parse_args()
    if args.merge_folds and not args.merge:
        ap.error("--merge-folds needs --merge")
    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.backends.cuda.matmul.allow_tf32 = True
    pool = load_labelled_pairs(args.pairs)
    dev = load_labelled_pairs(args.dev)
    from export.distill import load_pool

    unlabelled = [p for path in args.pool for p in load_pool(path)]
    tokenizer = Tokenizer.from_file(str(Path(args.encoder) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    configs = json.loads(args.configs.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    probs: dict[str, np.ndarray] = {}
    if (
        args.fold is None and (args.out / "probs.npz").is_file()
    ):  # results.jsonl appends; so do the probabilities
        with np.load(args.out / "probs.npz") as z:
            probs = {k: z[k] for k in z.files}
    ctx = SweepContext(args.encoder, tokenizer, args.device, pool, unlabelled, args.out)
    for raw in configs:
        unknown = set(raw) - set(DEFAULTS) - {"name"}
        if unknown:
            raise SystemExit(
                f"config {raw.get('name')!r}: unknown keys {sorted(unknown)}; allowed {sorted(DEFAULTS)}"
            )
        cfg = {**DEFAULTS, **raw}
        if args.merge or args.fold is not None:
            if cfg["eval"] != "cv":
                if args.merge:
                    continue
                raise SystemExit(f"--fold {args.fold}: config {cfg['name']!r} is not a cv config")
            if not 0 <= (args.fold or 0) < cfg["folds"]:
                raise SystemExit(
                    f"--fold {args.fold}: config {cfg['name']!r} has folds 0..{cfg['folds'] - 1}"
                )
        if args.merge:
            merged = merge_folds(cfg, dev, args.out, args.merge_folds)
            if merged is None:
                continue
            result, wsd, reg = merged
        else:
            result, wsd, reg = run_config(cfg, pool, dev, ctx, only_fold=args.fold)
        if args.fold is not None:
            rows = np.array([i for i, p in enumerate(dev) if dev_fold(p.uid, cfg["folds"]) == args.fold])
            save_npz(
                args.out / "folds" / f"{tag_of(cfg, args.fold)}.npz",
                rows=rows, wsd=wsd[rows], regard=reg[rows], seconds=result["seconds"],
            )  # fmt: skip
        if "dev" not in result:  # eval "full": nothing held out
            logger.info("%s: trained on everything in %.0f s", cfg["name"], result["seconds"])
            with (args.out / "results.jsonl").open("a") as f:
                f.write(json.dumps(result) + "\n")
            continue
        d = result["dev"]
        logger.info(
            "%s: kappa %.3f macro %.3f (neg %.2f pos %.2f) in %.0f s",
            cfg["name"], d["wsd_kappa"], d["regard_macro_f1"],
            d["regard_f1"]["negative"], d["regard_f1"]["positive"], result["seconds"],
        )  # fmt: skip
        with (args.out / "results.jsonl").open("a") as f:
            f.write(json.dumps(result) + "\n")
        if args.fold is None and not args.merge_folds:  # a partial merge has rows it did not score
            probs[f"{cfg['name']}/wsd"], probs[f"{cfg['name']}/regard"] = wsd, reg
            save_npz(args.out / "probs.npz", **probs)


if __name__ == "__main__":
    main()
