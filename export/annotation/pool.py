"""Step ``pool``: split unlabelled candidates by whole document into a distillation pool and unseen text.

Documents that any ``exclude`` file points at (labelled rounds, hold-outs, parity sets) are left out
of both. Of the rest, whole documents (source, doc_id) go, in a seeded random order per pool (forum,
wiki, web, ...), to the distillation pool until it holds its share of ``n_distill`` mentions
(``mix``), and the others to the unseen set, so no document feeds both: the student learns the
teacher's soft labels on the first; the second stays text no model trained on (parity, agreement on
unseen text). Each record gets ``uid`` ``<uid_prefix><cid:05d>``. With ``n_distill`` 0 this is a
filter: the unseen file is the input less the excluded documents (round 6's larger pool).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from export.annotation.records import AnnotationError, doc_key, labelled_keys

logger = logging.getLogger(__name__)


def parse_mix(spec: str) -> dict[str, float]:
    """``"forum=2,wiki=1,web=1"`` -> shares per pool."""
    out: dict[str, float] = {}
    for part in filter(None, spec.split(",")):
        name, sep, value = part.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise AnnotationError(f"--mix {spec!r}: expected POOL=SHARE[,POOL=SHARE...]") from None
    if not out or any(v < 0 for v in out.values()) or sum(out.values()) <= 0:
        raise AnnotationError(f"--mix {spec!r}: shares must be >= 0 with a positive sum")
    return out


def split_pool(
    candidates: list[dict[str, Any]],
    exclude: Iterable[str | Path],
    n_distill: int,
    mix: dict[str, float],
    seed: int,
    uid_prefix: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(distillation pool, unseen set); see the module docstring."""
    if n_distill < 0:
        raise AnnotationError(f"--distill {n_distill}: must be >= 0")
    _, banned = labelled_keys(exclude)
    docs: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    n_left_out = 0
    for c in candidates:
        key = doc_key(c)
        if key is None:
            raise AnnotationError(f"candidate {c.get('cid')!r} names no source and doc_id")
        if key in banned:
            n_left_out += 1
            continue
        docs.setdefault(c["pool"], {}).setdefault(key, []).append(c)
    rng = random.Random(seed)
    total = sum(mix.values())
    distill: list[dict[str, Any]] = []
    unseen: list[dict[str, Any]] = []
    for pool in sorted(docs):
        quota = round(n_distill * mix.get(pool, 0) / total)
        keys = sorted(docs[pool])
        rng.shuffle(keys)
        taken = 0
        for key in keys:
            items = [{**c, "uid": f"{uid_prefix}{c['cid']:05d}"} for c in docs[pool][key]]
            if taken < quota:
                distill += items
                taken += len(items)
            else:
                unseen += items
    logger.info("%d mentions in excluded documents left out", n_left_out)
    return distill, unseen
