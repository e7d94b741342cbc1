"""Knowledge distillation: a large teacher's logits as soft labels for the small default model.

    # 1. the teacher's logits on the training pairs and on unlabelled real mentions
    python -m export.distill --teacher runs/teacher-mpnet-s0 --out runs/distill/soft.jsonl \
        [--pool runs/round6/candidates.jsonl ...]
    # 2. a student trained on gold + soft labels (see export/train.py --soft-labels)
    python -m export.train --encoder $MINILM --out runs/student --eval-dev \
        --soft-labels runs/distill/soft.jsonl [--distill-pool runs/round6/candidates.jsonl] \
        --distill-weight 0.5 --temperature 2

The soft-label file holds one line per pair: ``uid``, ``text_sha1`` (of the sentence and keyword span,
so a pair whose text changed, e.g. a Sheng sentence filled under another seed, falls back to its gold
labels), ``wsd_logits`` and ``regard_logits`` (raw, temperature 1). It holds no third-party text.
Pool files hold unlabelled mentions with their text (keep them under ``runs/``): ``uid``, ``text``,
``keyword``, ``gloss``, ``class`` and the keyword's character offsets, either into ``text``
(``kw_start``/``kw_end``) or into the document with ``sent_start`` giving where ``text`` begins.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer

from export.modeling import JointCrossEncoder
from fairstream.errors import FairStreamError
from fairstream.models.encoding import MentionInput, encode_batch
from fairstream.models.labels import LabelledPair

logger = logging.getLogger(__name__)


def pair_key(pair: LabelledPair) -> str:
    """Hash of what the model reads of a pair (sentence and keyword span)."""
    m = pair.mention
    return hashlib.sha1(f"{m.start}:{m.end}:{m.keyword}:{m.text}".encode()).hexdigest()


def load_pool(path: str | Path) -> list[LabelledPair]:
    """Unlabelled mentions (``wsd`` = "") from a pool file; see the module docstring for the schema."""
    path = Path(path)
    if not path.is_file():
        raise FairStreamError(f"{path}: pool file not found")
    out = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
                text = rec["text"]
                offset = rec.get("sent_start", 0)
                start, end = rec["kw_start"] - offset, rec["kw_end"] - offset
                keyword, gloss = rec["keyword"], rec["gloss"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise FairStreamError(
                    f"{where}: not a pool record ({exc}); expected uid, text, keyword, gloss, kw_start, kw_end"
                ) from None
            if not 0 <= start < end <= len(text):
                raise FairStreamError(f"{where}: keyword offsets {start}..{end} fall outside the text")
            out.append(
                LabelledPair(
                    uid=str(rec.get("uid", f"{path.name}:{lineno}")),
                    mention=MentionInput(text, start, end, keyword, gloss),
                    attribute_class=rec.get("class", ""),
                    wsd="",
                    regard=None,
                    source=f"pool-{path.stem}",
                )
            )
    return out


def load_soft_labels(
    paths: str | Path | Sequence[str | Path],
) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """(uid, text_sha1) -> (wsd logits, regard logits), from one file or several.

    Several files read as their concatenation: a pair in a later file replaces the same pair in an
    earlier one (a teacher's logits on a new label round added to its earlier file).
    """
    out = {}
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        path = Path(path)
        if not path.is_file():
            raise FairStreamError(f"{path}: soft-label file not found; make it with python -m export.distill")
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    wsd = np.asarray(rec["wsd_logits"], dtype=np.float32)
                    reg = np.asarray(rec["regard_logits"], dtype=np.float32)
                    out[(str(rec["uid"]), str(rec["text_sha1"]))] = (wsd, reg)
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise FairStreamError(f"{path}:{lineno}: not a soft-label record ({exc})") from None
                if wsd.shape != (3,) or reg.shape != (3,):
                    raise FairStreamError(f"{path}:{lineno}: wsd_logits and regard_logits need 3 values each")
    return out


def attach_soft_labels(
    pairs: list[LabelledPair], soft: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Index of ``pairs`` -> teacher logits, for pairs whose uid and text match; logs the misses."""
    out = {}
    for i, p in enumerate(pairs):
        hit = soft.get((p.uid, pair_key(p)))
        if hit is not None:
            out[i] = hit
    logger.info("soft labels: %d of %d pairs (the others train on gold labels only)", len(out), len(pairs))
    return out


def load_run(run: Path, device: str = "cpu") -> tuple[JointCrossEncoder, object, int]:
    """A run folder of ``export.train``: model, fast tokenizer (no truncation/padding), max length."""
    for need in ("model.pt", "encoder_config", "tokenizer", "train_meta.json"):
        if not (run / need).exists():
            raise FairStreamError(f"{run}: no {need}; pass a run folder written by python -m export.train")
    meta = json.loads((run / "train_meta.json").read_text())
    model = JointCrossEncoder.from_run(run).to(device)
    tokenizer = AutoTokenizer.from_pretrained(run / "tokenizer", use_fast=True).backend_tokenizer
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return model, tokenizer, int(meta["max_length"])


@torch.no_grad()
def teacher_logits(
    model: JointCrossEncoder, tokenizer, pairs: list[LabelledPair], max_length: int, bs: int = 32
) -> tuple[np.ndarray, np.ndarray]:
    """Raw WSD and regard logits of every pair (length-sorted batches, original order back)."""
    from tqdm import tqdm

    device = next(model.parameters()).device
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].mention.text))
    wsd = np.zeros((len(pairs), 3), dtype=np.float32)
    reg = np.zeros((len(pairs), 3), dtype=np.float32)
    for lo in tqdm(range(0, len(order), bs), desc="teacher", unit="batch"):
        idx = order[lo : lo + bs]
        feeds = encode_batch(tokenizer, [pairs[i].mention for i in idx], max_length)
        w, r = model(**{k: torch.from_numpy(v).to(device) for k, v in feeds.items()})
        wsd[idx] = w.float().cpu().numpy()
        reg[idx] = r.float().cpu().numpy()
    return wsd, reg


