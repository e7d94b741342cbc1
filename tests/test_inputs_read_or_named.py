"""Every input is read or named: what ``fairstream filter IN/`` reads, what it names, and why.

Shards are small slices of real web text (fineweb-edu); the real CLI and the shipped model run
with ``--cap 1``, which drops nothing, so documents out must equal documents in. Outputs are
counted under ``OUT/data`` after decompressing them, and their names checked (a symlink keeps
its own name).
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import zstandard

from fairstream.cli import main
from fairstream.errors import InvalidDocumentError, OutputError, ShardError
from fairstream.io import (
    RUN_MARKER_FILES,
    ShardListing,
    find_shards,
    iter_records,
    list_shards,
    read_jsonl,
    relative_names,
    write_jsonl,
)
from fairstream.jobs.reader import ShardReader

BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@pytest.fixture(scope="module")
def docs(shared_dir: Path) -> list[dict[str, Any]]:
    """The first 40 documents of the shared fineweb-edu sample."""
    out = []
    with gzip.open(shared_dir / "data/corpus/fineweb-edu-sample.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            out.append(json.loads(line))
            if len(out) == 40:
                break
    return out


def encode(docs: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(d).encode("utf-8") + b"\n" for d in docs)


def write_shard(path: Path, docs: list[dict[str, Any]], *, compress: str | None = None) -> Path:
    """Write ``docs`` as JSON lines (with the standard libraries, not fairstream's writers)."""
    data = encode(docs)
    if compress == "gzip":
        data = gzip.compress(data, mtime=0)
    elif compress == "zstd":
        data = zstandard.ZstdCompressor().compress(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    if data.startswith(GZIP_MAGIC):
        return gzip.decompress(data)
    if data.startswith(ZSTD_MAGIC):
        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    return data


def outputs(out: Path) -> dict[str, int]:
    """Documents in each output shard under ``out/data``, by its name there."""
    data = out / "data"
    return {
        str(p.relative_to(data)): sum(1 for line in decompressed(p).splitlines() if line.strip())
        for p in sorted(data.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
    }


def run_filter(*args: str | Path) -> int:
    return main(["filter", *map(str, args), "--no-report", "--no-progress", "--cap", "1"])


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("fairstream: error: ") and "Traceback" not in err
    return lines[0]


# -- folders and names -----------------------------------------------------------------------------
def test_symlinked_folder_is_read_under_the_links_name(docs, tmp_path: Path):
    """A symlinked folder is followed (Path.rglob skipped it) and its files keep the link's path."""
    write_shard(tmp_path / "in" / "a.jsonl", docs[:10])
    write_shard(tmp_path / "elsewhere" / "real" / "x.jsonl", docs[10:20])
    write_shard(tmp_path / "elsewhere" / "real" / "deeper" / "y.jsonl.gz", docs[20:30], compress="gzip")
    os.symlink(tmp_path / "elsewhere" / "real", tmp_path / "in" / "linked")
    os.symlink("..", tmp_path / "elsewhere" / "real" / "deeper" / "up")  # a loop inside the link
    out = tmp_path / "out"
    assert run_filter(tmp_path / "in", "-o", out) == 0
    assert outputs(out) == {"a.jsonl": 10, "linked/deeper/y.jsonl.gz": 10, "linked/x.jsonl": 10}
    listing = find_shards([tmp_path / "in"])
    assert [str(n) for n in listing.names] == ["a.jsonl", "linked/deeper/y.jsonl.gz", "linked/x.jsonl"]
    assert listing.shards[2] == tmp_path / "in" / "linked" / "x.jsonl"  # not resolved
    assert any("linked/deeper/up: symlink loop" in s for s in listing.skipped)


def test_symlinked_file_is_named_by_the_link(docs, tmp_path: Path):
    """A symlinked file's output is named by the link, not by its target's name and folder."""
    write_shard(tmp_path / "in" / "a.jsonl", docs[:10])
    target = write_shard(tmp_path / "store" / "target-name.jsonl", docs[10:20])
    os.symlink(target, tmp_path / "in" / "b.jsonl")
    out = tmp_path / "out"
    assert run_filter(tmp_path / "in", "-o", out) == 0
    assert outputs(out) == {"a.jsonl": 10, "b.jsonl": 10}
    # the same through the old helpers
    shards = list_shards([tmp_path / "in"])
    assert shards == [tmp_path / "in" / "a.jsonl", tmp_path / "in" / "b.jsonl"]
    assert [str(n) for n in relative_names(shards)] == ["a.jsonl", "b.jsonl"]


def test_every_shard_name_is_read_in_its_own_format_and_json_is_named(docs, tmp_path: Path):
    """Upper-case names, ``.gzip`` and ``.zst`` are read (they were ignored: "1 shard"); ``.json`` is named."""
    inp = tmp_path / "in"
    write_shard(inp / "a.jsonl", docs[:10])
    write_shard(inp / "B.JSONL", docs[10:20])
    write_shard(inp / "c.jsonl.gzip", docs[20:30], compress="gzip")
    write_shard(inp / "d.json", docs[30:40])  # JSON lines, but a .json name: not read, named
    write_shard(inp / "e.jsonl.zst", docs[30:40], compress="zstd")
    write_shard(inp / "F.JSONL.GZ", docs[:5], compress="gzip")
    (inp / "notes.txt").write_text("not a shard\n")
    (inp / ".a.jsonl.x1.tmp").write_text("half")  # a writer's temporary file: passed over silently
    out = tmp_path / "out"
    assert run_filter(inp, "-o", out) == 0
    assert outputs(out) == {
        "B.JSONL": 10,
        "F.JSONL.GZ": 5,
        "a.jsonl": 10,
        "c.jsonl.gzip": 10,
        "e.jsonl.zst": 10,
    }
    # each output is in its input's format
    assert (out / "data" / "c.jsonl.gzip").read_bytes().startswith(GZIP_MAGIC)
    assert (out / "data" / "F.JSONL.GZ").read_bytes().startswith(GZIP_MAGIC)
    assert (out / "data" / "e.jsonl.zst").read_bytes().startswith(ZSTD_MAGIC)
    kept = [json.loads(line) for line in decompressed(out / "data" / "e.jsonl.zst").splitlines()]
    assert [d["id"] for d in kept] == [d["id"] for d in docs[30:40]]
    listing = find_shards([inp])
    assert [p.name for p in listing.shards] == [
        "B.JSONL",
        "F.JSONL.GZ",
        "a.jsonl",
        "c.jsonl.gzip",
        "e.jsonl.zst",
    ]
    assert len(listing.skipped) == 2
    assert listing.skipped[0].startswith(f"{inp / 'd.json'}: plain .json is not read")
    assert listing.skipped[1].startswith(f"{inp / 'notes.txt'}: not a shard (")


def test_zst_given_directly_is_read_as_zstd(docs, tmp_path: Path):
    """A ``.zst`` file named on the command line is decompressed (it failed as "invalid UTF-8")."""
    shard = write_shard(tmp_path / "one.jsonl.zst", docs[:10], compress="zstd")
    out = tmp_path / "out"
    assert run_filter(shard, "-o", out) == 0
    assert outputs(out) == {"one.jsonl.zst": 10}
    assert (out / "data" / "one.jsonl.zst").read_bytes().startswith(ZSTD_MAGIC)
    # a zstd file of several frames (as `zstd` appends and `pzstd` writes) is read to its end
    two = tmp_path / "two.jsonl.zst"
    two.write_bytes(
        zstandard.ZstdCompressor().compress(encode(docs[:3]))
        + zstandard.ZstdCompressor().compress(encode(docs[3:7]))
    )
    assert [d["id"] for d in read_jsonl(two)] == [d["id"] for d in docs[:7]]


def test_corrupt_or_truncated_zst_is_an_unreadable_shard(docs, tmp_path: Path):
    """A truncated zstd file is reported like a truncated gzip file (zstandard's readers stop silently)."""
    data = zstandard.ZstdCompressor().compress(encode(docs[:20]))
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ShardError, match=r"cut\.jsonl\.zst: corrupt or truncated after line \d+"):
        list(read_jsonl(cut))
    skipped: list[str] = []
    n = sum(1 for _ in iter_records(cut, on_error="skip", skipped=skipped))
    assert n < 20 and len(skipped) == 1 and skipped[0].reason == "unreadable-shard"  # type: ignore[attr-defined]
    assert f"{n} documents were read, the rest of the file is lost" in skipped[0]
    garbage = tmp_path / "garbage.jsonl.zst"
    garbage.write_bytes(data[:10] + b"x" * 50 + data[60:])
    reader = ShardReader(garbage, on_error="skip")
    assert list(reader.records()) == [] and reader.skipped[0].reason == "unreadable-shard"
    assert "ZstdError" in reader.skipped[0]


def test_zst_without_zstandard_says_what_to_install(tmp_path: Path, monkeypatch):
    (tmp_path / "x.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(b'{"text": "a"}\n'))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard raises ImportError
    with pytest.raises(ShardError) as info:
        list(read_jsonl(tmp_path / "x.jsonl.zst"))
    assert str(info.value) == (
        f"{tmp_path / 'x.jsonl.zst'}: zstd-compressed; pip install zstandard (or 'fairstream[zstd]') to read it"
    )
    with pytest.raises(OutputError, match=r"y\.jsonl\.zst: zstd output; pip install zstandard"):
        write_jsonl(tmp_path / "y.jsonl.zst", [{"text": "a"}])
    assert not (tmp_path / "y.jsonl.zst").exists()


# -- byte order marks and lone surrogates -----------------------------------------------------------
def test_utf8_bom_before_the_first_line_is_accepted(docs, tmp_path: Path):
    """A BOM failed the shard, or with ``--on-error skip`` lost its first document."""
    shard = tmp_path / "in" / "bom.jsonl"
    shard.parent.mkdir()
    shard.write_bytes(BOM + encode(docs[:10]))
    for on_error in ("raise", "skip"):
        out = tmp_path / f"out-{on_error}"
        assert run_filter(shard.parent, "-o", out, "--on-error", on_error) == 0
        assert outputs(out) == {"bom.jsonl": 10}
        assert json.loads((out / "stats.json").read_text())["skipped"] == {}
        first = json.loads((out / "data" / "bom.jsonl").read_text(encoding="utf-8").splitlines()[0])
        assert first["id"] == docs[0]["id"]
    assert next(iter_records(shard)) == (1, docs[0])
    assert next(iter(ShardReader(shard).records())).data == docs[0]
    gz = write_shard(tmp_path / "bom.jsonl.gz", [], compress=None)
    gz.write_bytes(gzip.compress(BOM + encode(docs[:2])))
    assert [d["id"] for d in read_jsonl(gz)] == [d["id"] for d in docs[:2]]


def surrogate_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with a lone surrogate in the middle of its text (written as the JSON escape ``\\ud800``)."""
    text = doc["text"]
    return {**doc, "id": "broken", "text": text[:40] + "\ud800" + text[40:]}


def test_lone_surrogate_is_one_line_or_a_counted_skip(docs, tmp_path: Path, capsys):
    """Valid JSON with a lone surrogate escape crashed the keyword matcher (a 40-line traceback, exit 1)."""
    rows = [*docs[:3], surrogate_doc(docs[3]), *docs[4:10]]
    shard = tmp_path / "in" / "s.jsonl"
    shard.parent.mkdir()
    shard.write_bytes(b"".join(json.dumps(d).encode("ascii") + b"\n" for d in rows))
    assert b"\\ud800" in shard.read_bytes()
    capsys.readouterr()
    assert run_filter(shard.parent, "-o", tmp_path / "out") == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"{shard}:4 (id='broken') field 'text': lone surrogate U+D800 at character 40" in line
    assert "--on-error skip" in line
    out = tmp_path / "out-skip"
    assert run_filter(shard.parent, "-o", out, "--on-error", "skip") == 0
    assert outputs(out) == {"s.jsonl": 9}
    stats = json.loads((out / "stats.json").read_text())
    assert stats["skipped"] == {"lone-surrogate": 1}
    kept = [json.loads(line)["id"] for line in (out / "data" / "s.jsonl").read_text().splitlines()]
    assert "broken" not in kept and len(kept) == 9


def test_lone_surrogate_in_the_python_api(docs):
    """``FairStream`` and ``FilterStep`` count the document as skipped instead of crashing."""
    import fairstream
    from fairstream.core import FilterStep
    from fairstream.core.config import FilterConfig

    rows = [docs[0], surrogate_doc(docs[1]), docs[2]]
    stream = fairstream.FairStream(rows, on_error="skip", cap=1.0)
    assert [d["id"] for d in stream] == [docs[0]["id"], docs[2]["id"]]
    assert stream.stats()["skipped"] == {"lone-surrogate": 1}
    with pytest.raises(InvalidDocumentError, match=r"document 1 .*lone surrogate U\+D800 at character 40"):
        list(fairstream.FairStream(rows, cap=1.0))
    step = FilterStep(FilterConfig(on_error="skip", cap=1.0))
    results = step.process(rows)
    assert [r.error.reason if r.error else None for r in results] == [None, "lone-surrogate", None]


def test_records_with_lone_surrogates_are_written(tmp_path: Path):
    """Another field with a lone surrogate is written as a JSON escape instead of failing the output."""
    from fairstream.jobs.checkpoint import ShardParts

    rows = [{"text": "café", "title": "x \udc80 y"}, {"text": "plain", "title": "ü"}]
    for name in ("o.jsonl", "o.jsonl.gz", "O.JSONL.ZST"):
        assert write_jsonl(tmp_path / name, rows) == 2
        assert list(read_jsonl(tmp_path / name)) == rows
    lines = (tmp_path / "o.jsonl").read_bytes().splitlines()
    assert lines == [
        b'{"text": "caf\\u00e9", "title": "x \\udc80 y"}',
        '{"text": "plain", "title": "ü"}'.encode(),
    ]
    parts = ShardParts(tmp_path / "parts", ".jsonl")
    parts.write_part(0, rows[:1])
    parts.write_part(1, rows[1:])
    for name in ("joined.jsonl.ZST", "joined.jsonl.gzip"):
        parts.join(tmp_path / name, 2)
        assert list(read_jsonl(tmp_path / name)) == rows
    assert (tmp_path / "joined.jsonl.ZST").read_bytes().startswith(ZSTD_MAGIC)
    assert (tmp_path / "joined.jsonl.gzip").read_bytes().startswith(GZIP_MAGIC)


# -- the listing ------------------------------------------------------------------------------------
def test_find_shards_ends_on_symlink_loops_and_reads_each_file_once(tmp_path: Path):
    inp = tmp_path / "in"
    (inp / "sub").mkdir(parents=True)
    for rel in ("a.jsonl", "sub/b.jsonl"):
        (inp / rel).write_text('{"text": "x"}\n')
    os.symlink(".", inp / "self")
    os.symlink("..", inp / "sub" / "up")
    os.symlink("a.jsonl", inp / "again.jsonl")  # the same file through a link
    os.symlink("missing.jsonl", inp / "dangling.jsonl")
    listing = find_shards([inp, inp / "sub" / "b.jsonl"])
    assert isinstance(listing, ShardListing)
    assert listing.shards == [inp / "a.jsonl", inp / "sub" / "b.jsonl"]
    assert [str(n) for n in listing.names] == ["a.jsonl", "sub/b.jsonl"]
    assert listing.skipped == [
        f"{inp / 'again.jsonl'}: the same file as {inp / 'a.jsonl'}, read once",
        f"{inp / 'dangling.jsonl'}: a symlink to nothing (missing target or a loop)",
        f"{inp / 'self'}: symlink loop (back to {inp}), not read again",
        f"{inp / 'sub' / 'up'}: symlink loop (back to {inp}), not read again",
        f"{inp / 'sub' / 'b.jsonl'}: the same file as {inp / 'sub' / 'b.jsonl'}, read once",
    ]


def test_find_shards_passes_over_output_folders(tmp_path: Path):
    inp = tmp_path / "in"
    (inp / "prev" / "data").mkdir(parents=True)
    (inp / "a.jsonl").write_text('{"text": "x"}\n')
    (inp / "prev" / RUN_MARKER_FILES[1]).write_text("{}")
    (inp / "prev" / "data" / "a.jsonl").write_text('{"text": "x"}\n')
    (inp / "out" / "data").mkdir(parents=True)
    (inp / "out" / "data" / "a.jsonl").write_text('{"text": "x"}\n')
    (inp / ".cache").mkdir()
    (inp / ".cache" / "x.jsonl").write_text('{"text": "x"}\n')
    listing = find_shards([inp], exclude=[inp / "out"])
    assert listing.shards == [inp / "a.jsonl"]
    assert listing.skipped == [
        f"{inp / '.cache'}: a hidden folder, not searched",
        f"{inp / 'out'}: the output folder, not read as input",
        f"{inp / 'prev'}: a fairstream output folder (holds _state.json), not searched; name its data folder "
        "to read its outputs",
    ]
    # an earlier run's data folder named directly is read
    assert find_shards([inp / "prev" / "data"]).shards == [inp / "prev" / "data" / "a.jsonl"]
    # the output folder is never read, even when named
    with pytest.raises(
        ShardError, match=r"out/data/a\.jsonl: is inside the output folder .*never read as input"
    ):
        find_shards([inp / "out" / "data" / "a.jsonl"], exclude=[inp / "out"])
    # nothing to read: the message says what was passed over
    with pytest.raises(ShardError, match=r"no shards .* found in .*; 1 skipped: .*prev: a fairstream output"):
        find_shards([inp / "prev"])
    # a file named directly is read whatever its name (as today)
    (inp / "notes.txt").write_text('{"text": "x"}\n')
    assert find_shards([inp / "notes.txt"]).shards == [inp / "notes.txt"]
