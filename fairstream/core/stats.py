"""Mergeable counts of what a FairStream saw, kept and dropped."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fairstream.core.estimates import GROUPS, HIST_KEY
from fairstream.core.schema import REGARD_LABELS as REGARDS
from fairstream.core.schema import sentence_regard
from fairstream.models.calibration import count_bin

#: Every counter of a filter step (``StreamStats.to_dict`` shows each one, 0 until it is counted).
COUNTERS = (
    "docs_in",
    "docs_empty",
    "docs_with_keyword",
    "docs_out",
    "docs_dropped",
    "docs_modified",
    "sentences_candidate",
    "sentences_out_of_length",
    "sentences_dropped",
    "model_calls",
    "mentions_predicted",
    "cache_hits",
)


def _zero_attr() -> dict[str, Any]:
    return {
        "mentions": 0,  # keyword occurrences in candidate sentences (any sense)
        "person_sentences": 0,  # sentences with a person-sense mention (before filtering)
        "before": {r: 0 for r in REGARDS},  # those sentences by regard, before filtering
        "after": {r: 0 for r in REGARDS},  # ... among kept sentences
        "dropped": 0,  # sentences with the attribute that were dropped
        # those sentences per bin of the model's P(negative) (the most negative mention's), kept and
        # dropped apart: what the estimated true shares are computed from (fairstream.core.estimates)
        HIST_KEY: {g: {} for g in GROUPS},
    }


@dataclass
class StreamStats:
    """Counts of one stream (or the sum of many: ``a + b``); JSON via ``to_dict``/``from_dict``."""

    counters: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def attr(self, keyword: str) -> dict[str, Any]:
        """The counts of one attribute (created on first use)."""
        if keyword not in self.attributes:
            self.attributes[keyword] = _zero_attr()
        return self.attributes[keyword]

    def count_mentions(
        self, mentions: Iterable[tuple[str, bool, str | None, float]]
    ) -> dict[str, tuple[str, float]]:
        """Count one sentence's mentions ``(keyword, person, regard, P(negative))``.

        Returns, per attribute the sentence mentions in the person sense, the sentence's regard toward
        it (the most negative of those mentions, ``sentence_regard``) and their highest P(negative).
        The one rule of the stream (``FilterStep.decide``) and of the global scope's report pass, which
        counts from annotations: so both count, and bin, the same sentences alike.
        """
        regards: dict[str, list[str]] = {}
        p_negative: dict[str, float] = {}
        for keyword, person, regard, p_neg in mentions:
            self.attr(keyword)["mentions"] += 1
            if person and regard is not None:
                regards.setdefault(keyword, []).append(regard)
                p_negative[keyword] = max(p_negative.get(keyword, 0.0), p_neg)
        return {kw: (sentence_regard(rs), p_negative[kw]) for kw, rs in regards.items()}

    def count_person_sentence(self, keyword: str, regard: str, p_negative: float, kept: bool) -> None:
        """Count one sentence with a person-sense mention of ``keyword``: its regard, bin and fate.

        ``p_negative`` is the model's P(negative) of the sentence's most negative mention, binned by
        ``count_bin`` (rounded as annotations round it), so a count from annotations bins identically.
        """
        a = self.attr(keyword)
        a["person_sentences"] += 1
        a["before"][regard] += 1
        if kept:
            a["after"][regard] += 1
        else:
            a["dropped"] += 1
        bins = a.setdefault(HIST_KEY, {g: {} for g in GROUPS})[GROUPS[0] if kept else GROUPS[1]]
        k = str(count_bin(p_negative))
        bins[k] = bins.get(k, 0) + 1

    def __add__(self, other: StreamStats) -> StreamStats:
        out = StreamStats.from_dict(self.to_dict())
        out.counters.update(other.counters)
        out.skipped.update(other.skipped)
        for kw, c in other.attributes.items():
            mine = out.attr(kw)
            for key in ("mentions", "person_sentences", "dropped"):
                mine[key] += c[key]
            for key in ("before", "after"):
                for r in REGARDS:
                    mine[key][r] += c[key][r]
            theirs = c.get(HIST_KEY, {})
            bins = mine.setdefault(HIST_KEY, {g: {} for g in GROUPS})
            for g in GROUPS:
                for k, n in theirs.get(g, {}).items():
                    bins[g][k] = bins[g].get(k, 0) + n
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data."""
        return {
            "counters": dict(sorted({**dict.fromkeys(COUNTERS, 0), **self.counters}.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "attributes": {
                kw: _sorted_bins(a) for kw, a in sorted(json.loads(json.dumps(self.attributes)).items())
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StreamStats:
        """Inverse of ``to_dict``."""
        return cls(
            counters=Counter(data.get("counters", {})),
            skipped=Counter(data.get("skipped", {})),
            attributes=json.loads(json.dumps(data.get("attributes", {}))),
        )


def _sorted_bins(attr: dict[str, Any]) -> dict[str, Any]:
    """An attribute record with its bin counts in bin order (the same JSON whatever the merge order)."""
    if HIST_KEY in attr:
        attr[HIST_KEY] = {
            g: dict(sorted(bins.items(), key=lambda kv: int(kv[0]))) for g, bins in attr[HIST_KEY].items()
        }
    return attr


#: The skip reason of a shard's unreadable rest: one entry per shard, not per document (how many
#: documents it held is unknown), so it is not a document in ``docs_in`` or ``docs_skipped``.
UNREADABLE_SHARD = "unreadable-shard"


def count_unread_records(stats: StreamStats, skipped: Iterable[str]) -> None:
    """Count what a shard reader skipped (``fairstream.io.Skipped`` messages) into ``stats``.

    The counting rule of every run: ``docs_in`` counts each record read, bad ones included, so
    ``docs_in = docs_out + docs_dropped + docs_skipped``. A bad line (invalid JSON or UTF-8, not an
    object) is a record in and a skip, as an invalid document is.
    """
    for message in skipped:
        stats.skipped[getattr(message, "reason", "bad-record")] += 1
        if is_bad_record(message):
            stats.counters["docs_in"] += 1


def is_bad_record(message: str) -> bool:
    """Whether a reader's skip (``fairstream.io.Skipped``) is one record, not a shard's unreadable rest."""
    return getattr(message, "reason", "bad-record") != UNREADABLE_SHARD


def loader_dataset_states(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The dataset state of each worker in a torchdata ``StatefulDataLoader.state_dict()``.

    With ``num_workers > 0`` each worker iterates its own copy of the dataset, so its state (and
    any counts it keeps) travel in the loader's state, one per worker; with ``num_workers=0`` the
    loader state holds the dataset state directly.
    """
    snapshot = state.get("_snapshot", state)
    workers = snapshot.get("_worker_snapshots")
    if workers:
        return [w.get("dataset_state") or {} for w in workers.values()]
    main = snapshot.get("_main_snapshot", snapshot)
    return [main.get("dataset_state") or {}]


def _stream_states(state: Any) -> list[dict[str, Any]]:
    """FairStream states inside a dataset state (itself, or nested in a wrapper's state)."""
    if not isinstance(state, dict):
        return []
    if "stats" in state and "controller" in state:
        return [state]
    return [s for value in state.values() for s in _stream_states(value)]


def stats_from_loader_state(state: dict[str, Any]) -> StreamStats:
    """Sum the FairStream stats of every worker in a torchdata ``StatefulDataLoader.state_dict()``.

    The dataset may be a FairStream or wrap one (e.g. a tokenizer and packer) that keeps the
    stream's ``state_dict()`` inside its own.
    """
    total = StreamStats()
    for part in loader_dataset_states(state):
        streams = _stream_states(part)
        if not streams:
            raise ValueError("loader state holds no FairStream stats (was the dataset a FairStream?)")
        for stream_state in streams:
            total = total + StreamStats.from_dict(stream_state["stats"])
    return total
