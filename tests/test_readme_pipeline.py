"""The README's pretraining pipeline: filter -> tokenize -> pack -> StatefulDataLoader(2 workers), resumed.

The snippet runs as written (on the first 120 sample-corpus documents in ``shards/``), checkpoints
after three batches and resumes in a new loader; the test then runs the same pipeline without the
interruption and checks that the resumed run yields exactly the same sequences, in the same order,
with the same token and filter counts.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from tests.test_readme_adapters import SAMPLE_CORPUS, snippets

torch = pytest.importorskip("torch")
pytest.importorskip("torchdata")


def test_readme_pipeline_resumes_without_losing_or_repeating_a_sequence(tmp_path: Path, monkeypatch, capsys):
    with SAMPLE_CORPUS.open(encoding="utf-8") as f:
        docs = [json.loads(line) for line in islice(f, 120)]
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "sample.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    monkeypatch.chdir(tmp_path)
    lang, code = snippets()["pipeline"]
    assert lang == "python"
    ns: dict = {"__name__": "readme_pipeline"}
    exec(compile(code, "README.md[pipeline]", "exec"), ns)
    printed = capsys.readouterr().out
    assert "batches; tokens in" in printed
    from tests.test_dashboard import check_readme_dashboard

    check_readme_dashboard(tmp_path / "runs" / "fairstream", ns)  # what its FilterDashboard wrote
    # a user's second run of the script in the same folder behaves like the first
    again: dict = {"__name__": "readme_pipeline"}
    exec(compile(code, "README.md[pipeline]", "exec"), again)
    assert capsys.readouterr().out == printed
    assert all(torch.equal(a, b) for a, b in zip(again["batches"], ns["batches"], strict=True))

    whole_loader = ns["make_loader"]()
    whole = list(whole_loader)
    resumed = ns["batches"]
    assert len(resumed) == len(whole) > 3
    for a, b in zip(resumed, whole, strict=True):
        assert torch.equal(a, b)
    assert all(b.shape[1] == ns["SEQ_LEN"] for b in whole)

    states = ns["loader_dataset_states"]
    whole_state = whole_loader.state_dict()
    tokens = {k: sum(w["tokens"][k] for w in states(whole_state)) for k in ("in", "kept")}
    assert tokens == ns["tokens"] and tokens["in"] > tokens["kept"] > 0  # the filter dropped some text
    a = ns["stats_from_loader_state"](whole_state)
    b = ns["stats_from_loader_state"](ns["state"])
    assert a.counters["docs_in"] == b.counters["docs_in"] == len(docs)
    assert a.attributes == b.attributes and a.counters["sentences_dropped"] > 0
