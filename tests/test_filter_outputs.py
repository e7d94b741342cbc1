"""fairstream filter: every input has its own output, losses are counted and named, progress is sane."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

from fairstream import filter_job
from fairstream.cli import main, sample_corpus_path
from fairstream.core import FilterConfig
from fairstream.jobs.run_folder import new_manifest

TEXT = "Many Mexican families opened bakeries in the valley and sold bread to the neighbours there."


def docs(prefix: str, n: int) -> list[dict]:
    return [{"id": f"{prefix}-{i}", "text": f"{TEXT} Number {i}."} for i in range(n)]


def write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
        path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def read_ids(path: Path) -> list[str]:
    if path.name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return [r["id"] for r in pq.read_table(path).to_pylist()]
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [json.loads(line)["id"] for line in f]


def run(tiny_model_dir: Path, inputs: list[Path], out: Path, *extra: str) -> int:
    args = ["filter", *map(str, inputs), "--model", str(tiny_model_dir), "-o", str(out), "--cap", "1"]
    return main([*args, "--no-report", "--no-progress", *extra])


def test_same_stem_inputs_get_their_own_outputs(tiny_model_dir: Path, tmp_path: Path, capsys):
    a = write(tmp_path / "in" / "x.jsonl", docs("jsonl", 7))
    b = write(tmp_path / "in" / "x.parquet", docs("parquet", 5))
    c = write(tmp_path / "in" / "x.jsonl.gz", docs("gz", 3))
    out = tmp_path / "out"
    assert run(tiny_model_dir, [a, b, c], out) == 0
    files = sorted(p.relative_to(out / "data").as_posix() for p in (out / "data").rglob("*") if p.is_file())
    assert files == ["x.jsonl", "x.jsonl.gz", "x.parquet"]
    ids_out = Counter(i for f in files for i in read_ids(out / "data" / f))
    assert ids_out == Counter(d["id"] for d in docs("jsonl", 7) + docs("parquet", 5) + docs("gz", 3))
    stats = json.loads((out / "stats.json").read_text())
    assert stats["counters"]["docs_in"] == stats["counters"]["docs_out"] == sum(ids_out.values()) == 15


def test_crawl_dump_layout_is_accepted(tiny_model_dir: Path, tmp_path: Path):
    """One folder per dump, each with 000.jsonl.gz ...: outputs keep the folders."""
    root = tmp_path / "crawl"
    for dump in ("CC-2024-10", "CC-2024-18"):
        for k in range(2):
            write(root / dump / f"00{k}.jsonl.gz", docs(f"{dump}-{k}", 4))
    out = tmp_path / "out"
    assert run(tiny_model_dir, [root], out) == 0
    names = sorted(p.relative_to(out / "data").as_posix() for p in (out / "data").rglob("*.gz"))
    assert names == [f"{d}/00{k}.jsonl.gz" for d in ("CC-2024-10", "CC-2024-18") for k in range(2)]
    for name in names:
        dump, file = name.split("/")
        assert read_ids(out / "data" / name) == [d["id"] for d in docs(f"{dump}-{file[2]}", 4)]
    # the same two folders named directly share their parent as the root
    out2 = tmp_path / "out2"
    assert run(tiny_model_dir, [root / "CC-2024-10", root / "CC-2024-18"], out2) == 0
    assert sorted(p.relative_to(out2 / "data").as_posix() for p in (out2 / "data").rglob("*.gz")) == names


def test_truncated_gzip_with_skip_is_counted_and_named(tiny_model_dir: Path, tmp_path: Path, capsys):
    good = write(tmp_path / "in" / "a.jsonl.gz", docs("a", 10))
    bad = tmp_path / "in" / "b.jsonl.gz"
    rows = [{"id": f"b-{i}", "text": f"{TEXT} {'filler words here ' * 40}{i}"} for i in range(400)]
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode())
    bad.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    assert run(tiny_model_dir, [good, bad], out) == 2  # on_error=raise: one line naming the file
    err = capsys.readouterr().err
    assert f"{bad}: corrupt or truncated after line" in err and "--on-error skip" in err
    assert run(tiny_model_dir, [good, bad], out, "--on-error", "skip") == 0
    err = capsys.readouterr().err
    stats = json.loads((out / "stats.json").read_text())
    n_read = stats["counters"]["docs_in"] - 10
    assert 0 < n_read < 400
    assert stats["skipped"] == {"unreadable-shard": 1}
    assert len(stats["problems"]) == 1 and stats["problems"][0].startswith(f"{bad}: corrupt or truncated")
    assert f"lost: {bad}: corrupt or truncated" in err
    assert f"{n_read} documents were read, the rest of the file is lost" in err
    assert len(read_ids(out / "data" / "b.jsonl.gz")) == n_read


def test_corrupt_parquet_with_skip_is_counted_like_jsonl(tiny_model_dir: Path, tmp_path: Path, capsys):
    good = write(tmp_path / "in" / "a.jsonl", docs("a", 6))
    bad = write(tmp_path / "in" / "b.parquet", docs("b", 6))
    bad.write_bytes(bad.read_bytes()[:100])
    out = tmp_path / "out"
    assert run(tiny_model_dir, [good, bad], out) == 2
    assert f"{bad}: unreadable Parquet" in capsys.readouterr().err
    assert run(tiny_model_dir, [good, bad], out, "--on-error", "skip") == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["skipped"] == {"unreadable-shard": 1} and stats["counters"]["docs_in"] == 6
    assert f"lost: {bad}: unreadable Parquet" in capsys.readouterr().err


def test_leftover_temp_files_are_removed_on_the_next_run(tiny_model_dir: Path, tmp_path: Path):
    shard = write(tmp_path / "in" / "a.jsonl", docs("a", 3))
    out = tmp_path / "out"
    # what a kill during a shard write leaves behind: the run's manifest, temporary files
    job = filter_job.FilterJob([shard], out, FilterConfig(model=str(tiny_model_dir), cap=1), progress=False)
    with job.folder.claim(new_manifest("stream", job.config, job.shards, job.names)):
        pass
    (out / "data").mkdir(parents=True)
    left = [out / "data" / ".a.jsonl.Xk3j2.tmp", out / "._state.json.a81k.tmp"]
    for p in left:
        p.write_text("half written")
    assert run(tiny_model_dir, [shard], out) == 0
    assert not any(p.exists() for p in left)
    assert not list(out.rglob("*.tmp"))
    assert read_ids(out / "data" / "a.jsonl") == [d["id"] for d in docs("a", 3)]


def test_progress_without_a_terminal_is_plain_lines(tiny_model_dir: Path, tmp_path: Path, capsys):
    args = ["filter", str(sample_corpus_path()), "--model", str(tiny_model_dir), "-o", str(tmp_path / "o")]
    assert main([*args, "--no-report"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    last = [line for line in err.splitlines() if line.startswith("fairstream filter:")]
    assert last and last[-1].startswith("fairstream filter: ") and " done in " in last[-1]


def test_progress_bar_eta_uses_the_average_rate():
    """On a terminal: one bar over the input bytes (a known total), ETA from the average rate, kept at the end."""
    import io

    from fairstream.progress import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    clock = [0.0]
    term = Terminal()
    bar = Progress(1000, desc="fairstream filter", file=term)
    tq = bar._bar
    tq._time = lambda: clock[0]
    tq.start_t = tq.last_print_t = 0.0
    clock[0] = 10.0  # a slow start (model load, the first look-ahead batch) ...
    bar.advance(100)
    clock[0] = 11.0  # ... then fast
    bar.advance(400)
    # 500 of 1000 bytes in 11 s: 11 s left by the average rate
    assert "500/1.00k [00:11<00:11" in tq.format_meter(**tq.format_dict)
    bar.close()
    assert term.getvalue().endswith("\n")  # the final bar stays on screen
    assert "500/1.00k" in term.getvalue().rsplit("\r", 1)[-1]


def test_stream_scope_reads_a_shard_lazily_and_writes_it_incrementally(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch
):
    """Bounded memory: a shard is read at most one look-ahead window ahead of its output, and the
    output grows in a temporary file that replaces the real one only when the shard is done."""
    from fairstream import filter_job
    from fairstream.core.config import FilterConfig
    from fairstream.jobs.reader import ShardReader

    n, window = 120, 8
    shard = write(tmp_path / "in" / "big.jsonl.gz", docs("big", n))
    target = tmp_path / "out" / "data" / shard.name
    read = 0
    records = ShardReader.records

    def counting(self: ShardReader, start: int = 0):
        nonlocal read
        for rec in records(self, start):
            read += 1
            yield rec

    ahead: list[int] = []
    write_documents = filter_job.write_documents

    def watching(path: Path, kept, **kw):
        def watched():
            for doc in kept:
                # documents read beyond this one: at most what the look-ahead window holds
                ahead.append(read - (int(doc["id"].split("-")[1]) + 1))
                assert not target.exists() and list(target.parent.glob(f".{shard.name}.*.tmp"))
                yield doc

        return write_documents(path, watched(), **kw)

    monkeypatch.setattr(ShardReader, "records", counting)
    monkeypatch.setattr(filter_job, "write_documents", watching)
    config = FilterConfig(model=str(tiny_model_dir), cap=1, lookahead=window)
    filter_job.FilterJob([shard], tmp_path / "out", config, report=False, progress=False).run()
    assert read == n and len(ahead) == len(read_ids(target)) > n // 2
    assert max(ahead) < window, max(ahead)
    assert not list(target.parent.glob("*.tmp"))
