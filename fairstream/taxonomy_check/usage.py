"""Keyword usage on shards: hits per MB and what the model makes of each keyword (``keyword_usage``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairstream.errors import option
from fairstream.taxonomy import Taxonomy
from fairstream.taxonomy_check.problems import Problem

if TYPE_CHECKING:
    from fairstream.core.config import FilterConfig
    from fairstream.stream.tagger import MentionModel

logger = logging.getLogger(__name__)


#: P(yes) in [UNSURE_LOW, UNSURE_HIGH]: the model is unsure whether the mention refers to a person
UNSURE_LOW, UNSURE_HIGH = 0.2, 0.8
#: a keyword whose unsure share is above this (with at least MIN_JUDGED_UNSURE judged mentions) is flagged
UNSURE_SHARE_ABOVE = 0.3
MIN_JUDGED_UNSURE = 5
#: a keyword whose person share is below this (with at least MIN_JUDGED_PERSON judged mentions) is flagged
PERSON_SHARE_BELOW = 0.1
MIN_JUDGED_PERSON = 20
DEFAULT_MAX_DOCS = 2000
DEFAULT_MAX_MENTIONS_PER_KEYWORD = 200
_JUDGE_AT = 512  # new mentions collected before they are judged in one model call


# -- keyword usage on shards ------------------------------------------------------------------------
@dataclass
class KeywordUsage:
    """How often one keyword is found in the documents read, and what the model makes of it."""

    keyword: str
    attribute_class: str
    hits: int = 0  # every whole-word match
    candidates: int = 0  # matches in sentences that pass the length filter (what the filter judges)
    judged: int = 0  # candidates judged here (the first ``max_mentions_per_keyword``)
    person: int = 0  # judged mentions with P(yes) >= the model's threshold
    unsure: int = 0  # judged mentions with UNSURE_LOW <= P(yes) <= UNSURE_HIGH
    hits_per_mb: float = 0.0

    @property
    def person_share(self) -> float | None:
        """Share of the judged mentions judged to refer to a person (None: none judged)."""
        return self.person / self.judged if self.judged else None

    @property
    def unsure_share(self) -> float | None:
        """Share of the judged mentions the model is unsure of (None: none judged)."""
        return self.unsure / self.judged if self.judged else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, shares included (rounded to 4 digits)."""
        out: dict[str, Any] = asdict(self)
        out["hits_per_mb"] = round(self.hits_per_mb, 3)
        for name in ("person_share", "unsure_share"):
            value = getattr(self, name)
            out[name] = None if value is None else round(value, 4)
        return out


@dataclass
class UsageReport:
    """What ``keyword_usage`` read and found."""

    taxonomy: str
    model: str
    documents: int
    text_bytes: int  # UTF-8 bytes of the documents' text
    shards: int
    keywords: list[KeywordUsage]
    max_docs: int
    max_mentions_per_keyword: int
    skipped: list[str] = field(default_factory=list)

    @property
    def text_mb(self) -> float:
        """Megabytes (10**6 bytes) of text read."""
        return self.text_bytes / 1e6

    def to_dict(self, source: str | None = None) -> dict[str, Any]:
        """JSON-able form with the flags (``usage_flags``)."""
        return {
            "taxonomy": self.taxonomy,
            "model": self.model,
            "documents": self.documents,
            "text_mb": round(self.text_mb, 6),
            "shards": self.shards,
            "max_docs": self.max_docs,
            "max_mentions_per_keyword": self.max_mentions_per_keyword,
            "thresholds": {
                "unsure_p_yes": [UNSURE_LOW, UNSURE_HIGH],
                "unsure_share_above": UNSURE_SHARE_ABOVE,
                "min_judged_unsure": MIN_JUDGED_UNSURE,
                "person_share_below": PERSON_SHARE_BELOW,
                "min_judged_person": MIN_JUDGED_PERSON,
            },
            "keywords": [k.to_dict() for k in self.keywords],
            "flags": [p.to_dict() for p in usage_flags(self, source or self.taxonomy)],
            "skipped": list(self.skipped),
        }


