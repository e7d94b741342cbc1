"""Issue 16 on a lent GPU: MPNet teacher 5-fold CV, per-fold distilled MiniLM students, side by side.

    python export/gpu/train_cv.py --data DIR --mpnet DIR [DIR ...] --minilm DIR --out OUT \
        [--parallel 12] [--deadline 390] [--seeds 0 1] [--smoke]

Every fit is one ``python -m export.sweep --fold K`` process (the GPU runs many small models side by
side far better than one after another); this script schedules them under a wall-clock deadline:

1. teachers: MPNet, ``teacher-cv5-sS`` folds 0-4 for each seed, and ``teacher-full`` (every dev item
   in training), each saving its logits on the training pairs and the pools (``save_logits``);
2. baselines: MiniLM with the shipped recipe, ``base-cv5-sS`` folds 0-4 (same packed start as the
   students, so the comparison is side by side);
3. students: MiniLM ``distill-cv5-sS`` fold k, once fold k of ``teacher-cv5-sS`` has its logits.

Nothing new is launched after ``--deadline`` minus the longest fit seen; at ``--deadline`` running fits are
stopped. Then each cv config's folds are merged (``export.sweep --merge``) and the results, the
teachers' logits and a GPU-utilisation trace are written under ``--out``.
``DIR`` (``--data``) holds ``pairs.jsonl``, ``dev.jsonl`` and the pools (``*.pool.jsonl``, in name
order); the encoders come packed (``export/gpu/pack_encoder.py``). ``--smoke`` runs tiny fits on CPU to
check the wiring before a device call.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

TEACHER = {"epochs": 2, "max_length": 128, "exclude": ["bias-"], "save_logits": True}
DISTILL = {"distill_pool": 3500, "distill_weight": 0.5, "temperature": 2.0}
TEXT_LABELS = [
    "r6-helper",
    "r8-helper",
    "r9-helper",
]  # annotators of export/labels/text-*.jsonl (rounds 6, 8, 9)
KINDS = ["base", "distill", "base-text", "distill-text"]  # plan students


def plan_configs(plan: str, seeds: list[int], smoke: bool) -> dict[str, list[dict]]:
    """The sweep configs of a plan, by group: MPNet teachers (plan teacher-cv), MiniLM baselines, distilled students.

    Plan "students" trains each student with and without the text labels (the "-text" configs); plan
    "teacher-cv" had none in its data.
    """
    tiny = {"epochs": 0.02, "max_length": 48} if smoke else {}
    teachers = []
    if plan == "teacher-cv":
        teachers = [{"name": f"teacher-cv5-s{s}", "eval": "cv", "seed": s, **TEACHER, **tiny} for s in seeds]
        teachers.append({"name": "teacher-full", "eval": "full", "seed": 0, **TEACHER, **tiny})
        variants = [("", ["bias-"])]
    else:
        variants = [("", ["bias-", *TEXT_LABELS]), ("-text", ["bias-"])]
    # students save their logits: on a hold-out pool (export/gpu/heldout_pool.py) each fold's model is scored
    keep = {} if plan == "teacher-cv" else {"save_logits": True}
    base, distill = [], []
    for s in seeds:
        for suffix, exclude in variants:
            base.append(
                {
                    "name": f"base{suffix}-cv5-s{s}",
                    "eval": "cv",
                    "seed": s,
                    "exclude": exclude,
                    **keep,
                    **tiny,
                }
            )
            distill.append(
                {"name": f"distill{suffix}-cv5-s{s}", "eval": "cv", "seed": s, "distill_from": f"teacher-cv5-s{s}",
                 "exclude": exclude, **DISTILL, **keep, **tiny, **({"distill_pool": 20} if smoke else {})}
            )  # fmt: skip
    return {"teacher": teachers, "base": base, "distill": distill}


def _text(v: object) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def write_teacher_logits(npz: Path, data: Path, pools: list[Path], logits_dir: Path) -> list[str]:
    """The committed per-fold teacher logits, aligned by (uid, text hash) to this run's rows (NaN: unscored)."""
    from export.distill import load_pool, pair_key
    from export.sweep import save_npz
    from fairstream.models.labels import load_labelled_pairs

    rows = load_labelled_pairs(data / "pairs.jsonl")
    for pool in pools:
        rows += load_pool(pool)
    logits_dir.mkdir(parents=True, exist_ok=True)
    with np.load(npz) as z:
        at = {(_text(u), _text(h)): i for i, (u, h) in enumerate(zip(z["uid"], z["text_sha1"], strict=True))}
        index = np.array([at.get((p.uid, pair_key(p)), -1) for p in rows])
        names = sorted({k.split("/")[0] for k in z.files if k.endswith("/wsd")})
        for name in names:
            for head in ("wsd", "regard"):
                if z[f"{name}/{head}"].ndim != 3:
                    raise SystemExit(f"{npz}: {name}/{head} is not folds x rows x 3")
            for k in range(z[f"{name}/wsd"].shape[0]):
                arrays = {}
                for head in ("wsd", "regard"):
                    src = z[f"{name}/{head}"][k].astype(np.float32)
                    out = np.full((len(rows), 3), np.nan, dtype=np.float32)
                    out[index >= 0] = src[index[index >= 0]]
                    arrays[head] = out
                save_npz(logits_dir / f"{name}-f{k}.npz", **arrays)
    print(f"teacher logits {names}: {int((index >= 0).sum())} of {len(rows)} rows scored", flush=True)
    return names