def distillation_loss(student: torch.Tensor, teacher: torch.Tensor, temperature: float) -> torch.Tensor:
    """Per-row KL(teacher || student) at ``temperature``, scaled by T^2 (Hinton et al.) so gradients keep their size."""
    t = temperature
    log_p_student = torch.log_softmax(student / t, dim=-1)
    p_teacher = torch.softmax(teacher / t, dim=-1)
    kl = (p_teacher * (torch.log(p_teacher.clamp_min(1e-12)) - log_p_student)).sum(-1)
    return kl * t * t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--teacher", type=Path, required=True, help="run folder of the teacher (export.train --out)"
    )
    ap.add_argument("--out", type=Path, required=True, help="soft-label file to write (jsonl)")
    ap.add_argument("--pool", type=Path, action="append", default=[], help="unlabelled mentions (repeatable)")
    ap.add_argument(
        "--no-training-set", action="store_true", help="label only the pool, not the training pairs"
    )
    ap.add_argument("--labels-dir", type=Path, default=Path("export/labels"))
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/corpus"))
    ap.add_argument("--dev", type=Path, default=Path("../shared/data/labels/dev.jsonl"))
    ap.add_argument(
        "--sheng", type=Path, default=Path("../shared/data/bias/nlg_bias_regard/regard/train.tsv")
    )
    ap.add_argument("--shared", type=Path, default=Path("../shared"))
    ap.add_argument("--packages", type=Path, default=Path("runs/packages"))
    ap.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1], help="Sheng fills of these training seeds"
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    from export.training_set import build_training_set
    from fairstream.taxonomy import Taxonomy

    pairs: list[LabelledPair] = []
    if not args.no_training_set:
        taxonomy = Taxonomy.default()
        seen: set[str] = set()
        for seed in args.seeds:  # Sheng sentences are filled per seed: label each seed's fill
            ns = argparse.Namespace(
                **vars(args),
                seed=seed,
                with_dev_documents=False,
                with_bias_labels=False,
                dump_pairs=None,
                include_dev=False,
                dev_folds=0,
                fold=0,
                counterfactual=0,
            )
            for p in build_training_set(ns, taxonomy):
                key = p.uid + pair_key(p)
                if key not in seen:
                    seen.add(key)
                    pairs.append(p)
    for pool in args.pool:
        pairs += load_pool(pool)
    model, tokenizer, max_length = load_run(args.teacher, args.device)
    logger.info("teacher %s: %d pairs, max length %d", args.teacher, len(pairs), max_length)
    t0 = time.time()
    wsd, reg = teacher_logits(model, tokenizer, pairs, max_length, args.batch_size)
    logger.info("%.1f pairs/s", len(pairs) / (time.time() - t0))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(args.out.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for p, w, r in zip(pairs, wsd, reg, strict=True):
            rec = {
                "uid": p.uid,
                "text_sha1": pair_key(p),
                "source": p.source,
                "wsd_logits": [round(float(x), 4) for x in w],
                "regard_logits": [round(float(x), 4) for x in r],
            }
            f.write(json.dumps(rec) + "\n")
    tmp.replace(args.out)
    logger.info("wrote %s", args.out)


if __name__ == "__main__":
    main()