def _check_count(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{option(name, value)}: must be a whole number >= {least}")
    return value


def keyword_usage(
    inputs: Iterable[str | Path],
    taxonomy: Taxonomy,
    config: FilterConfig | None = None,
    *,
    model: MentionModel | None = None,
    max_docs: int = DEFAULT_MAX_DOCS,
    max_mentions_per_keyword: int = DEFAULT_MAX_MENTIONS_PER_KEYWORD,
    progress: bool = False,
) -> UsageReport:
    """Hits, hits per MB and the model's person / unsure shares of each keyword of ``taxonomy``.

    The first ``max_docs`` documents of ``inputs`` (anything ``fairstream filter`` reads, in its
    order) are read.

    Documents are read and their text taken as the filter does (``config``'s ``text_field``,
    ``max_doc_chars``, ``on_error``); sentences are found by the filter's ``CandidateExtractor``
    (``splitter``, ``min_tokens``/``max_tokens``) and the mentions judged by the filter's model
    (``config.model``/``device``/``batch_size``, or ``model``), as ``MentionInput``s built like the
    tagger's, so each judged mention gets the prediction the filter's annotation holds. Only the first
    ``max_mentions_per_keyword`` candidate mentions of a keyword are judged (repeats judged once).
    """
    from fairstream.candidates import CandidateExtractor
    from fairstream.core.config import FilterConfig
    from fairstream.errors import InvalidDocumentError
    from fairstream.io import find_shards
    from fairstream.jobs.reader import ShardReader
    from fairstream.models.encoding import MentionInput
    from fairstream.models.loader import load_model_for
    from fairstream.progress import Progress
    from fairstream.text import LengthFilter, coerce_text

    max_docs = _check_count("max_docs", max_docs, 1)
    max_mentions_per_keyword = _check_count("max_mentions_per_keyword", max_mentions_per_keyword, 1)
    config = config or FilterConfig()
    listing = find_shards(inputs)
    if model is None:
        model = load_model_for(config)
    extractor = CandidateExtractor(
        taxonomy, splitter=config.splitter, length_filter=LengthFilter(config.min_tokens, config.max_tokens)
    )
    usage = {a.keyword: KeywordUsage(a.keyword, a.attribute_class) for a in taxonomy}
    judged: dict[tuple[str, int, int, str], Any] = {}  # (sentence, start, end, keyword) -> prediction
    skipped: list[str] = []  # bad records and invalid documents (on_error="skip")
    n_docs = text_bytes = shards_read = 0
    max_chars = config.max_doc_chars or None
    bar = Progress(
        sum(s.stat().st_size for s in listing.shards), desc="fairstream taxonomy check", enabled=progress
    )
    window: list[tuple[str, MentionInput]] = []  # (keyword, mention judged) in text order
    todo: dict[tuple[str, int, int, str], MentionInput] = {}

    def flush() -> None:
        if todo:
            keys = list(todo)
            preds = model.predict([todo[k] for k in keys])
            judged.update(zip(keys, preds, strict=True))
            todo.clear()
        for keyword, item in window:
            pred = judged[(item.text, item.start, item.end, keyword)]
            u = usage[keyword]
            u.person += bool(pred.person)
            u.unsure += UNSURE_LOW <= pred.wsd_score <= UNSURE_HIGH
        window.clear()

    def collect(text: str) -> None:
        scan = extractor.scan(text)
        if not scan.has_keyword:
            return
        for m in extractor.detector.find(text):
            usage[m.keyword].hits += 1
        for cand in scan.candidates:
            sentence = text[cand.start : cand.end]
            for m in cand.mentions:
                u = usage[m.keyword]
                u.candidates += 1
                if u.judged >= max_mentions_per_keyword:
                    continue
                u.judged += 1
                key = (sentence, m.start - cand.start, m.end - cand.start, m.keyword)
                attr = taxonomy[m.keyword]
                item = MentionInput(sentence, key[1], key[2], attr.keyword, attr.gloss)
                if key not in judged:
                    todo.setdefault(key, item)
                window.append((m.keyword, item))

    try:
        for shard in listing.shards:
            if n_docs >= max_docs:
                break
            shards_read += 1
            bar.note(shard.name)
            reader = ShardReader(shard, on_error=config.on_error)
            shard_start = bar.n
            try:
                for record in reader.records():
                    if n_docs >= max_docs:
                        break
                    n_docs += 1
                    bar.advance(max(0.0, shard_start + record.position - bar.n))
                    where = f"{shard}:{record.line} field {config.text_field!r}"
                    try:
                        text = coerce_text(
                            record.data.get(config.text_field), where=where, max_chars=max_chars
                        )
                    except InvalidDocumentError as exc:
                        if config.on_error == "raise":
                            raise
                        logger.warning("skipping: %s", exc.problem)
                        skipped.append(exc.problem)
                        continue
                    text_bytes += len(text.encode("utf-8"))
                    collect(text)
                    if len(todo) >= _JUDGE_AT:
                        flush()
            finally:
                skipped += reader.skipped
            bar.advance(max(0.0, shard_start + reader.size - bar.n))
        flush()
    finally:
        bar.close()
    for u in usage.values():
        u.hits_per_mb = u.hits / (text_bytes / 1e6) if text_bytes else 0.0
    return UsageReport(
        taxonomy=taxonomy.name,
        model=str(getattr(model, "name", type(model).__name__)),
        documents=n_docs,
        text_bytes=text_bytes,
        shards=shards_read,
        keywords=list(usage.values()),
        max_docs=max_docs,
        max_mentions_per_keyword=max_mentions_per_keyword,
        skipped=skipped,
    )


def usage_flags(report: UsageReport, source: str) -> list[Problem]:
    """One warning per keyword that looks unreliable on the documents read (see the module constants)."""
    flags = []
    read = f"{report.documents} documents ({report.text_mb:.2f} MB)"
    for u in report.keywords:

        def flag(problem: str, fix: str, kind: str, u: KeywordUsage = u) -> None:
            flags.append(
                Problem(source, problem, fix, u.attribute_class, u.keyword, kind=kind, severity="warning")
            )

        if u.hits == 0:
            flag(
                f"no hits in {read}",
                "check its forms, or read more documents (--max-docs) if it is rare",
                "no-hits",
            )
        elif u.candidates == 0:
            flag(
                f"{u.hits} hits but none in a sentence the filter judges (length filter)",
                "its mentions are never judged here: check --min-tokens/--max-tokens or the texts",
                "not-judged",
            )
        else:
            unsure, person = u.unsure_share or 0.0, u.person_share or 0.0
            if u.judged >= MIN_JUDGED_UNSURE and unsure > UNSURE_SHARE_ABOVE:
                flag(
                    f"the model is unsure of {unsure:.0%} of {u.judged} judged mentions "
                    f"({UNSURE_LOW} <= P(yes) <= {UNSURE_HIGH})",
                    "check the gloss, label a sample and run fairstream eval-models on it",
                    "unsure",
                )
            if u.judged >= MIN_JUDGED_PERSON and person < PERSON_SHARE_BELOW:
                flag(
                    f"only {person:.0%} of {u.judged} judged mentions refer to a person",
                    "mostly another sense: check the gloss and forms, or drop the keyword",
                    "not-person",
                )
    return flags


def format_usage(report: UsageReport) -> list[str]:
    """The per-keyword table as text lines (keywords in taxonomy order)."""
    lines = [
        f"{report.documents} documents, {report.text_mb:.2f} MB of text, model {report.model}",
        f"{'class':<18} {'keyword':<16} {'hits':>6} {'hits/MB':>9} {'judged':>7} {'person':>7} {'unsure':>7}",
    ]

    def share(v: float | None) -> str:
        return "-" if v is None else f"{v:.0%}"

    for u in report.keywords:
        lines.append(
            f"{u.attribute_class:<18} {u.keyword:<16} {u.hits:>6} {u.hits_per_mb:>9.1f} {u.judged:>7} "
            f"{share(u.person_share):>7} {share(u.unsure_share):>7}"
        )
    return lines