class Job:
    def __init__(self, name: str, cfg: dict, encoder: Path, fold: int | None, needs: Path | None) -> None:
        self.name, self.cfg, self.encoder, self.fold, self.needs = name, cfg, encoder, fold, needs
        self.proc: subprocess.Popen | None = None
        self.started = 0.0
        self.seconds = 0.0
        self.rc: int | None = None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument(
        "--mpnet", type=Path, nargs="*", default=[], help="packed MPNet folder(s) (plan teacher-cv)"
    )
    ap.add_argument("--minilm", type=Path, nargs="+", required=True, help="packed MiniLM folder(s)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/train_cv"))
    ap.add_argument("--parallel", type=int, default=12)
    ap.add_argument("--deadline", type=float, default=390.0, help="seconds from start")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument(
        "--plan",
        choices=["teacher-cv", "students"],
        default="teacher-cv",
        help="teacher-cv: train the MPNet teachers too (session 6); students: read their per-fold logits "
        "from --teacher-logits and train MiniLM baselines and distilled students, with and without the "
        "text labels (needs no MPNet)",
    )
    ap.add_argument(
        "--teacher-logits", type=Path, help="export/labels/soft/teacher-mpnet-cv5-s6.npz (plan students)"
    )
    ap.add_argument(
        "--kinds",
        nargs="+",
        choices=KINDS,
        default=KINDS,
        help="plan students: which configs to fit (a 2-core CPU has time for a pair, not all four)",
    )
    args = ap.parse_args()
    if args.plan == "students" and not args.teacher_logits:
        ap.error("--plan students needs --teacher-logits")
    t0 = time.time()
    from export.gpu.pack_encoder import unpack

    work = args.work
    enc = {"mpnet": work / "mpnet", "minilm": work / "minilm"}
    if args.plan == "teacher-cv":
        unpack(args.mpnet, enc["mpnet"])
    unpack(args.minilm, enc["minilm"])
    print(f"[{time.time() - t0:5.1f}s] encoders unpacked", flush=True)
    pools = sorted(args.data.glob("*.pool.jsonl"))
    sweep_out = work / "sweep"
    sweep_out.mkdir(parents=True, exist_ok=True)
    if args.plan == "students":
        write_teacher_logits(args.teacher_logits, args.data, pools, sweep_out / "logits")
    cfgs = plan_configs(args.plan, args.seeds, args.smoke)
    for items in cfgs.values():
        for c in items:
            (work / f"{c['name']}.json").write_text(json.dumps([c]))
    jobs: list[Job] = []
    for c in cfgs["teacher"]:
        for k in range(5) if c["eval"] == "cv" else [None]:
            jobs.append(Job(c["name"], c, enc["mpnet"], k, None))
    for c in cfgs["base"]:
        jobs += [Job(c["name"], c, enc["minilm"], k, None) for k in range(5)]
    for c in cfgs["distill"]:
        jobs += [
            Job(c["name"], c, enc["minilm"], k, sweep_out / "logits" / f"{c['distill_from']}-f{k}.npz")
            for k in range(5)
        ]
    if args.plan == "students":
        # seed by seed, fold by fold, the configs of a fold together: a deadline cuts whole folds, so the
        # configs that finished are compared on the same folds
        jobs = [j for j in jobs if j.name.rsplit("-cv5", 1)[0] in args.kinds]
        jobs.sort(key=lambda j: (j.cfg["seed"], j.fold or 0, KINDS.index(j.name.rsplit("-cv5", 1)[0])))
    smi = None
    if args.device.startswith("cuda"):
        smi = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,utilization.gpu,memory.used,power.draw", "--format=csv",
             "-lms", "1000"],
            stdout=(args.out / "gpu_trace.csv").open("w"), stderr=subprocess.DEVNULL,
        )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{os.environ.get('PYTHONPATH', '')}", "OMP_NUM_THREADS": "1"}
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    longest = {"mpnet": 0.0, "minilm": 0.0}

    def launch(job: Job) -> None:
        cmd = [sys.executable, "-m", "export.sweep", "--encoder", str(job.encoder), "--pairs",
               str(args.data / "pairs.jsonl"), "--dev", str(args.data / "dev.jsonl"),
               "--configs", str(work / f"{job.name}.json"), "--out", str(sweep_out), "--device", args.device]  # fmt: skip
        for p in pools:
            cmd += ["--pool", str(p)]
        if job.fold is not None:
            cmd += ["--fold", str(job.fold)]
        log = (logs / f"{job.name}-{job.fold}.log").open("w")
        job.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        job.started = time.time()

    def teacher_of(job: Job) -> Job | None:
        return next((t for t in jobs if t.name == job.cfg.get("distill_from") and t.fold == job.fold), None)

    while True:
        now = time.time() - t0
        for j in [j for j in jobs if j.proc is not None and j.rc is None]:
            rc = j.proc.poll()  # type: ignore[union-attr]
            if rc is not None:
                j.rc, j.seconds = rc, time.time() - j.started
                kind = "mpnet" if j.encoder == enc["mpnet"] else "minilm"
                longest[kind] = max(longest[kind], j.seconds)
                print(f"[{now:5.1f}s] {j.name} fold {j.fold}: rc {rc} in {j.seconds:.0f} s", flush=True)
        running = [j for j in jobs if j.proc is not None and j.rc is None]
        if now > args.deadline:
            for j in running:
                j.proc.kill()  # type: ignore[union-attr]
                j.rc = -9
                print(f"[{now:5.1f}s] {j.name} fold {j.fold}: stopped at the deadline", flush=True)
            break
        waiting = []
        for j in (j for j in jobs if j.proc is None and j.rc is None):
            teacher = teacher_of(j) if j.needs is not None else None  # None: logits given up front
            no_teacher = teacher is None or (teacher.rc is not None and teacher.rc != 0)
            if j.needs is not None and not j.needs.is_file() and no_teacher:
                j.rc = -1  # its teacher failed: it cannot run
                continue
            waiting.append(j)
        for j in waiting:
            if len(running) >= args.parallel:
                break
            if j.needs is not None and not j.needs.is_file():
                continue
            kind = "mpnet" if j.encoder == enc["mpnet"] else "minilm"
            guess = longest[kind] or (60.0 if kind == "minilm" else 150.0)
            if now + guess > args.deadline:
                continue  # would not finish in time
            launch(j)
            running.append(j)
            print(f"[{now:5.1f}s] start {j.name} fold {j.fold}", flush=True)
        if not running:
            break  # nothing runs and nothing could start: done (or out of time)
        time.sleep(1.0)
    if smi is not None:
        smi.terminate()
    print(f"[{time.time() - t0:5.1f}s] merging", flush=True)
    for group in ("teacher", "base", "distill"):
        for c in cfgs[group]:
            if c["eval"] != "cv":
                continue
            enc_dir = enc["mpnet"] if group == "teacher" else enc["minilm"]
            subprocess.run(
                [sys.executable, "-m", "export.sweep", "--encoder", str(enc_dir), "--pairs",
                 str(args.data / "pairs.jsonl"), "--dev", str(args.data / "dev.jsonl"), "--configs",
                 str(work / f"{c['name']}.json"), "--out", str(sweep_out), "--merge", "--device", "cpu"],
                cwd=ROOT, env=env, check=False,
            )  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    if (sweep_out / "results.jsonl").is_file():
        (args.out / "results.jsonl").write_text((sweep_out / "results.jsonl").read_text())
    with tarfile.open(args.out / "logits.tar", "w") as tar:
        for p in sorted((sweep_out / "logits").glob("*.npz")):
            tar.add(p, arcname=p.name)
    with tarfile.open(args.out / "folds_logs.tar.gz", "w:gz") as tar:
        for p in sorted((sweep_out / "folds").glob("*.npz")):
            tar.add(p, arcname=f"folds/{p.name}")
        for p in sorted(logs.glob("*.log")):
            tar.add(p, arcname=f"logs/{p.name}")
    summary = [
        {"name": j.name, "fold": j.fold, "rc": j.rc, "seconds": round(j.seconds, 1)} for j in jobs if j.proc
    ]
    (args.out / "jobs.json").write_text(json.dumps(summary, indent=1))
    print(f"[{time.time() - t0:5.1f}s] done: {sum(j['rc'] == 0 for j in summary)} fits ok", flush=True)


if __name__ == "__main__":
    main()
