"""Candidate items from CrowS-Pairs and StereoSet for regard annotation (round 3).

Both sets are dense in stereotypes stated, reversed and reported, in short informal sentences: the
kind of negative and positive regard that the web corpus rarely has. Items are stand-off: source
file, row (CrowS-Pairs: csv row and column; StereoSet: example id and sentence id), and keyword
offsets into the text that ``export.labels.load_bias_standoff`` rebuilds.
"""

import collections
import csv
import gzip
import json
import random
import sys
from pathlib import Path

from batches import write_batches

from fairstream.detect import KeywordDetector
from export.labels import bias_text
from fairstream.taxonomy import Taxonomy

shared = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared")
out_dir = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/annot2")
det = KeywordDetector()
gloss_of = {a.keyword: a.gloss for a in Taxonomy.default()}
items = []
seen_text = set()


def add(ref: dict, text: str) -> None:
    if text in seen_text:
        return
    seen_text.add(text)
    firsts = {}
    for m in det.find(text):
        firsts.setdefault(m.keyword, m)
    for kw, m in firsts.items():
        items.append(
            {
                **ref,
                "kw_start": m.start,
                "kw_end": m.end,
                "keyword": kw,
                "cls": m.attribute_class,
                "gloss": gloss_of[kw],
                "text": text,
            }
        )


crows = shared / "data/bias/crows_pairs/crows_pairs_anonymized.csv"
with crows.open(newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
        for col in ("sent_more", "sent_less"):
            ref = {"source": "crows_pairs", "row": row[""], "field": col}
            add(ref, bias_text(ref, shared))
ss = json.load(gzip.open(shared / "data/bias/stereoset/dev.json.gz"))["data"]
for task in ("intersentence", "intrasentence"):
    for ex in ss[task]:
        for s in ex["sentences"]:
            ref = {"source": f"stereoset-{task}", "row": ex["id"], "field": s["id"]}
            add(ref, bias_text(ref, shared))
print(
    len(items), collections.Counter(i["source"] for i in items), collections.Counter(i["cls"] for i in items)
)
rng = random.Random(3)
rng.shuffle(items)
perkw = collections.Counter()
sel = []
for it in items:
    if perkw[it["keyword"]] >= 80:
        continue
    perkw[it["keyword"]] += 1
    sel.append(it)
print(
    "selected",
    len(sel),
    collections.Counter(i["source"] for i in sel),
    collections.Counter(i["cls"] for i in sel),
)
write_batches(sel, out_dir, 7, "b")
