"""Biaser-substitution augmentation (Mondal & Lipizzi), with person senses only.

A *bias producer* is a set of interchangeable biasers: a taxonomy class (``religion``) or a user
list. Every entry that mentions a biaser *as people* gets ``|b| - 1`` copies; copy ``k`` maps each
biaser of the entry to the one ``k`` places further in the producer's order (a cyclic shift), so
two different biasers in one entry stay different and, over the copies, every biaser takes each
mentioned biaser's place exactly once: the attribute is balanced in the augmented set.

Where the paper finds biasers with NER, this builder finds them with the keyword detector and
asks the WSD model whether each occurrence refers to people ("Chinese workers" is swapped,
"Chinese food" is left alone). Surface forms are preserved: casing (lower / Title / UPPER), the
article before the word (a/an), number (taxonomy plural forms; a target without a plural form
becomes "X people") and possessives ("Muslim's", "Muslims'"). Multi-word biasers are matched and
replaced whole.

An optional content morphism makes the copies less repetitive: ``downshift`` keeps an extractive
summary (the sentences with a substitution plus the highest-scoring others), ``upshift``
paraphrases each copy with a chat model (``fairstream.llm`` backends); a paraphrase that
loses the substituted biaser is not used and is counted.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from fairstream.builders.producers import BiasProducer, all_forms
from fairstream.builders.records import BuilderConfigError, source_id, with_provenance
from fairstream.builders.surface_forms import ARTICLE_BEFORE, case_like, indefinite_article, match_case
from fairstream.detect import KeywordDetector, Mention

logger = logging.getLogger(__name__)

BUILDER = "substitute"
MORPHISMS = ("none", "downshift", "upshift")
Morphism = Literal["none", "downshift", "upshift"]


@dataclass
class SubstitutionStats:
    """Counts of one run (they add, so shards can be merged)."""

    entries: int = 0
    entries_with_biaser: int = 0
    copies: int = 0
    swapped: int = 0  # person-sense mentions substituted (summed over copies)
    person_mentions: int = 0
    non_person_mentions: int = 0  # left alone because the WSD model said "not people"
    articles_fixed: int = 0
    morphism_failed: int = 0  # paraphrases that lost the biaser (the plain copy was kept)
    per_biaser: Counter[str] = field(default_factory=Counter)  # source mentions per biaser
    non_person_examples: list[str] = field(default_factory=list)

    def __add__(self, other: SubstitutionStats) -> SubstitutionStats:
        out = SubstitutionStats()
        for name in (
            "entries",
            "entries_with_biaser",
            "copies",
            "swapped",
            "person_mentions",
            "non_person_mentions",
            "articles_fixed",
            "morphism_failed",
        ):
            setattr(out, name, getattr(self, name) + getattr(other, name))
        out.per_biaser = self.per_biaser + other.per_biaser
        out.non_person_examples = (self.non_person_examples + other.non_person_examples)[:20]
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("per_biaser",)}
        d["per_biaser"] = dict(sorted(self.per_biaser.items()))
        return d


@dataclass(frozen=True)
class Substitution:
    """One planned replacement: offsets into the source text, old and new surface."""

    start: int
    end: int
    old: str
    new: str
    kind: str  # "biaser" or "article"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (what changed and where)."""
        return {"start": self.start, "end": self.end, "from": self.old, "to": self.new, "kind": self.kind}


def apply_substitutions(text: str, subs: Sequence[Substitution]) -> str:
    """Apply non-overlapping substitutions (offsets into ``text``)."""
    out, pos = [], 0
    for s in sorted(subs, key=lambda s: s.start):
        out.append(text[pos : s.start])
        out.append(s.new)
        pos = s.end
    out.append(text[pos:])
    return "".join(out)


