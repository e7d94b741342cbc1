"""fairstream.dashboard: the filter's numbers in TensorBoard, W&B and MLflow, written and read back.

Each backend test writes with the real library and reads back with the library's own reader
(TensorBoard's ``EventAccumulator``, MLflow's ``MlflowClient``, W&B's protobuf records of the offline
run's ``.wandb`` file) and compares every logged step with ``dashboard_metrics`` of the stats logged.
The loader test sums two DataLoader workers' stats; the DDP test runs two gloo ranks on CPU, each
with two DataLoader workers, and checks that rank 0 alone wrote the sum of both ranks' counts.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from fairstream.core.config import FilterConfig
from fairstream.core.estimates import with_estimates
from fairstream.core.stats import StreamStats, stats_from_loader_state
from fairstream.dashboard import FilterDashboard, dashboard_metrics
from fairstream.errors import MissingDependencyError

torch = pytest.importorskip("torch")
pytest.importorskip("torchdata")

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fairstream" / "data" / "sample_corpus.jsonl"
CONFIG = FilterConfig(cap=0.01, seed=0, lookahead=4)
PREFIX = "fairstream/"
THROUGHPUT = f"{PREFIX}docs_per_second"


def corpus(n: int = 40) -> list[dict]:
    with CORPUS.open(encoding="utf-8") as f:
        return [json.loads(line) for line in islice(f, n)]


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    """One FairStream over 40 documents: its stats after every 8th document out, and its calibration."""
    from fairstream import FairStream

    stream = FairStream(corpus(), CONFIG)
    snapshots = [(i, stream.stats()) for i, _ in enumerate(stream) if i % 8 == 0]
    snapshots.append((100, stream.stats()))
    return {"stream": stream, "snapshots": snapshots, "calibration": stream.step.calibration}


def log_all(board: FilterDashboard, snapshots: list) -> list[dict[str, float]]:
    with board:
        return [board.log(step, stats=stats) for step, stats in snapshots]


def assert_logged(read: dict[str, dict[int, float]], snapshots: list, rel: float = 0.0) -> None:
    """What a backend holds equals ``dashboard_metrics`` of the stats at every logged step."""
    expected: dict[str, dict[int, float]] = {}
    for step, stats in snapshots:
        for key, value in dashboard_metrics(stats).items():
            expected.setdefault(key, {})[step] = value
    throughput = read.pop(THROUGHPUT)  # wall clock: from the second log on, and positive
    assert sorted(throughput) == [s for s, _ in snapshots[1:]] and all(v >= 0 for v in throughput.values())
    assert set(read) == set(expected)
    for key, by_step in expected.items():
        assert read[key] == pytest.approx(by_step, rel=rel, abs=0), key


def tensorboard_scalars(log_dir: Path) -> dict[str, dict[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


def wandb_history(run_dir: Path) -> dict[str, dict[int, float]]:
    """The history of an offline W&B run, read from its ``.wandb`` file with W&B's own protobuf records.

    The file is a 7-byte header (``:W&B``, magic, version) then LevelDB-log framed records: blocks of
    32 KiB, each chunk with a header of CRC (4 bytes), length (2) and type (1: full, 2: first,
    3: middle, 4: last).
    """
    from wandb.proto import wandb_internal_pb2

    (path,) = run_dir.glob("run-*.wandb")
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, block, parts, out = 7, 32768, b"", {}
    while pos + 7 <= len(data):
        room = block - pos % block
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7]) if room >= 7 else (0, 0, 0)
        if room < 7 or (length == 0 and kind == 0):
            pos += room
            continue
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        parts = chunk if kind in (1, 2) else parts + chunk
        if kind not in (1, 4):
            continue
        record = wandb_internal_pb2.Record()
        record.ParseFromString(parts)
        if record.WhichOneof("record_type") == "history":
            step = record.history.step.num
            for item in record.history.item:
                key = item.key or "/".join(item.nested_key)
                if not key.startswith("_"):
                    out.setdefault(key, {})[step] = float(json.loads(item.value_json))
    return out


# -- each backend, real library, read back ------------------------------------------------------------


def test_tensorboard_real_event_file_holds_every_logged_step(run, tmp_path: Path):
    board = FilterDashboard("tensorboard", log_dir=tmp_path, every=1, calibration=CONFIG)
    returned = log_all(board, run["snapshots"])
    assert returned[0] == dashboard_metrics(run["snapshots"][0][1])
    # TensorBoard keeps scalars as float32
    assert_logged(tensorboard_scalars(tmp_path), run["snapshots"], rel=1e-6)


def test_mlflow_real_file_store_holds_every_logged_step(run, tmp_path: Path, monkeypatch):
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind this
    uri = (tmp_path / "mlruns").as_uri()
    board = FilterDashboard(
        "mlflow", mlflow_tracking_uri=uri, mlflow_experiment="dash", every=1, calibration=run["stream"]
    )
    log_all(board, run["snapshots"])
    client = MlflowClient(uri)
    (found,) = client.search_runs([client.get_experiment_by_name("dash").experiment_id])
    assert found.info.status == "FINISHED"
    read = {
        key: {m.step: m.value for m in client.get_metric_history(found.info.run_id, key)}
        for key in found.data.metrics
    }
    assert_logged(read, run["snapshots"])


def test_wandb_real_offline_run_holds_every_logged_step(run, tmp_path: Path, monkeypatch):
    for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    board = FilterDashboard(
        "wandb", log_dir=tmp_path, wandb_mode="offline", every=1, calibration=run["calibration"]
    )
    log_all(board, run["snapshots"])
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    assert_logged(wandb_history(run_dir), run["snapshots"])


def test_every_and_force_choose_the_steps_written(run, tmp_path: Path):
    stats = run["snapshots"][-1][1]
    with FilterDashboard("tensorboard", log_dir=tmp_path, every=10, top_k=2, calibration=CONFIG) as board:
        written = [s for s in range(25) if board.log(s, stats=stats) is not None]
        assert board.log(25, stats=stats, force=True) is not None
    assert written == [0, 10, 20]
    read = tensorboard_scalars(tmp_path)
    assert sorted(read[f"{PREFIX}docs_in"]) == [0, 10, 20, 25]
    attrs = {k.split("/")[1] for k in read if k.count("/") == 2} - {"pooled"}
    assert len(attrs) == 2  # top_k


# -- workers and ranks --------------------------------------------------------------------------------


def test_loader_with_two_workers_logs_the_sum_of_their_stats(run, tmp_path: Path):
    from torchdata.stateful_dataloader import StatefulDataLoader

    from fairstream import FairStream

    loader = StatefulDataLoader(FairStream(corpus(), CONFIG), batch_size=2, num_workers=2, collate_fn=list)
    board = FilterDashboard("tensorboard", log_dir=tmp_path, every=3)  # calibration: the loader's stream
    summed = []
    with board:
        for step, _ in enumerate(loader):
            if board.log(step, loader) is not None:
                summed.append(
                    (
                        step,
                        with_estimates(
                            stats_from_loader_state(loader.state_dict()).to_dict(), run["calibration"]
                        ),
                    )
                )
        final = with_estimates(stats_from_loader_state(loader.state_dict()).to_dict(), run["calibration"])
        board.log(step + 1, loader, force=True)
    summed.append((step + 1, final))
    assert len(summed) >= 4
    assert_logged(tensorboard_scalars(tmp_path), summed, rel=1e-6)
    # what does not depend on how the documents were split equals the single stream's
    whole, split = dashboard_metrics(run["snapshots"][-1][1]), dashboard_metrics(final)
    same = [k for k in whole if k.endswith(("docs_in", "sentences_in", "person_sentences", "share_before"))]
    assert whole[f"{PREFIX}docs_in"] == 40 and len(same) > 20
    assert {k: split[k] for k in same} == {k: whole[k] for k in same}


def _ddp_rank(rank: int, world: int, base: str) -> None:
    """One DDP rank: a FairStream over its rank's half of the documents under 2 DataLoader workers."""
    import torch.distributed as dist
    from torchdata.stateful_dataloader import StatefulDataLoader

    from fairstream import FairStream

    out = Path(base)
    dist.init_process_group("gloo", init_method=(out / "rendezvous").as_uri(), rank=rank, world_size=world)
    try:
        # rank given: this process was spawned, so its DataLoader workers would be too, and a spawned
        # worker does not see the process group; forked workers start in a moment
        stream = FairStream(corpus(), CONFIG, rank=rank, world_size=world)
        loader = StatefulDataLoader(
            stream, batch_size=2, num_workers=2, collate_fn=list, multiprocessing_context="fork"
        )
        board = FilterDashboard("tensorboard", log_dir=out / f"tb-rank{rank}", every=2)
        local, returned = [], []
        with board:
            for step, _ in enumerate(loader):
                if step > 4:  # each rank has more batches than this: every rank logs the same steps
                    break
                local.append((step, stats_from_loader_state(loader.state_dict()).to_dict()))
                returned.append(board.log(step, loader))
            for _ in loader:  # the rest of this rank's epoch
                pass
            local.append((100, stats_from_loader_state(loader.state_dict()).to_dict()))
            returned.append(board.log(100, loader, force=True))
        (out / f"rank{rank}.json").write_text(json.dumps({"local": local, "returned": returned}))
    finally:
        dist.destroy_process_group()


