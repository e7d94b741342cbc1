"""Every adapter snippet of the README gives the same result when it is run a second time in the same folder.

A user who runs a snippet's script twice starts the second run beside what the first one left: HF
``datasets``' cache files (here in the working folder's own cache, kept for both runs), datatrove's
logging folder (completed tasks are skipped), the command line's output folder. Each run executes
the snippet afresh (a new namespace, new objects), as a new process would. Also here: how the HF
mapper meets ``datasets``' cache (a fresh mapper is never served another's cached result, a reused
one continues its stream) and its ``stats()`` before any row.
"""

from __future__ import annotations

import json
import pickle
import shlex

import pytest
from datasets import Dataset, load_dataset
from datasets.fingerprint import Hasher

from fairstream.adapters.hf import fairstream_map_fn
from fairstream.cli import main
from fairstream.core import FilterConfig, FilterStep
from fairstream.core.stats import COUNTERS
from tests.test_readme_adapters import core_kept, snippets


def run_python_snippet(name: str) -> dict:
    """Execute the README's snippet ``name`` in a namespace of its own; returns the namespace."""
    lang, code = snippets()[name]
    assert lang == "python"
    namespace: dict = {"__name__": f"readme_{name}"}
    exec(compile(code, f"README.md[{name}]", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", ["torch", "hf", "datatrove", pytest.param("ray", marks=pytest.mark.slow)])
def test_python_snippet_keeps_the_core_steps_text_and_a_second_run_the_same(name, docs, workdir):
    first = run_python_snippet(name)
    # every adapter keeps exactly the text the core step keeps from the same documents
    assert first["kept"] == core_kept(FilterConfig(cap=0.01), docs)
    second = run_python_snippet(name)
    assert second["kept"] == first["kept"]
    if name == "hf":
        # the second run's map is not the first's cached result: its mapper counted the rows again
        counters = second["mapper"].stats()["counters"]
        assert counters == first["mapper"].stats()["counters"]
        assert counters["docs_in"] == 120 and counters["sentences_dropped"] > 0
        assert len(list((workdir / "hf-cache").rglob("cache-*.arrow"))) >= 2  # datasets did cache


def test_cli_snippet_second_run_into_the_same_folder(workdir, capsys):
    argv = shlex.split(snippets()["cli"][1].strip())[1:]
    data = workdir / "out" / "data" / "sample.jsonl"
    assert main(argv) == 0
    first = data.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 0
    assert data.read_text(encoding="utf-8") == first
    assert [json.loads(line)["text"] for line in first.splitlines()]


# -- the HF mapper and datasets' cache ---------------------------------------------------------------


def test_fresh_mapper_stats_have_every_counter_at_zero():
    stats = fairstream_map_fn(cap=0.01).stats()
    assert stats["counters"] == dict.fromkeys(sorted(COUNTERS), 0)
    assert stats["skipped"] == {} and stats["attributes"] == {}


def test_counters_are_those_the_step_counts(docs):
    """COUNTERS lists every counter a step can count (empty and skipped documents included), and no other."""
    step = FilterStep(FilterConfig(cap=0.01, on_error="skip"))
    step.process([*docs, {"text": "   "}, {"text": None}])
    assert set(step.stats()["counters"]) == set(COUNTERS)


def test_two_mappers_never_share_a_fingerprint_and_a_copy_keeps_its_own():
    a, b = fairstream_map_fn(cap=0.01, seed=0), fairstream_map_fn(cap=0.01, seed=0)
    assert Hasher.hash(a) != Hasher.hash(b)
    assert Hasher.hash(a) == Hasher.hash(a)  # stable while the mapper does not change
    assert Hasher.hash(pickle.loads(pickle.dumps(a))) == Hasher.hash(a)  # what num_proc workers get


def test_reused_mapper_continues_its_stream_on_a_second_map(workdir):
    ds = load_dataset("json", data_files="shards/*.jsonl", split="train")
    mapper = fairstream_map_fn(cap=0.01, seed=0)
    first = ds.map(mapper, batched=True, batch_size=256)
    once = mapper.stats()["counters"]
    second = ds.map(mapper, batched=True, batch_size=256)
    twice = mapper.stats()["counters"]
    # not served from the cache: the mapper ran again, after the first 120 rows of its stream
    assert first.cache_files != second.cache_files
    assert twice["docs_in"] == 2 * once["docs_in"] == 240
    assert twice["sentences_dropped"] > once["sentences_dropped"]
    # a new mapper starts over: it keeps what the first map kept
    again = ds.map(fairstream_map_fn(cap=0.01, seed=0), batched=True, batch_size=256)
    assert again["text"] == first["text"]


def test_num_proc_workers_map_copies_and_new_mappers_are_not_served_the_cache(workdir):
    ds = Dataset.from_json("shards/sample.jsonl")
    mapper = fairstream_map_fn(cap=0.01, seed=0)
    first = ds.map(mapper, batched=True, batch_size=16, num_proc=2)
    assert len(first) == 120 and first["text"] != ds["text"]  # the workers filtered
    assert mapper.stats()["counters"]["docs_in"] == 0  # the workers' copies counted, not this one
    other = ds.map(fairstream_map_fn(cap=0.01, seed=0), batched=True, batch_size=16, num_proc=2)
    assert {f["filename"] for f in other.cache_files}.isdisjoint(f["filename"] for f in first.cache_files)
    assert other["text"] == first["text"]
