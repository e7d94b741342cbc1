import json, random, collections, re

cands = json.load(open("/tmp/cands.json"))
meta = json.load(open("/tmp/annot/meta.json"))
devdocs = set(map(tuple, json.load(open("/tmp/annot/devdocs.json"))))
taken = set((m["file"], m["doc_id"], m["sent_start"], m["keyword"]) for m in meta.values())
pool = [
    c
    for c in cands
    if (c["file"], c["doc_id"]) not in devdocs
    and (c["file"], c["doc_id"], c["sent_start"], c["keyword"]) not in taken
]
cue = re.compile(
    r"\b(crim\w*|terror\w*|violen\w*|kill\w*|murder\w*|lazy|steal\w*|thie\w+|illegal\w*|gang\w*|riot\w*|attack\w*|rap(e|ist)\w*|drunk\w*|stupid|dirty|hat(e|red)\w*|enem\w+|savage\w*|barbar\w*|inferior|corrupt\w*|fraud\w*|invad\w*|slave\w*|cruel\w*|brutal\w*|greed\w*|arrogan\w*|ignoran\w*|danger\w*|threat\w*|evil|racis\w*|stereotyp\w*|prejudic\w*|discriminat\w*|bigot\w*|supremac\w*|extremis\w*|radical\w*|jihad\w*|mob\w*|bandit\w*|pirat\w*|smuggl\w*|cheat\w*|lie[sd]?|liar\w*|hostile|aggress\w*|primitive|uncivili[sz]ed|backward|filth\w*|disgust\w*|guilty|accused|arrest\w*|convict\w*|prison\w*|massacre\w*|atrocit\w*|genocid\w*|brilliant|genius|hero\w*|award\w*|celebrat\w*|pioneer\w*|first (woman|female|black)|achiev\w*|excel\w*|talent\w*|admir\w*|praise\w*|honou?r\w*|champion\w*|won|famous|renowned|legend\w*|inspir\w*|generous|brave\w*|courag\w*|kind|hard-working|skilled|successful)\b",
    re.I,
)
sel = [c for c in pool if cue.search(c["text"])]
print("pool", len(pool), "cue", len(sel))
rng = random.Random(1)
rng.shuffle(sel)
perkw = collections.Counter()
out = []
for c in sel:
    lim = 25 if c["cls"] == "nationality" else 60
    if perkw[c["keyword"]] >= lim:
        continue
    perkw[c["keyword"]] += 1
    out.append(c)
print("selected", len(out), collections.Counter(c["cls"] for c in out))
n0 = len(meta)
for i, c in enumerate(out):
    uid = f"c{n0 + i:05d}"
    c["uid"] = uid
    meta[uid] = {k: v for k, v in c.items() if k != "text"}
nb = 4
for b in range(nb):
    with open(f"/tmp/annot/batch_{6 + b}.jsonl", "w") as f:
        for c in out[b::nb]:
            f.write(
                json.dumps({"uid": c["uid"], "keyword": c["keyword"], "gloss": c["gloss"], "text": c["text"]})
                + "\n"
            )
json.dump(meta, open("/tmp/annot/meta.json", "w"))
# fill with further random pool items (not cue-selected), spread over keywords
chosen = set(c["uid"] for c in out)
rest = [c for c in pool if "uid" not in c]
rng.shuffle(rest)
perkw2 = collections.Counter()
fill = []
for c in rest:
    lim = 12 if c["cls"] == "nationality" else 40
    if perkw2[c["keyword"]] >= lim:
        continue
    perkw2[c["keyword"]] += 1
    fill.append(c)
fill = fill[:680]
n1 = len(meta)
for i, c in enumerate(fill):
    uid = f"c{n1 + i:05d}"
    c["uid"] = uid
    meta[uid] = {k: v for k, v in c.items() if k != "text"}
for b in range(nb):
    with open(f"/tmp/annot/batch_{6 + b}.jsonl", "a") as f:
        for c in fill[b::nb]:
            f.write(
                json.dumps({"uid": c["uid"], "keyword": c["keyword"], "gloss": c["gloss"], "text": c["text"]})
                + "\n"
            )
json.dump(meta, open("/tmp/annot/meta.json", "w"))
print("fill", len(fill), collections.Counter(c["cls"] for c in fill))
