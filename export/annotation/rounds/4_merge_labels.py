"""Merge annotators' outputs into the stand-off label file labels/corpus-v1.jsonl (as run on 2026-11-22)."""

import collections
import json

meta = json.load(open("/tmp/annot/meta.json"))
lab = {}
for b in range(10):
    for line in open(f"/tmp/annot/out_{b}.jsonl"):
        r = json.loads(line)
        lab[r["uid"]] = (r, b)
out = []
for uid in sorted(meta):
    if uid not in lab:
        continue
    m = meta[uid]
    r, b = lab[uid]
    out.append(
        {"uid": uid, "file": m["file"], "doc_id": m["doc_id"], "sent_start": m["sent_start"], "sent_end": m["sent_end"],
         "kw_start": m["kw_start"], "kw_end": m["kw_end"], "keyword": m["keyword"], "class": m["cls"], "gloss": m["gloss"],
         "wsd": r["wsd"], "regard": r["regard"] if r["wsd"] == "yes" else None,
         "annotator": f"llm-helper-{b}", "round": 1 if b < 6 else 2}
    )  # fmt: skip
with open("labels/corpus-v1.jsonl", "w") as f:
    for o in out:
        f.write(json.dumps(o) + "\n")
print(len(out), collections.Counter(o["wsd"] for o in out), collections.Counter(o["regard"] for o in out))
