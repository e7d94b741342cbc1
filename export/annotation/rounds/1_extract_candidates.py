import gzip, json, re, random, collections, os

os.environ.setdefault("NLTK_DATA", "/work/shared/data/nltk_data")
from nltk.tokenize import PunktTokenizer, NLTKWordTokenizer

tax = json.load(open("/work/main/fairstream/data/taxonomy-v1.json"))
form2kw = {}
kwinfo = {}
for cls, items in tax["classes"].items():
    for it in items:
        kwinfo[it["keyword"]] = (cls, it["gloss"])
        for f in it["forms"]:
            form2kw[f] = it["keyword"]
pat = re.compile(
    r"(?<!\w)(" + "|".join(sorted(map(re.escape, form2kw), key=len, reverse=True)) + r")(?!\w)", re.I
)
punkt = PunktTokenizer("english")
wt = NLTKWordTokenizer()
dev = [json.loads(l) for l in open("/work/shared/data/labels/dev.jsonl")]
devtexts = set(d["text"] for d in dev)
cands = []
ndev = 0
for fn in ["fineweb-edu-sample.jsonl.gz", "dclm-sample.jsonl.gz", "dolma-datajuicer-fixtures.jsonl.gz"]:
    for line in gzip.open("/work/shared/data/corpus/" + fn, "rt"):
        d = json.loads(line)
        t = d["text"]
        if not pat.search(t):
            continue
        for s, e in punkt.span_tokenize(t):
            sent = t[s:e]
            if sent in devtexts:
                ndev += 1
            ms = list(pat.finditer(sent))
            if not ms:
                continue
            n = len(wt.tokenize(sent))
            if not (16 < n <= 128):
                continue
            seen = set()
            for m in ms:
                kw = form2kw[m.group(1).lower()]
                if kw in seen:
                    continue  # one item per (sentence, keyword): first occurrence
                seen.add(kw)
                cands.append(
                    dict(
                        file=fn,
                        doc_id=d["id"],
                        sent_start=s,
                        sent_end=e,
                        kw_start=s + m.start(1),
                        kw_end=s + m.end(1),
                        keyword=kw,
                        cls=kwinfo[kw][0],
                        gloss=kwinfo[kw][1],
                        text=sent,
                    )
                )
print("candidates", len(cands), "dev sentences found in corpus", ndev)
c = collections.Counter(x["keyword"] for x in cands)
print(c.most_common())
print(collections.Counter(x["cls"] for x in cands))
json.dump(cands, open("/tmp/cands.json", "w"))
