"""Step 2, ``select``: choose which candidates annotators read, seeded, spread by caps.

Left out first: mentions that a label file already holds (``exclude_labelled``), every mention of a
document that an ``exclude_documents`` file points at (hold-outs, judges, dev documents, parity
sets), and candidates of ``dev_documents``. Then the quotas are filled in order, each by one reason
(an item gets the first reason that takes it; places a reason cannot fill pass to the next):

* ``model-negative``: the model calls the mention a person (P(wsd=yes) >= 0.5) with negative regard
  (argmax); highest P(negative) x P(yes) first (2 decimals, ties in seeded random order);
* ``uncertain``: most uncertain first: max(1 - |2 P(yes) - 1|, regard entropy / ln 3 where P(yes) >= 0.3);
* ``disagree``: two or more models' decisions (person, and person with negative regard) differ;
  largest gap first;
* ``random``: a seeded random order.

With several score files the first two reasons read the models' mean. Scores only choose what is
read; annotators never see them. Caps keep the sample spread: per (document, keyword), per document,
and per reason a share (or a number) of its quota for one keyword and a share for one pool. The
chosen items are shuffled and numbered ``<prefix>00001`` ...
"""

from __future__ import annotations

import collections
import logging
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from export.annotation.records import (
    STANDOFF_FIELDS,
    AnnotationError,
    doc_key,
    labelled_keys,
    mention_key,
    read_records,
)

logger = logging.getLogger(__name__)

REASONS = ("model-negative", "uncertain", "disagree", "random")
SCORED_REASONS = ("model-negative", "uncertain", "disagree")


def parse_quota(spec: str) -> tuple[str, int | None]:
    """``"REASON=N"`` (``N`` may be ``all``) -> (reason, N or None)."""
    reason, sep, n = spec.partition("=")
    if reason not in REASONS or not sep:
        raise AnnotationError(f"--quota {spec!r}: expected REASON=N with REASON one of {REASONS}")
    if n == "all":
        return reason, None
    try:
        value = int(n)
    except ValueError:
        raise AnnotationError(f"--quota {spec!r}: N must be an integer >= 0 or 'all'") from None
    if value < 0:
        raise AnnotationError(f"--quota {spec!r}: N must be >= 0")
    return reason, value


