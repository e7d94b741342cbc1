"""``fairstream bench --quick``: a real run on a slice of the shipped sample corpus."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

import torch

from fairstream.bench import BenchResult, Row, best_rates, format_table, plot_sweep
from fairstream.cli import main


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    capture = pytest.MonkeyPatch()
    import io
    import sys

    buf = io.StringIO()
    capture.setattr(sys, "stdout", buf)
    try:
        rc = main(["bench", "--quick", "--threads", "1", "--no-progress", "--device", "cpu", "-o", str(out)])
    finally:
        capture.undo()
    return rc, buf.getvalue(), out


def test_quick_run_writes_table_json_and_plot(quick_run):
    rc, printed, out = quick_run
    assert rc == 0
    assert "| backend | device | batch |" in printed
    data = json.loads((out / "bench.json").read_text())
    assert (out / "bench.md").read_text().count("| onnxruntime int8 (shipped) | cpu |") == 2  # batch 1 and 8
    assert (out / "batch_sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    e2e, kw = data["end_to_end"], data["keyword_stage"]
    assert e2e["docs"] == data["corpus"]["docs"] == 40
    assert e2e["docs_per_s"] > 0 and e2e["mb_per_s"] > 0 and e2e["mentions_per_s"] > 0
    assert 0 < e2e["mentions_judged"] <= kw["mentions"]
    assert 0 < e2e["split"]["model_s"] < e2e["wall_s"] and 0 < e2e["split"]["keyword_stage_s"] < e2e["wall_s"]
    assert kw["unique_pairs"] <= kw["mentions"]
    # the default cascade says how much of the run its full model judged
    assert e2e["model"] == "fairstream-joint-v6-cascade" and 0 < e2e["cascade_routed_share"] < 1
    assert "of the judged pairs on to its full model" in printed


def test_every_cpu_backend_is_timed_and_agrees_with_int8(quick_run):
    _, _, out = quick_run
    rows = json.loads((out / "bench.json").read_text())["rows"]
    timed = [r for r in rows if r["skipped"] is None]
    expected = {"onnxruntime int8 (shipped)", "onnxruntime fp32", "pytorch fp32 (transformers, sdpa)"}
    bf16_row = next(r for r in rows if r["backend"] == "pytorch bf16 on CPU (oneDNN, sdpa)")
    if torch.ops.mkldnn._is_mkldnn_bf16_supported():
        expected.add(bf16_row["backend"])
    else:
        assert "no bf16" in bf16_row["skipped"]
    assert {r["backend"] for r in timed} == expected
    for r in timed:
        assert r["pairs"] == 48 and r["pairs_per_s"] > 0 and r["pairs_per_cpu_s"] > 0
        assert r["batch_size"] in ("1", "8")
        assert r["max_dp_vs_first_batch"] is not None and r["max_dp_vs_first_batch"] >= 0
        if r["backend"].startswith("onnxruntime int8"):
            # the shipped model is batch-invariant: the same decisions at every batch size
            assert r["agreement_vs_int8"]["mean_abs_dp"] < 1e-6
            assert r["max_dp_vs_first_batch"] == 0.0
        else:
            assert r["agreement_vs_int8"]["person_agreement"] >= 0.95
            assert 0 < r["agreement_vs_int8"]["mean_abs_dp"] < 0.02


def test_gpu_rows_say_why_they_did_not_run(quick_run):
    _, printed, out = quick_run
    rows = json.loads((out / "bench.json").read_text())["rows"]
    gpu_rows = [r for r in rows if r["device"].startswith("cuda")]
    assert {r["backend"] for r in gpu_rows} == {
        "pytorch fp16 (sdpa)",
        "pytorch bf16 (sdpa)",
        "onnxruntime fp16 (CUDA provider)",
    }
    for r in gpu_rows:  # --device cpu: no GPU row runs, and none carries a number
        assert r["skipped"] and r["pairs_per_s"] is None and r["wall_s"] is None
    reason = (
        "--device cpu" if torch.cuda.is_available() else "no CUDA device (torch.cuda.is_available() is False)"
    )
    assert printed.count(f"not run: {reason}") == 3


def test_json_flag_prints_json(capsys):
    rc = main(
        ["bench", "--quick", "--max-pairs", "8", "--limit", "10", "--batch-sizes", "4", "--threads", "1",
         "--no-progress", "--device", "cpu", "--json"]
    )  # fmt: skip
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert data["corpus"]["docs"] == 10
    assert {r["batch_size"] for r in data["rows"] if r["skipped"] is None} == {"4"}
    assert data["end_to_end"]["lookahead"] == 1024  # the filter's default


def test_lookahead_option_sets_the_end_to_end_window(capsys):
    rc = main(
        ["bench", "--quick", "--max-pairs", "8", "--limit", "10", "--batch-sizes", "4", "--threads", "1",
         "--no-progress", "--device", "cpu", "--backends", "int8", "--lookahead", "3", "--json"]
    )  # fmt: skip
    assert rc == 0
    e2e = json.loads(capsys.readouterr().out)["end_to_end"]
    assert e2e["lookahead"] == 3 and e2e["docs_out"] == e2e["docs"] == 10


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "gpu"], "--device: invalid _device value: 'gpu'"),
        (["--batch-sizes", "8,0"], "--batch-sizes"),
        (["--rounds", "0"], "--rounds"),
        (["--backends", "int8,fp64"], "--backends"),
        (["--lookahead", "0"], "--lookahead"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_flag(args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message.split(":")[0] in err and "must be" in err


def test_backends_option_times_only_those_and_reports_each_as_it_finishes(tmp_path, capsys):
    out = tmp_path / "b"
    rc = main(
        ["bench", "--quick", "--max-pairs", "8", "--limit", "10", "--batch-sizes", "4", "--threads", "1",
         "--no-progress", "--device", "cpu", "--backends", "torch-fp32,int8", "-o", str(out)]
    )  # fmt: skip
    assert rc == 0
    data = json.loads((out / "bench.json").read_text())
    assert data["complete"] is True
    assert [r["backend"] for r in data["rows"]] == [
        "onnxruntime int8 (shipped)",
        "pytorch fp32 (transformers, sdpa)",
    ]
    err = capsys.readouterr().err
    # a line per finished row on stderr, end to end first, in the order they were measured
    lines = [line for line in err.splitlines() if line.startswith("fairstream bench:")]
    assert lines[0].startswith("fairstream bench: end to end") and "MB/s on cpu" in lines[0]
    assert "onnxruntime int8 (shipped) batch 4:" in lines[1] and "pytorch fp32" in lines[2]


def test_a_stopped_run_leaves_the_rows_it_measured(tmp_path):
    from fairstream.bench import run_bench, write_outputs

    seen: list[tuple[int, bool]] = []

    class Stop(Exception):
        pass

    def on_update(partial: BenchResult) -> None:
        seen.append((len(partial.rows), partial.complete))
        write_outputs(partial, tmp_path, plot=False)
        if partial.rows:
            raise Stop  # as a time limit would, after the first backend

    with pytest.raises(Stop):
        run_bench(
            quick=True, max_pairs=8, limit=10, batch_sizes=[4], threads=1, progress=False, device="cpu",
            only=["int8", "torch-fp32"], on_update=on_update,
        )  # fmt: skip
    assert seen == [(0, False), (1, False)]
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["complete"] is False and data["end_to_end"]["docs"] == 10
    assert [r["backend"] for r in data["rows"]] == ["onnxruntime int8 (shipped)"]
    assert (tmp_path / "bench.md").read_text().startswith("# fairstream bench\n\n*Partial")
    with pytest.raises(ValueError, match=r"unknown backends.*allowed: int8, onnx-fp32"):
        run_bench(quick=True, only=["gpu"])


def test_table_ratios_and_plot_from_rows():
    result = BenchResult(
        machine={"cpu": "x", "cores": 2, "python": "3", "onnxruntime": "1", "torch": "2", "date": "d"},
        corpus={"docs": 1, "mb": 0.1, "shards": ["s"], "pairs_timed": 10},
        end_to_end={
            "backend": "JointModel", "device": "cpu", "docs_per_s": 1.0, "mb_per_s": 0.1, "mentions_per_s": 2.0,
            "mentions_judged": 2, "wall_s": 1.0, "cpu_s": 1.0, "split": {"model_share": 0.8, "keyword_share": 0.2},
        },
        keyword_stage={"mb_per_s": 1.0, "mb_per_cpu_s": 1.0, "candidate_sentences": 1, "mentions": 2,
                       "unique_pairs": 2, "duplicate_share": 0.0},
        rows=[
            Row("pytorch fp32 (transformers, sdpa)", "cpu", "fp32", "8", 10, 1.0, 1.0, 10.0, 10.0),
            Row("onnxruntime int8 (shipped)", "cpu", "int8", "8", 10, 0.5, 0.2, 20.0, 50.0),
            Row("onnxruntime int8 (shipped)", "cpu", "int8", "32", 10, 0.5, 0.25, 20.0, 40.0),
            Row("pytorch fp16 (sdpa)", "cuda", "fp16", "-", skipped="no CUDA device"),
        ],
    )  # fmt: skip
    assert best_rates(result) == {
        "pytorch fp32 (transformers, sdpa)": 10.0,
        "onnxruntime int8 (shipped)": 50.0,
    }
    table = format_table(result)
    assert "onnxruntime int8 (shipped) 5.00x" in table
    assert "| pytorch fp16 (sdpa) | cuda | - | not run: no CUDA device |" in table
    assert plot_sweep(result)[:4] == b"\x89PNG"


@pytest.mark.gpu
@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA GPU: torch.cuda.is_available() is False"
)
def test_gpu_rows_run_on_a_gpu(tmp_path):
    rc = main(["bench", "--quick", "--no-progress", "--device", "cuda", "-o", str(tmp_path)])
    assert rc == 0
    rows = json.loads((tmp_path / "bench.json").read_text())["rows"]
    fp16 = [r for r in rows if r["backend"] == "pytorch fp16 (sdpa)"]
    assert fp16 and fp16[0]["pairs_per_s"] > 0 and fp16[0]["gpu"]["peak_allocated_mib"] > 0
    assert fp16[0]["agreement_vs_int8"]["person_agreement"] >= 0.95


def test_end_to_end_with_scan_workers_judges_the_same_mentions():
    from fairstream.bench import end_to_end, load_texts

    texts, _ = load_texts([], limit=300)  # the sample corpus, in three look-ahead windows
    plain = end_to_end(texts, "cpu", 1, None, scan_workers=0, lookahead=100)
    pooled = end_to_end(texts, "cpu", 1, None, scan_workers=1, lookahead=100)
    assert (plain["scan_workers"], pooled["scan_workers"]) == (0, 1)
    assert pooled["docs_out"] == plain["docs_out"] == len(texts) == 300
    assert pooled["mentions_judged"] == plain["mentions_judged"] > 0


def test_model_option_runs_every_row_on_that_model(tmp_path, capsys):
    out = tmp_path / "fast"
    rc = main(
        ["bench", "--quick", "--max-pairs", "16", "--limit", "10", "--batch-sizes", "4", "--threads", "1",
         "--no-progress", "--device", "cpu", "--backends", "int8,torch-fp32", "--model", "joint-v7-fast",
         "-o", str(out)]
    )  # fmt: skip
    assert rc == 0
    data = json.loads((out / "bench.json").read_text())
    assert data["end_to_end"]["model"] == "fairstream-joint-v7-fast"
    assert data["end_to_end"]["cascade_routed_share"] is None  # one graph
    rows = {r["backend"]: r for r in data["rows"]}
    # the reference is the same model's int8 graph: exact for itself, close for its dequantized torch twin
    assert rows["onnxruntime int8 (shipped)"]["agreement_vs_int8"]["mean_abs_dp"] < 1e-6
    assert 0 < rows["pytorch fp32 (transformers, sdpa)"]["agreement_vs_int8"]["mean_abs_dp"] < 0.02
    capsys.readouterr()
    # an unknown model is one line naming it and the shipped ones, before any work
    assert main(["bench", "--quick", "--no-progress", "--device", "cpu", "--model", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert "no-such-model" in err and "joint-v7-fast" in err and "fairstream bench: end to end" not in err
