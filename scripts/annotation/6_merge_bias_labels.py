"""Merge the annotators' answers for the bias-set batches into labels/bias-v1.jsonl (stand-off)."""

import json
import sys
from pathlib import Path

work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/annot2")
dest = Path(sys.argv[2] if len(sys.argv) > 2 else "labels/bias-v1.jsonl")
meta = json.loads((work / "meta.json").read_text())
rows = []
for b in range(7):
    batch = [json.loads(x)["uid"] for x in (work / f"batch_{b}.jsonl").open()]
    answers = {}
    for line in (work / f"out_{b}.jsonl").open():
        if line.strip():
            a = json.loads(line)
            answers[a["uid"]] = a
    missing = [u for u in batch if u not in answers]
    assert not missing, f"batch {b}: {len(missing)} answers missing"
    for uid in batch:
        a, m = answers[uid], meta[uid]
        assert a["wsd"] in ("yes", "no", "unsure"), a
        regard = a.get("regard") if a["wsd"] == "yes" else None
        assert a["wsd"] != "yes" or regard in ("positive", "neutral", "negative"), a
        rows.append(
            {
                "uid": uid, "source": m["source"], "row": m["row"], "field": m["field"],
                "kw_start": m["kw_start"], "kw_end": m["kw_end"], "keyword": m["keyword"],
                "class": m["cls"], "gloss": m["gloss"], "wsd": a["wsd"], "regard": regard,
                "annotator": f"bias-helper-{b}", "round": 3,
            }
        )
rows.sort(key=lambda r: r["uid"])
dest.write_text("".join(json.dumps(r) + "\n" for r in rows))
print(len(rows), "pairs ->", dest)
