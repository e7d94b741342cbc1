"""Train the joint WSD + regard cross-encoder on fairstream's labels.

    python -m export.train --encoder PATH_TO_HF_ENCODER --out runs/joint [--include-dev] [--eval-dev]
        [--device cuda] [--with-bias-labels] [--dump-pairs FILE | --pairs FILE]

Training data (see export/labels/DATA_CARD.md): the stand-off corpus labels ``export/labels/corpus-*.jsonl``
(resolved against ../shared/data/corpus), the project's own written sentences, and Sheng et al.'s
regard sentences with the "XYZ" placeholder filled by protected-attribute phrases;
``--with-bias-labels`` adds the CrowS-Pairs/StereoSet labels and ``--with-dev-documents`` the other
sentences of the dev documents (neither raised dev metrics).
``--eval-dev`` holds the expert dev set out and reports its metrics; ``--include-dev`` adds it to
training (for the shipped model, after its held-out numbers were recorded). ``--dump-pairs`` writes
the resolved training set with its text for a machine without ../shared (``--pairs`` or
``export.sweep`` read it). Seeded and reproducible on CPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import random
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm
from transformers import AutoTokenizer

from export.checkpoint import (
    load_checkpoint,
    read_progress,
    remove_checkpoint,
    save_checkpoint,
    training_fingerprint,
)
from export.config import TrainConfig
from export.losses import distilled_loss, gold_loss
from export.modeling import JointCrossEncoder
from export.training_set import build_training_set, check_leave_out, dev_fold, dump_pairs
from export.training_set import devdoc_folds as devdoc_folds  # export.sweep's import
from fairstream.core.schema import REGARD_LABELS
from fairstream.eval import score
from fairstream.models.decision import NO_OFFSETS, regard_decisions
from fairstream.models.encoding import encode_batch
from fairstream.models.labels import LabelledPair, load_labelled_pairs
from fairstream.models.torch_backend import cpu_has_fast_bf16
from fairstream.taxonomy import Taxonomy

logger = logging.getLogger(__name__)


def batches(pairs: list[LabelledPair], batch_size: int, rng: random.Random) -> list[list[LabelledPair]]:
    """Length-bucketed shuffled batches (less padding, still random order)."""
    idx = list(range(len(pairs)))
    rng.shuffle(idx)
    chunks = [idx[i : i + batch_size * 20] for i in range(0, len(idx), batch_size * 20)]
    out = []
    for chunk in chunks:
        chunk.sort(key=lambda i: len(pairs[i].mention.text))
        out += [[pairs[i] for i in chunk[j : j + batch_size]] for j in range(0, len(chunk), batch_size)]
    rng.shuffle(out)
    return out


def tensors(tokenizer, items: list[LabelledPair], max_length: int) -> dict[str, torch.Tensor]:
    feeds = encode_batch(tokenizer, [p.mention for p in items], max_length)
    return {k: torch.from_numpy(v) for k, v in feeds.items()}


def warn_if_bf16_is_emulated(precision: str, device: torch.device | str) -> bool:
    """Warn (and say so) when ``--precision bf16`` would run emulated on this CPU.

    oneDNN has fast bf16 kernels only with AVX-512 or AMX; elsewhere (an AVX2-only CPU) PyTorch
    emulates bfloat16 and an MPNet step took 133 s instead of fp32's 5 s (export/EXPERIMENTS.md,
    session 27), which a user would otherwise find out only from the progress bar.
    """
    if precision != "bf16" or torch.device(device).type != "cpu":
        return False
    if cpu_has_fast_bf16():
        return False
    logger.warning(
        "--precision bf16 on a CPU without fast bf16 kernels (oneDNN needs AVX-512 or AMX; this one "
        "has %s): PyTorch emulates bfloat16 here and a step can take 20x or more the time of fp32; "
        "use --precision fp32 on this machine",
        torch.backends.cpu.get_cpu_capability(),
    )
    return True


@torch.no_grad()
def predict(
    model: JointCrossEncoder,
    tokenizer,
    pairs: list[LabelledPair],
    max_length: int,
    bs: int = 64,
    *,
    logits: bool = False,
):
    """WSD and regard probabilities of ``pairs`` in order (length-sorted batches); raw logits with ``logits``."""
    model.eval()
    device = next(model.parameters()).device
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].mention.text))
    wsd = np.zeros((len(pairs), 3), dtype=np.float32)
    reg = np.zeros((len(pairs), 3), dtype=np.float32)
    for lo in range(0, len(order), bs):
        idx = order[lo : lo + bs]
        feeds = {k: v.to(device) for k, v in tensors(tokenizer, [pairs[i] for i in idx], max_length).items()}
        w, r = model(**feeds)
        if not logits:
            w, r = torch.softmax(w, -1), torch.softmax(r, -1)
        wsd[idx] = w.float().cpu().numpy()
        reg[idx] = r.float().cpu().numpy()
    return wsd, reg


def evaluate(
    wsd_p: np.ndarray,
    reg_p: np.ndarray,
    pairs: list[LabelledPair],
    threshold: float,
    regard_offsets: tuple[float, float, float] = NO_OFFSETS,
) -> dict:
    """Score probabilities with the same metrics and decision rule as ``fairstream eval-models``.

    ``regard_offsets`` are a model's ``regard_logit_offsets`` (default zeros: the plain argmax).
    """
    pred_wsd = ["yes" if w[1] >= threshold else "no" for w in wsd_p]
    pred_regard = regard_decisions(reg_p, regard_offsets)
    return score(pairs, pred_wsd, pred_regard)


def fit(
    encoder: str,
    tokenizer,
    train: list[LabelledPair],
    hp: TrainConfig,
    *,
    device: str = "cpu",
    quiet: bool = False,
    soft: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
    checkpoint: Path | None = None,
    checkpoint_every: int = 0,
) -> tuple[JointCrossEncoder, int]:
    """Fine-tune a fresh joint model on ``train`` with the recipe ``hp``; returns it (on ``device``) and the step count.

    With ``checkpoint`` (a folder) and ``checkpoint_every`` > 0 the fit saves its whole state every that
    many steps and, when the folder already holds this run's checkpoint, goes on from it: an interrupted
    fit resumed on the same thread count ends with the weights the uninterrupted one would have.

    ``soft`` (index into ``train`` -> a teacher's WSD and regard logits) turns on distillation: see
    ``export.losses.distilled_loss``. Pairs without gold labels (``wsd == ""``, from a distillation pool) then
    train on the teacher's labels only. Without ``soft`` the loss is exactly the joint-v2 recipe's.
    """
    torch.manual_seed(hp.seed)
    model = JointCrossEncoder(
        encoder, dropout=hp.dropout, pooling=hp.pooling, encoder_layers=hp.encoder_layers
    ).to(device)
    # class weights: rare regard classes (negative, positive) count more, capped to stay stable
    reg_counts = np.array([sum(p.regard == r for p in train) for r in REGARD_LABELS], dtype=np.float64)
    reg_w = torch.tensor(
        np.clip(reg_counts.sum() / (3 * np.maximum(reg_counts, 1)), 0.5, 4.0), dtype=torch.float32
    ).to(device)
    logger.info("regard counts %s weights %s", reg_counts.tolist(), reg_w.tolist())
    soft_of = {id(train[i]): v for i, v in (soft or {}).items()}
    rng = random.Random(hp.seed)
    steps_per_epoch = math.ceil(len(train) / hp.batch_size)
    total = int(steps_per_epoch * hp.epochs)
    opt = torch.optim.AdamW(model.parameters(), lr=hp.lr, weight_decay=0.01)
    warm = max(1, total // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    warn_if_bf16_is_emulated(hp.precision, device)
    # bf16 autocast keeps fp32 master weights, so the saved model and its export are as with fp32
    autocast = torch.autocast(
        device_type=torch.device(device).type, dtype=torch.bfloat16, enabled=hp.precision == "bf16"
    )
    step, skip, spent = 0, 0, 0.0
    fingerprint = training_fingerprint(hp.to_dict(), train, soft) if checkpoint is not None else ""
    state = load_checkpoint(checkpoint, fingerprint) if checkpoint is not None else None
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        if state.get("cuda_rng") is not None and torch.device(device).type == "cuda":
            torch.cuda.set_rng_state(state["cuda_rng"], device)
        rng.setstate(state["epoch_rng"])
        step, skip, spent = state["step"], state["index_in_epoch"], state["seconds"]
        logger.info("resuming %s at step %d of %d", checkpoint, step, total)
    started = time.time()
    bar = tqdm(total=total, initial=step, desc="train", unit="step", disable=quiet)
    while step < total:
        # the epoch's batch order is drawn from the RNG as it is now: a checkpoint keeps this state
        epoch_rng = rng.getstate()
        for index, batch in enumerate(batches(train, hp.batch_size, rng)):
            if index < skip:
                continue
            if step >= total:
                break
            model.train()
            feeds = {k: v.to(device) for k, v in tensors(tokenizer, batch, hp.max_length).items()}
            with autocast:
                w_logits, r_logits = model(**feeds)
            # losses in fp32 whatever the forward pass ran in
            w_logits, r_logits = w_logits.float(), r_logits.float()
            if soft is not None:
                loss = distilled_loss(w_logits, r_logits, batch, soft_of, reg_w, hp)
            else:
                loss = gold_loss(w_logits, r_logits, batch, reg_w, hp)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            bar.update(1)
            if step % 50 == 0:
                bar.set_postfix(loss=f"{loss.item():.3f}")
            if (
                checkpoint is not None
                and checkpoint_every > 0
                and step % checkpoint_every == 0
                and step < total
            ):
                seconds = spent + time.time() - started
                save_checkpoint(
                    checkpoint,
                    {
                        "model": model.state_dict(),
                        "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(),
                        "torch_rng": torch.get_rng_state(),
                        "cuda_rng": (
                            torch.cuda.get_rng_state(device) if torch.device(device).type == "cuda" else None
                        ),
                        "epoch_rng": epoch_rng,
                        "index_in_epoch": index + 1,
                        "step": step,
                        "seconds": seconds,
                    },
                    {
                        "step": step,
                        "total_steps": total,
                        "seconds": round(seconds, 1),
                        "fingerprint": fingerprint,
                    },
                )
        skip = 0
    bar.close()
    return model, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--encoder", required=True, help="local Hugging Face encoder folder (MiniLM, roberta-base, ...)"
    )
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--labels-dir", type=Path, default=Path("export/labels"))
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    ap.add_argument("--dev", type=Path, default=Path("../shared/data/labels/dev.jsonl"))
    ap.add_argument(
        "--sheng", type=Path, default=Path("../shared/data/bias/nlg_bias_regard/regard/train.tsv")
    )
    ap.add_argument("--shared", type=Path, default=Path("../shared"), help="for export/labels/bias-*.jsonl")
    ap.add_argument(
        "--packages",
        type=Path,
        default=Path("runs/packages"),
        help="the wheels export/labels/text-*.jsonl point into (python export/tools/fetch_text_sources.py)",
    )
    ap.add_argument(
        "--without-text-labels",
        action="store_true",
        help="leave out export/labels/text-*.jsonl (rounds 6, 8, 9, 10)",
    )
    ap.add_argument(
        "--leave-out",
        action="append",
        default=[],
        metavar="FILE",
        help="a label file of --labels-dir not to train on, by name (repeatable), e.g. text-r9.jsonl to "
        "rebuild joint-v3, which predates round 9",
    )
    ap.add_argument(
        "--max-round",
        type=int,
        metavar="N",
        help="leave out every label file of a labelling round after N (its records' round field: the "
        "real-text rounds 6, 8, 9, ...), so a model rebuilds as it was before later rounds, e.g. 10 for "
        "joint-v5; files without a round (corpus, written, dev) are always read",
    )
    ap.add_argument(
        "--with-bias-labels",
        action="store_true",
        help="also train on export/labels/bias-*.jsonl (CrowS-Pairs/StereoSet; no dev gain measured)",
    )
    ap.add_argument(
        "--new-keywords-split",
        type=Path,
        metavar="SPLIT",
        help="also train on export/labels/v2keywords-*.jsonl, the pairs of SPLIT's train keywords only "
        "(export/labels/taxonomy-v2-split.json: its heldout half stays out of training)",
    )
    ap.add_argument(
        "--with-dev-documents",
        action="store_true",
        help="also train on export/labels/devdocs-*.jsonl where no dev item of their document is evaluated "
        "(no dev gain measured)",
    )
    ap.add_argument(
        "--pairs", type=Path, help="train on this materialized file (see --dump-pairs) instead of building"
    )
    ap.add_argument(
        "--dump-pairs", type=Path, help="write the resolved training pairs (with text) here and exit"
    )
    ap.add_argument(
        "--counterfactual",
        type=int,
        default=0,
        help="add N copies of each person mention with the keyword swapped within its class",
    )
    ap.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1, ...")
    ap.add_argument("--include-dev", action="store_true")
    ap.add_argument("--eval-dev", action="store_true")
    ap.add_argument(
        "--dev-folds", type=int, default=0, help="cross-validation: train on the other dev folds too"
    )
    ap.add_argument(
        "--fold", type=int, default=0, help="with --dev-folds: the dev fold held out and evaluated"
    )
    ap.add_argument(
        "--soft-labels",
        type=Path,
        action="append",
        default=[],
        help="a teacher's logits (python -m export.distill): train by distillation (repeatable: the files "
        "read as their concatenation, a later file's pair replacing an earlier one's)",
    )
    ap.add_argument(
        "--distill-pool",
        type=Path,
        action="append",
        default=[],
        help="unlabelled mentions to train on the teacher's labels only (repeatable; needs --soft-labels)",
    )
    TrainConfig.add_arguments(ap)  # --epochs, --lr, --regard-weight, ...: the shipped recipe's defaults
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--checkpoint-every",
        type=int,
        default=500,
        help="save a resumable checkpoint in --out every this many steps (0: never); rerunning the same "
        "command goes on from it (same --threads for bit-identical weights)",
    )
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(args.threads)
    taxonomy = Taxonomy.default()
    check_leave_out(args)
    train = load_labelled_pairs(args.pairs) if args.pairs else build_training_set(args, taxonomy)
    if args.distill_pool and not args.soft_labels:
        ap.error("--distill-pool needs --soft-labels (the teacher's labels of the pool)")
    soft = None
    if args.soft_labels:
        from export.distill import attach_soft_labels, load_pool, load_soft_labels

        for pool in args.distill_pool:
            train += load_pool(pool)
        soft = attach_soft_labels(train, load_soft_labels(args.soft_labels))
        unlabelled = [i for i, p in enumerate(train) if not p.wsd and i not in soft]
        if unlabelled:
            ap.error(
                f"--distill-pool: {len(unlabelled)} pool mentions have no teacher label in --soft-labels"
            )
    if args.dump_pairs:
        dump_pairs(train, args.dump_pairs)
        logger.info("wrote %d pairs to %s", len(train), args.dump_pairs)
        return
    dev = load_labelled_pairs(args.dev, {a.keyword: a.forms for a in taxonomy}) if args.eval_dev else []
    if args.dev_folds:
        dev = [p for p in dev if dev_fold(p.uid, args.dev_folds) == args.fold]
    logger.info("training pairs: %d (dev held out: %d)", len(train), len(dev))
    hf_tok = AutoTokenizer.from_pretrained(args.encoder, use_fast=True)
    tokenizer = hf_tok.backend_tokenizer
    tokenizer.no_truncation()
    tokenizer.no_padding()
    if args.checkpoint_every < 0:
        ap.error(f"--checkpoint-every must be >= 0 (0 turns checkpoints off), got {args.checkpoint_every}")
    resumed = read_progress(args.out) if args.checkpoint_every else None
    t0 = time.time()
    model, total = fit(
        args.encoder,
        tokenizer,
        train,
        TrainConfig.from_mapping(args),
        device=args.device,
        soft=soft,
        checkpoint=args.out if args.checkpoint_every else None,
        checkpoint_every=args.checkpoint_every,
    )
    # a resumed fit's time includes the interrupted runs' training time up to the checkpoint
    train_s = time.time() - t0 + (resumed["seconds"] if resumed else 0.0)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), args.out / "model.pt")
    hf_tok.save_pretrained(args.out / "tokenizer")
    model.cpu()
    model.encoder.config.save_pretrained(args.out / "encoder_config")  # type: ignore[union-attr,operator]
    soft_files = [str(p) for p in args.soft_labels]
    meta = {
        "encoder": str(args.encoder),
        "max_length": args.max_length,
        "seed": args.seed,
        "epochs": args.epochs,
        "lr": args.lr,
        "batch_size": args.batch_size,
        "n_train": len(train),
        "train_seconds": round(train_s, 1),
        "resumed_from_step": resumed["step"] if resumed else None,
        "examples_per_second": round(total * args.batch_size / train_s, 1),
        "include_dev": args.include_dev,
        "dev_folds": args.dev_folds,
        "fold": args.fold,
        "regard_weight": args.regard_weight,
        "pooling": args.pooling,
        "encoder_layers": args.encoder_layers,  # 0: all of the encoder's layers
        "precision": args.precision,
        "left_out_label_files": sorted(args.leave_out),
        "max_round": args.max_round,
        "new_keywords_split": str(args.new_keywords_split) if args.new_keywords_split else None,
        # one file as a string (as every earlier config records it), several as a list, none as None
        "soft_labels": soft_files[0] if len(soft_files) == 1 else soft_files or None,
        "soft_labelled_pairs": len(soft) if soft is not None else 0,
        "distill_pool": [str(p) for p in args.distill_pool],
        "distill_weight": args.distill_weight if soft is not None else None,
        "temperature": args.temperature if soft is not None else None,
        # lets `fairstream eval-models` say when it scores a model on its own training labels
        "label_files_sha256": (
            [hashlib.sha256(args.dev.read_bytes()).hexdigest()] if args.include_dev or args.dev_folds else []
        ),
        "train_sources": {s: sum(p.source == s for p in train) for s in sorted({p.source for p in train})},
    }
    if dev:
        wsd_p, reg_p = predict(model, tokenizer, dev, args.max_length)
        np.save(args.out / "dev_wsd.npy", wsd_p)
        np.save(args.out / "dev_regard.npy", reg_p)
        best = max((evaluate(wsd_p, reg_p, dev, t)["wsd_kappa"], t) for t in np.arange(0.2, 0.81, 0.05))
        meta["dev_at_0.5"] = evaluate(wsd_p, reg_p, dev, 0.5)
        meta["dev_best_threshold"] = round(float(best[1]), 2)
        meta["dev_at_best"] = evaluate(wsd_p, reg_p, dev, best[1])
        logger.info("dev: %s", json.dumps(meta["dev_at_0.5"]))
        logger.info("dev best threshold %.2f: %s", best[1], json.dumps(meta["dev_at_best"]))
    (args.out / "train_meta.json").write_text(json.dumps(meta, indent=2))
    remove_checkpoint(args.out)


if __name__ == "__main__":
    main()