@dataclass(frozen=True)
class Caps:
    """How spread a selection must be (None: no cap)."""

    per_doc: int | None = 3
    per_doc_keyword: int | None = 2
    per_keyword: int | None = None  # mentions of one keyword per reason
    keyword_share: float = 1.0  # of a reason's quota, for one keyword
    pool_share: float = 1.0  # of a reason's quota, for one pool

    def __post_init__(self) -> None:
        for name in ("per_doc", "per_doc_keyword", "per_keyword"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise AnnotationError(f"--{name.replace('_', '-')} {value}: must be >= 1")
        for name in ("keyword_share", "pool_share"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise AnnotationError(f"--{name.replace('_', '-')} {value}: must be in (0, 1]")


def read_scores(paths: Iterable[str | Path]) -> list[dict[int, dict[str, Any]]]:
    """One ``cid -> {"p_wsd_yes", "p_regard", "model"}`` map per file (``p_regard``: negative, neutral, positive)."""
    out = []
    for path in paths:
        scores: dict[int, dict[str, Any]] = {}
        for i, rec in enumerate(read_records(path), 1):
            if not {"cid", "p_wsd_yes", "p_regard"} <= set(rec) or len(rec["p_regard"]) != 3:
                raise AnnotationError(
                    f"{path}: record {i} needs cid, p_wsd_yes and p_regard (3 probabilities)"
                )
            scores[int(rec["cid"])] = rec
        out.append(scores)
    return out


def _entropy(p: list[float]) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


class Selector:
    """Fill the quotas from the candidates (see the module docstring); owns its seeded RNG."""

    def __init__(
        self, candidates: list[dict[str, Any]], scores: list[dict[int, dict[str, Any]]], caps: Caps, seed: int
    ):
        self.cands = {int(c["cid"]): c for c in candidates}
        self.scores, self.caps, self.seed = scores, caps, seed
        for k, s in enumerate(scores):
            missing = set(self.cands) - set(s)
            if missing:
                raise AnnotationError(
                    f"--scores file {k + 1}: {len(missing)} candidates not scored, e.g. cid {min(missing)}"
                )
        self.chosen: dict[int, str] = {}
        self.per_doc: collections.Counter[tuple[str, str]] = collections.Counter()
        self.per_doc_kw: collections.Counter[tuple[str, str, str]] = collections.Counter()

    def p_yes(self, cid: int) -> float:
        """P(wsd = yes), the models' mean."""
        return sum(s[cid]["p_wsd_yes"] for s in self.scores) / len(self.scores)

    def p_regard(self, cid: int) -> list[float]:
        """P(regard) (negative, neutral, positive), the models' mean."""
        return [sum(s[cid]["p_regard"][k] for s in self.scores) / len(self.scores) for k in range(3)]

    def _order(self, reason: str) -> list[int]:
        cids = sorted(self.cands)
        random.Random(self.seed).shuffle(cids)
        if reason == "random":
            return cids
        if not self.scores:
            raise AnnotationError(f"--quota {reason}=...: needs --scores (one file per model)")
        if reason == "model-negative":
            neg = [c for c in cids if self.p_yes(c) >= 0.5 and self.p_regard(c)[0] == max(self.p_regard(c))]
            return sorted(neg, key=lambda c: -round(self.p_regard(c)[0] * self.p_yes(c), 2))
        if reason == "uncertain":

            def uncertainty(c: int) -> float:
                reg = _entropy(self.p_regard(c)) / math.log(3) if self.p_yes(c) >= 0.3 else 0.0
                return max(1 - abs(2 * self.p_yes(c) - 1), reg)

            return sorted(cids, key=lambda c: -round(uncertainty(c), 2))
        if len(self.scores) < 2:
            raise AnnotationError("--quota disagree=...: needs two or more --scores files")

        def gap(c: int) -> float:
            yes = [s[c]["p_wsd_yes"] for s in self.scores]
            neg = [s[c]["p_wsd_yes"] * s[c]["p_regard"][0] for s in self.scores]
            return max(max(neg) - min(neg), max(yes) - min(yes))

        def decisions(c: int) -> set[tuple[bool, bool]]:
            return {
                (
                    s[c]["p_wsd_yes"] >= 0.5,
                    s[c]["p_wsd_yes"] >= 0.5 and s[c]["p_regard"][0] == max(s[c]["p_regard"]),
                )
                for s in self.scores
            }

        return sorted([c for c in cids if len(decisions(c)) > 1], key=lambda c: -round(gap(c), 2))

    def take(self, reason: str, quota: int | None) -> int:
        """Fill ``quota`` (None: no limit) places with ``reason``; returns how many stayed empty."""
        order = self._order(reason)
        limit = len(order) if quota is None else quota
        caps = self.caps
        kw_cap = max(1, int(caps.keyword_share * limit))
        if caps.per_keyword is not None:
            kw_cap = min(kw_cap, caps.per_keyword)
        pool_cap = max(1, int(caps.pool_share * limit))
        per_kw: collections.Counter[str] = collections.Counter()
        per_pool: collections.Counter[str] = collections.Counter()
        n = 0
        for cid in order:
            if n >= limit:
                break
            c = self.cands[cid]
            d = doc_key(c)
            if d is None:
                raise AnnotationError(f"candidate {cid}: names no source and doc_id")
            dk = (*d, c["keyword"])
            if (
                cid in self.chosen
                or per_kw[c["keyword"]] >= kw_cap
                or per_pool[c.get("pool", "")] >= pool_cap
            ):
                continue
            if (caps.per_doc is not None and self.per_doc[d] >= caps.per_doc) or (
                caps.per_doc_keyword is not None and self.per_doc_kw[dk] >= caps.per_doc_keyword
            ):
                continue
            self.chosen[cid] = reason
            self.per_doc[d] += 1
            self.per_doc_kw[dk] += 1
            per_kw[c["keyword"]] += 1
            per_pool[c.get("pool", "")] += 1
            n += 1
        return 0 if quota is None else quota - n

    def run(self, quotas: list[tuple[str, int | None]]) -> list[int]:
        """Fill the quotas in order; the chosen cids in their final (seeded, shuffled) order."""
        left = 0
        for reason, quota in quotas:
            left = self.take(reason, None if quota is None else quota + left)
        chosen = sorted(self.chosen)
        random.Random(self.seed + 1).shuffle(chosen)
        return chosen

    def record(self, cid: int, uid: str) -> dict[str, Any]:
        """The selected item: uid, stand-off fields, pool, reason and (if scored) the scores read."""
        c = self.cands[cid]
        rec: dict[str, Any] = {"uid": uid, "cid": cid, **{k: c[k] for k in STANDOFF_FIELDS}}
        rec.update(pool=c.get("pool", ""), selected_as=self.chosen[cid])
        if self.scores:
            rec["p_wsd_yes"] = round(self.p_yes(cid), 5)
            rec["p_regard"] = [round(x, 5) for x in self.p_regard(cid)]
            rec["models"] = [s[cid].get("model", "") for s in self.scores]
        return rec


def exclude(
    candidates: list[dict[str, Any]],
    labelled: Iterable[str | Path],
    documents: Iterable[str | Path],
    is_dev_document: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[list[dict[str, Any]], collections.Counter[str]]:
    """The candidates left after the exclusions, and how many each one removed."""
    mentions, _ = labelled_keys(labelled)
    _, docs = labelled_keys(documents)
    counts: collections.Counter[str] = collections.Counter()
    kept = []
    for c in candidates:
        if mention_key(c) in mentions:
            counts["labelled mention"] += 1
        elif doc_key(c) in docs:
            counts["excluded document"] += 1
        elif is_dev_document is not None and is_dev_document(c):
            counts["dev document"] += 1
        else:
            kept.append(c)
    return kept, counts


def split_keywords(spec: str) -> set[str]:
    """The keywords of ``SPLIT.json:HALF`` (e.g. ``export/labels/taxonomy-v2-split.json:train``)."""
    import json

    path, sep, half = spec.rpartition(":")
    if not sep or not path:
        raise AnnotationError(
            f"--keywords-of {spec!r}: expected SPLIT.json:HALF, e.g. taxonomy-v2-split.json:train"
        )
    try:
        split = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AnnotationError(f"--keywords-of {spec!r}: cannot read {path} ({exc})") from None
    halves = sorted(k for k, v in split.items() if isinstance(v, list))
    if half not in halves:
        raise AnnotationError(
            f"--keywords-of {spec!r}: {path} has no half {half!r}; its halves: {', '.join(halves)}"
        )
    return set(split[half])


def folded(text: str) -> str:
    """A sentence as compared for ``--exclude-same-text``: whitespace folded, lower case."""
    return " ".join(text.split()).lower()


def restrict(
    candidates: list[dict[str, Any]],
    keywords: set[str] | None,
    texts: set[str],
    sentence: Callable[[dict[str, Any]], str],
) -> tuple[list[dict[str, Any]], collections.Counter[str]]:
    """Candidates of ``keywords`` only (None: all) whose folded sentence is none of ``texts``.

    Why the text: the same sentence stands in several documents of forum and web text, so leaving out
    a label file's documents does not keep its sentences out of a judge drawn from the rest.
    """
    counts: collections.Counter[str] = collections.Counter()
    kept = []
    for c in candidates:
        if keywords is not None and c["keyword"] not in keywords:
            counts["keyword not asked for"] += 1
        elif texts and folded(sentence(c)) in texts:
            counts["same sentence as a label"] += 1
        else:
            kept.append(c)
    return kept, counts