class BiaserSubstitution:
    """Make balanced copies of entries by substituting a producer's biasers (person senses only).

    Args:
        producer: The interchangeable biasers.
        model: A ``JointModel`` (WSD gate); ``None`` loads the shipped one lazily. Pass
            ``wsd=False`` to swap every keyword match (the paper's behaviour without a WSD step).
        wsd: Whether to ask the WSD model about each occurrence.
        morphism: ``"none"``, ``"downshift"`` (extractive summary) or ``"upshift"`` (paraphrase).
        backend: A chat backend (``fairstream.llm.make_backend``) for ``upshift``.
        summary_ratio: Share of sentences kept by ``downshift`` (sentences with a substitution
            are always kept).
        include_originals: Also yield each source entry (with provenance and no changes).
    """

    def __init__(
        self,
        producer: BiasProducer,
        *,
        model: Any = None,
        wsd: bool = True,
        morphism: str = "none",
        backend: Any = None,
        summary_ratio: float = 0.5,
        include_originals: bool = True,
    ) -> None:
        if morphism not in MORPHISMS:
            raise BuilderConfigError(f"morphism={morphism!r} is not one of {MORPHISMS}")
        if morphism == "upshift" and backend is None:
            raise BuilderConfigError("morphism='upshift' needs a chat backend (--backend and --model)")
        if not 0 < summary_ratio <= 1:
            raise BuilderConfigError(f"summary_ratio={summary_ratio!r} must be in (0, 1]")
        self.producer = producer
        self.detector = KeywordDetector(producer.taxonomy())
        self._by_form = {f: b for b in producer.biasers for f in all_forms(b)}
        self._index = {b.singular: i for i, b in enumerate(producer.biasers)}
        self.wsd = wsd
        self._model = model
        self.morphism = morphism
        self.backend = backend
        self.summary_ratio = summary_ratio
        self.include_originals = include_originals
        self.stats = SubstitutionStats()
        self._splitter: Any = None

    @property
    def model(self) -> Any:
        """The WSD model (the shipped default unless one was given), loaded on first use."""
        if self._model is None:
            from fairstream.models.runtime import JointModel

            self._model = JointModel()
        return self._model

    @property
    def model_name(self) -> str | None:
        """Name of the WSD model used, written into provenance."""
        return str(self.model.name) if self.wsd else None

    def _sentences(self, text: str) -> list[tuple[int, int]]:
        if self._splitter is None:
            from fairstream.text import SentenceSplitter

            self._splitter = SentenceSplitter()
        spans = self._splitter.spans(text)
        return spans or [(0, len(text))]

    def person_mentions(self, texts: Sequence[str]) -> list[list[tuple[Mention, bool]]]:
        """Producer mentions of each text, each with the WSD decision (batched over all texts)."""
        from fairstream.models.encoding import MentionInput

        found = [self.detector.find(t) for t in texts]
        if not self.wsd:
            return [[(m, True) for m in ms] for ms in found]
        items: list[MentionInput] = []
        for text, ms in zip(texts, found, strict=True):
            spans = self._sentences(text) if ms else []
            for m in ms:
                s, e = next(((s, e) for s, e in spans if s <= m.start and m.end <= e), (0, len(text)))
                gloss = self._by_form[m.surface.lower()].gloss
                items.append(MentionInput(text[s:e], m.start - s, m.end - s, m.keyword, gloss))
        preds = iter(self.model.predict(items))
        return [[(m, next(preds).person) for m in ms] for ms in found]

    def plan(
        self, text: str, mentions: Sequence[Mention], shift: int
    ) -> tuple[list[Substitution], dict[str, str]]:
        """The substitutions of copy ``shift`` (1 .. |b|-1) and its biaser mapping."""
        n = len(self.producer.biasers)
        subs: list[Substitution] = []
        mapping: dict[str, str] = {}
        for m in mentions:
            src = self._by_form[m.surface.lower()]
            dst = self.producer.biasers[(self._index[src.singular] + shift) % n]
            mapping[src.singular] = dst.singular
            number = src.number(m.surface.lower())
            plural = number == "plural"
            word, suffix = dst.form(plural, noun=number == "noun")
            # the suffix follows UPPER case only: "Muslims" -> "Jewish people", "MUSLIMS" -> "JEWISH PEOPLE"
            new = match_case(word, m.surface) + (
                suffix.upper() if len(m.surface) > 1 and m.surface.isupper() else suffix
            )
            end = m.end
            # plural possessive "Muslims'" -> "Jewish people's" (an apostrophe alone needs an s)
            if (
                plural
                and text[end : end + 1] in ("'", "’")
                and not text[end + 1 : end + 2].isalpha()
                and not new.endswith("s")
            ):
                new, end = new + text[end] + ("S" if new.isupper() else "s"), end + 1
            subs.append(Substitution(m.start, end, text[m.start : end], new, "biaser"))
            art = ARTICLE_BEFORE.search(text, 0, m.start)
            if art is not None:
                old_art = art.group(1)
                want = indefinite_article(new)
                if old_art.lower() != want:
                    new_art = match_case(want, old_art) if len(old_art) > 1 else case_like(want, old_art)
                    subs.append(Substitution(art.start(1), art.end(1), old_art, new_art, "article"))
        return subs, mapping

    def augment(
        self,
        records: Iterable[dict[str, Any]],
        text_field: str = "text",
        path: Any = None,
        batch_size: int = 32,
    ) -> Iterator[dict[str, Any]]:
        """Yield (originals and) augmented copies with provenance; counts go to ``self.stats``."""
        batch: list[dict[str, Any]] = []
        for rec in records:
            batch.append(rec)
            if len(batch) >= batch_size:
                yield from self._augment_batch(batch, text_field, path)
                batch = []
        if batch:
            yield from self._augment_batch(batch, text_field, path)

    def _augment_batch(
        self, batch: list[dict[str, Any]], text_field: str, path: Any
    ) -> Iterator[dict[str, Any]]:
        texts = [r[text_field] for r in batch]
        judged = self.person_mentions(texts)
        n = len(self.producer.biasers)
        for rec, text, ms in zip(batch, texts, judged, strict=True):
            self.stats.entries += 1
            sid = source_id(rec, path)
            person = [m for m, p in ms if p]
            for m, p in ms:
                if not p:
                    self.stats.non_person_mentions += 1
                    if len(self.stats.non_person_examples) < 20:
                        lo = max(0, m.start - 30)
                        self.stats.non_person_examples.append(f"{sid}: ...{text[lo : m.end + 30]}...")
            if self.include_originals:
                yield with_provenance(
                    rec, source=sid, builder=BUILDER, changes=[], producer=self.producer.name, role="original"
                )
            if not person:
                continue
            self.stats.entries_with_biaser += 1
            self.stats.person_mentions += len(person)
            self.stats.per_biaser.update(self._by_form[m.surface.lower()].singular for m in person)
            for shift in range(1, n):
                subs, mapping = self.plan(text, person, shift)
                new_text = apply_substitutions(text, subs)
                morphism = self.morphism
                if morphism != "none":
                    morphed = self._morph(new_text, subs, text, mapping)
                    if morphed is None:
                        self.stats.morphism_failed += 1
                        morphism = "none"
                    else:
                        new_text = morphed
                self.stats.copies += 1
                self.stats.swapped += sum(s.kind == "biaser" for s in subs)
                self.stats.articles_fixed += sum(s.kind == "article" for s in subs)
                out = dict(rec)
                out[text_field] = new_text
                if rec.get("id") is not None:
                    out["id"] = f"{rec['id']}#sub{shift}"
                yield with_provenance(
                    out,
                    source=sid,
                    builder=BUILDER,
                    changes=[s.to_dict() for s in subs],
                    producer=self.producer.name,
                    role="copy",
                    mapping=mapping,
                    wsd_model=self.model_name,
                    morphism=morphism,
                )

    # -- content morphism -----------------------------------------------------------------------
    def _morph(
        self, new_text: str, subs: Sequence[Substitution], old_text: str, mapping: dict[str, str]
    ) -> str | None:
        if self.morphism == "downshift":
            return extractive_summary(
                new_text,
                self._changed_sentences(new_text, subs, old_text),
                self.summary_ratio,
                self._sentences(new_text),
            )
        prompt = (
            "Paraphrase the text below. Keep its meaning and keep these words exactly as written: "
            + ", ".join(sorted({s.new for s in subs if s.kind == "biaser"}))
            + ". Reply with the paraphrase only.\n\nText: "
            + new_text
        )
        reply = self.backend.chat([{"role": "user", "content": prompt}]).strip()
        wanted = {s.new.lower() for s in subs if s.kind == "biaser"}
        if not reply or not all(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", reply.lower()) for w in wanted):
            return None
        return reply

    def _changed_sentences(self, new_text: str, subs: Sequence[Substitution], old_text: str) -> list[int]:
        # offsets of the substitutions in the new text
        pos, delta = [], 0
        for s in sorted(subs, key=lambda s: s.start):
            pos.append(s.start + delta)
            delta += len(s.new) - (s.end - s.start)
        return pos


_WORD = re.compile(r"\w+")


def extractive_summary(
    text: str, keep_at: Sequence[int], ratio: float, spans: Sequence[tuple[int, int]]
) -> str:
    """Keep the sentences containing an offset of ``keep_at`` and the best-scoring others.

    Sentences are scored by the mean document frequency of their words (Luhn-style), so the summary
    keeps the text's central sentences; ``ratio`` of the sentences (at least one) are kept, in order.
    """
    if len(spans) <= 1:
        return text
    words = [[w.lower() for w in _WORD.findall(text[s:e])] for s, e in spans]
    freq = Counter(w for ws in words for w in set(ws) if len(w) > 3)
    must = {i for i, (s, e) in enumerate(spans) for p in keep_at if s <= p < e}
    budget = max(len(must), round(ratio * len(spans)), 1)
    scored = sorted(
        (i for i in range(len(spans)) if i not in must),
        key=lambda i: -sum(freq[w] for w in words[i]) / max(1, len(words[i])),
    )
    keep = sorted(must | set(scored[: max(0, budget - len(must))]))
    return " ".join(text[spans[i][0] : spans[i][1]] for i in keep)