def test_ddp_two_ranks_of_two_workers_rank0_writes_the_sum(run, tmp_path: Path):
    import torch.multiprocessing as mp

    mp.spawn(_ddp_rank, args=(2, str(tmp_path)), nprocs=2, join=True)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert not (tmp_path / "tb-rank1").exists()  # rank 1 wrote nothing
    summed = []
    for (step, a), (step_b, b) in zip(ranks[0]["local"], ranks[1]["local"], strict=True):
        assert step == step_b
        if step % 2 == 0:
            total = (StreamStats.from_dict(a) + StreamStats.from_dict(b)).to_dict()
            summed.append((step, with_estimates(total, run["calibration"])))
    assert [s for s, _ in summed] == [0, 2, 4, 100]
    assert_logged(tensorboard_scalars(tmp_path / "tb-rank0"), summed, rel=1e-6)
    r0, r1 = ([m for m in r["returned"] if m is not None] for r in ranks)
    for m0, m1 in zip(r0, r1, strict=True):  # every rank gets the merged numbers
        m0.pop(THROUGHPUT, None), m1.pop(THROUGHPUT, None)
        assert m0 == m1
    assert r0[-1][f"{PREFIX}docs_in"] == 40  # both ranks' documents, each once


def check_readme_dashboard(log_dir: Path, ns: dict) -> None:
    """The README pipeline's TensorBoard points (tests/test_readme_pipeline.py runs the snippet).

    Steps 0 to 2; the last holds the metrics of the checkpoint taken at that step.
    """
    from fairstream.dashboard import calibration_from

    logged = tensorboard_scalars(log_dir)
    assert sorted(logged.pop(THROUGHPUT)) == [1, 2]
    assert sorted(logged[f"{PREFIX}docs_in"]) == [0, 1, 2]  # an attribute's metrics start once it is counted
    merged = ns["stats_from_loader_state"](ns["checkpoint"]).to_dict()
    expected = dashboard_metrics(with_estimates(merged, calibration_from(ns["config"])))
    last = {key: by_step[2] for key, by_step in logged.items() if 2 in by_step}
    assert last == pytest.approx(expected, rel=1e-6)
    assert expected[f"{PREFIX}docs_in"] > 0 and expected[f"{PREFIX}pooled/person_sentences"] > 0


