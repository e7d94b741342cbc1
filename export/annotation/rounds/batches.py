"""Batch files for annotator agents, the merge of their answers (shared by rounds 3-5), and the
scoring of a round's candidates by a model (rounds 6, 9, 10).

An item is a dict with at least keyword, gloss and text; ``write_batches`` gives each a uid,
deals the items round-robin into ``nb`` batch files (what an annotator sees: uid, keyword, gloss,
text) and keeps everything but the text in ``meta.json``. ``read_answers`` checks that every
batch was answered completely with valid labels.
"""

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# a stand-off label record's pointer fields (file, document, offsets, keyword), before its labels
STANDOFF_FIELDS = [
    "uid", "source", "doc_id", "sent_start", "sent_end", "kw_start", "kw_end", "keyword", "class", "gloss",
]  # fmt: skip

# what a round's batches/batch-XX.jsonl hold (write_selection_batches): text and stand-off
BATCH_FIELDS = [
    "uid", "text", "keyword", "class", "gloss",
    "source", "doc_id", "sent_start", "sent_end", "kw_start", "kw_end",
]  # fmt: skip


def mark_occurrence(text: str, start: int, end: int) -> str:
    """``text`` with the occurrence the model reads (``text[start:end]``) marked ``[[...]]``: a sentence
    may hold the keyword twice, and annotators must label the one the model reads."""
    return f"{text[:start]}[[{text[start:end]}]]{text[end:]}"


def write_selection_batches(
    out: Path,
    items: list[dict],
    uid_prefix: str,
    n_batches: int,
    selection: Callable[[dict], dict],
    mark: bool = False,
) -> int:
    """A round as rounds 6-16 stage it: ``items`` (candidates, in their final order) numbered
    ``{uid_prefix}00001`` ... and dealt in order into ``n_batches`` files ``out/batches/batch-XX.jsonl``
    (``BATCH_FIELDS``), and ``out/selection.jsonl`` (uid, cid, batch, then ``selection(item)``'s fields).
    ``mark`` adds ``text_marked``, the sentence with the occurrence the model reads marked: what the
    annotators should read (rounds up to 16 went without it; see ``25_stage_marked_relabel.py``).
    Returns the batch size."""
    size = math.ceil(len(items) / n_batches)
    (out / "batches").mkdir(parents=True, exist_ok=True)
    with (out / "selection.jsonl").open("w", encoding="utf-8") as fsel:
        for b in range(n_batches):
            with (out / "batches" / f"batch-{b + 1:02d}.jsonl").open("w", encoding="utf-8") as fb:
                for k, c in enumerate(items[b * size : (b + 1) * size], start=b * size + 1):
                    uid = f"{uid_prefix}{k:05d}"
                    row = {f: (uid if f == "uid" else c[f]) for f in BATCH_FIELDS}
                    if mark:
                        s0 = c["sent_start"]
                        row["text_marked"] = mark_occurrence(c["text"], c["kw_start"] - s0, c["kw_end"] - s0)
                    fb.write(json.dumps(row) + "\n")
                    fsel.write(
                        json.dumps({"uid": uid, "cid": c["cid"], "batch": b + 1, **selection(c)}) + "\n"
                    )
    return size


def read_batch_answers(answer_file: Path, uids: list[str], strict: bool = False) -> dict[str, dict]:
    """The annotators' answers to ``uids`` from ``answer_file`` (one {"uid", "wsd", "regard"} per line,
    GUIDE.md), each with ``regard`` set to None unless ``wsd`` is "yes". Exits naming the file on an
    unanswered uid, an invalid ``wsd`` or a person without a regard; ``strict`` also checks every other
    line of the file and rejects a regard given for a non-person."""
    answers = {a["uid"]: a for a in map(json.loads, filter(str.strip, answer_file.open(encoding="utf-8")))}
    missing = [u for u in uids if u not in answers]
    if missing:
        raise SystemExit(f"{answer_file}: {len(missing)} items unanswered, e.g. {missing[:3]}")
    for uid in answers if strict else uids:
        a = answers[uid]
        if a["wsd"] not in ("yes", "no", "unsure"):
            raise SystemExit(f"{answer_file}: {uid}: wsd {a['wsd']!r}")
        regard = a.get("regard")
        if a["wsd"] == "yes" and regard not in ("negative", "neutral", "positive"):
            raise SystemExit(f"{answer_file}: {uid}: regard {regard!r} for a person mention")
        if strict and a["wsd"] != "yes" and regard is not None:
            raise SystemExit(f"{answer_file}: {uid}: regard {regard!r} for a mention that is not a person")
    return {
        u: {**answers[u], "regard": answers[u].get("regard") if answers[u]["wsd"] == "yes" else None}
        for u in uids
    }


