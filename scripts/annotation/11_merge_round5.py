"""Merge round-5 answers (other sentences of the dev documents) into labels/devdocs-v1.jsonl."""

import collections
import json
import sys
from pathlib import Path

work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot5")
dest = Path(sys.argv[2] if len(sys.argv) > 2 else "labels/devdocs-v1.jsonl")
meta = json.loads((work / "meta.json").read_text())
rows = []
for b in range(8):
    batch = [json.loads(x)["uid"] for x in (work / f"batch_{b}.jsonl").open()]
    answers = {a["uid"]: a for a in map(json.loads, filter(str.strip, (work / f"out_{b}.jsonl").open()))}
    missing = [u for u in batch if u not in answers]
    assert not missing, f"batch {b}: {len(missing)} answers missing"
    for uid in batch:
        a, m = answers[uid], meta[uid]
        assert a["wsd"] in ("yes", "no", "unsure"), a
        regard = a.get("regard") if a["wsd"] == "yes" else None
        assert a["wsd"] != "yes" or regard in ("positive", "neutral", "negative"), a
        rows.append(
            {"uid": uid, "file": m["file"], "doc_id": m["doc_id"], "sent_start": m["sent_start"],
             "sent_end": m["sent_end"], "kw_start": m["kw_start"], "kw_end": m["kw_end"], "keyword": m["keyword"],
             "class": m["cls"], "gloss": m["gloss"], "wsd": a["wsd"], "regard": regard,
             "annotator": f"r5-helper-{b}", "round": 5, "dev_folds_3": m["dev_folds_3"],
             "dev_folds_5": m["dev_folds_5"]}
        )  # fmt: skip
rows.sort(key=lambda r: r["uid"])
dest.write_text("".join(json.dumps(r) + "\n" for r in rows))
print(len(rows), collections.Counter(r["wsd"] for r in rows), collections.Counter(r["regard"] for r in rows))