# -- arguments, missing libraries, imports ------------------------------------------------------------


def test_argument_errors_name_the_argument_and_the_allowed_values(run):
    with pytest.raises(ValueError, match=r"backend='tb': must be one of tensorboard, wandb, mlflow"):
        FilterDashboard("tb")
    with pytest.raises(ValueError, match=r"backend=\['wandb', 'x'\]"):
        FilterDashboard(["wandb", "x"])
    with pytest.raises(ValueError, match=r"every=0: must be an integer >= 1"):
        FilterDashboard("tensorboard", every=0)
    with pytest.raises(ValueError, match=r"top_k=-1"):
        FilterDashboard("tensorboard", top_k=-1)
    with pytest.raises(ValueError, match=r"calibration=str: must be a Calibration, a FairStream"):
        FilterDashboard("tensorboard", calibration="joint")
    board = FilterDashboard("tensorboard")
    with pytest.raises(ValueError, match=r"give exactly one of loader=, stream= or stats="):
        board.log(0)
    with pytest.raises(ValueError, match=r"no calibration .* pass calibration="):
        board.log(0, stats=run["snapshots"][0][1])
    with pytest.raises(ValueError, match=r"no 'estimates' block: compute it with .*with_estimates"):
        dashboard_metrics({"counters": {}})


def test_a_filter_config_gives_its_models_calibration(run):
    board = FilterDashboard("tensorboard", calibration=CONFIG)
    assert board.calibration == run["calibration"] and board.calibration.calibrated


@pytest.mark.parametrize(
    ("backend", "extra"), [("wandb", "wandb"), ("mlflow", "mlflow"), ("tensorboard", "tensorboard")]
)
def test_a_missing_library_is_one_line_naming_the_extra(backend: str, extra: str, monkeypatch):
    monkeypatch.setitem(sys.modules, backend, None)  # what `import` sees when it is not installed
    with pytest.raises(MissingDependencyError, match=rf"pip install 'fairstream\[{extra}\]'") as err:
        FilterDashboard(backend)
    assert "\n" not in str(err.value)


def test_importing_the_dashboard_imports_no_backend_and_no_torch():
    code = (
        "import sys, fairstream.dashboard; "
        "print([m for m in ('torch', 'wandb', 'mlflow', 'tensorboard') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_metrics_cover_counted_attributes_and_pooled(run):
    stats = run["snapshots"][-1][1]
    metrics = dashboard_metrics(stats, prefix="fs/")
    counted = {kw for kw, a in stats["attributes"].items() if a["person_sentences"]}
    assert {k.split("/")[1] for k in metrics if k.count("/") == 2} == counted | {"pooled"}
    pooled = stats["estimates"]["pooled"]
    assert metrics["fs/docs_in"] == stats["counters"]["docs_in"] == 40
    assert metrics["fs/sentences_in"] == stats["counters"]["sentences_candidate"]
    assert metrics["fs/pooled/model_negative_share_after"] == pooled["after"]["model_negative_share"]
    assert metrics["fs/pooled/estimated_negative_share_after_low"] == pooled["after"]["interval"][0]
    assert metrics["fs/pooled/estimated_not_negative_dropped"] == pooled["dropped"]["estimated_not_negative"]
    assert set(dashboard_metrics(stats, prefix="fs/", top_k=0)) == {
        k for k in metrics if k.count("/") == 1 or k.startswith("fs/pooled/")
    }