def write_batches(items: list[dict], work: Path, nb: int, uid_prefix: str) -> None:
    work.mkdir(parents=True, exist_ok=True)
    meta = {}
    for i, it in enumerate(items):
        it["uid"] = f"{uid_prefix}{i:05d}"
        meta[it["uid"]] = {k: v for k, v in it.items() if k != "text"}
    for b in range(nb):
        with (work / f"batch_{b}.jsonl").open("w") as f:
            for it in items[b::nb]:
                f.write(
                    json.dumps(
                        {"uid": it["uid"], "keyword": it["keyword"], "gloss": it["gloss"], "text": it["text"]}
                    )
                    + "\n"
                )
    json.dump(meta, (work / "meta.json").open("w"))


def read_answers(work: Path, nb: int) -> Iterator[tuple[int, dict, str | None, dict]]:
    """(batch, meta, regard, answer) for every item, in batch order; fails on a missing or bad answer."""
    meta = json.loads((work / "meta.json").read_text())
    for b in range(nb):
        batch = [json.loads(x)["uid"] for x in (work / f"batch_{b}.jsonl").open()]
        answers = {a["uid"]: a for a in map(json.loads, filter(str.strip, (work / f"out_{b}.jsonl").open()))}
        missing = [u for u in batch if u not in answers]
        assert not missing, f"batch {b}: {len(missing)} answers missing"
        for uid in batch:
            a = answers[uid]
            assert a["wsd"] in ("yes", "no", "unsure"), a
            regard = a.get("regard") if a["wsd"] == "yes" else None
            assert a["wsd"] != "yes" or regard in ("positive", "neutral", "negative"), a
            yield b, meta[uid], regard, a


def corpus_record(m: dict, a: dict, regard: str | None, annotator: str, rnd: int) -> dict:
    """A stand-off record into the corpus (file, doc id, sentence and keyword offsets)."""
    return {
        "uid": m["uid"], "file": m["file"], "doc_id": m["doc_id"], "sent_start": m["sent_start"],
        "sent_end": m["sent_end"], "kw_start": m["kw_start"], "kw_end": m["kw_end"], "keyword": m["keyword"],
        "class": m["cls"], "gloss": m["gloss"], "wsd": a["wsd"], "regard": regard, "annotator": annotator,
        "round": rnd,
    }  # fmt: skip


def write_records(rows: list[dict], dest: Path) -> None:
    rows.sort(key=lambda r: r["uid"])
    dest.write_text("".join(json.dumps(r) + "\n" for r in rows))


def entropy(p: list[float]) -> float:
    """Shannon entropy (nats) of a probability vector; the selection's "uncertain" ranking uses it."""
    return -sum(x * math.log(x) for x in p if x > 0)


def candidate_mention(c: dict) -> Any:
    """The ``MentionInput`` of a candidate record (keyword offsets are document offsets; the text is the sentence)."""
    from fairstream.models.encoding import MentionInput

    return MentionInput(
        c["text"], c["kw_start"] - c["sent_start"], c["kw_end"] - c["sent_start"], c["keyword"], c["gloss"]
    )


def score_candidates(model: Any, cands: list[dict]) -> tuple[list[float], list[list[float]]]:
    """P(wsd = yes) and the regard probabilities of every candidate under ``model`` (a ``JointModel``)."""
    import numpy as np

    from fairstream.models.runtime import softmax

    wsd_logits, regard_logits = model.predict_logits([candidate_mention(c) for c in cands])[:2]
    p_wsd, p_reg = softmax(wsd_logits.astype(np.float64)), softmax(regard_logits.astype(np.float64))
    yes = model.config["wsd_labels"].index("yes")
    return [float(pw[yes]) for pw in p_wsd], [[float(x) for x in pr] for pr in p_reg]


def score_record(cid: int, p_yes: float, p_regard: list[float], model_name: str, **extra: Any) -> dict:
    """One ``scored.jsonl`` row (what ``14_select_round6.py`` reads); ``extra`` fields go before ``model``."""
    p_reg = [round(x, 5) for x in p_regard]
    return {
        "cid": cid,
        "p_wsd_yes": round(p_yes, 5),
        "p_regard": p_reg,
        "regard_entropy": round(entropy(p_reg), 5),
        "person": p_yes >= 0.5,
        **extra,
        "model": model_name,
    }


def write_scored(out: Path, cands: list[dict], records: list[dict]) -> None:
    """``candidates.jsonl`` and ``scored.jsonl`` under ``out``, one line each per candidate, in order."""
    out.mkdir(parents=True, exist_ok=True)
    with (
        (out / "candidates.jsonl").open("w", encoding="utf-8") as fc,
        (out / "scored.jsonl").open("w", encoding="utf-8") as fs,
    ):
        for c, rec in zip(cands, records, strict=True):
            fc.write(json.dumps(c) + "\n")
            fs.write(json.dumps(rec) + "\n")


def score_and_write(model_spec: str, cands: list[dict], out: Path) -> str:
    """Score ``cands`` with one model (a shipped name or a folder) and write both files; returns its name."""
    from fairstream.models.runtime import JointModel

    model = JointModel(model_spec)
    p_wsd_yes, p_reg = score_candidates(model, cands)
    records = [
        score_record(c["cid"], p_yes, pr, model.name)
        for c, p_yes, pr in zip(cands, p_wsd_yes, p_reg, strict=True)
    ]
    write_scored(out, cands, records)
    return str(model.name)
