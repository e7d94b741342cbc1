import json, random, collections, os

cands = json.load(open("/tmp/cands.json"))
dev = [json.loads(l) for l in open("/work/shared/data/labels/dev.jsonl")]
devtexts = set(d["text"] for d in dev)
devdocs = set((c["file"], c["doc_id"]) for c in cands if c["text"] in devtexts)
print("dev docs", len(devdocs))
pool = [c for c in cands if (c["file"], c["doc_id"]) not in devdocs]
print("pool", len(pool))
rng = random.Random(0)
bykw = collections.defaultdict(list)
for c in pool:
    bykw[c["keyword"]].append(c)
sel = []
for kw, lst in sorted(bykw.items()):
    rng.shuffle(lst)
    # spread across documents: at most 2 items per document per keyword
    perdoc = collections.Counter()
    take = []
    for c in lst:
        if perdoc[c["doc_id"]] >= 2:
            continue
        perdoc[c["doc_id"]] += 1
        take.append(c)
        if len(take) >= (40 if c["cls"] == "nationality" else 100):
            break
    sel += take
rng.shuffle(sel)
print("selected", len(sel), collections.Counter(c["cls"] for c in sel))
os.makedirs("/tmp/annot", exist_ok=True)
meta = {}
nb = 6
for i, c in enumerate(sel):
    uid = f"c{i:05d}"
    c["uid"] = uid
    meta[uid] = {k: v for k, v in c.items() if k != "text"}
for b in range(nb):
    with open(f"/tmp/annot/batch_{b}.jsonl", "w") as f:
        for c in sel[b::nb]:
            f.write(
                json.dumps({"uid": c["uid"], "keyword": c["keyword"], "gloss": c["gloss"], "text": c["text"]})
                + "\n"
            )
json.dump(meta, open("/tmp/annot/meta.json", "w"))
json.dump(sorted(devdocs), open("/tmp/annot/devdocs.json", "w"))
