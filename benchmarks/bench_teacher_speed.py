"""Teacher (MPNet-base, 110M) vs student (MiniLM-L6, 22M) inference speed, side by side on one machine.

    python benchmarks/bench_teacher_speed.py --teacher runs/encoders/all-mpnet-base-v2 \
        --student DIR_OF_MINILM [--pairs runs/gpu/pairs.jsonl] [--n 600] [--threads 1] [--rounds 3]

Both run as PyTorch fp32 ``JointCrossEncoder``s (the training architecture: encoder + WSD and regard
heads; head weights do not change the cost), on the same pairs, length-sorted batches of 32, at the
teacher's 128 tokens and the student's 192. Reports pairs per CPU second (median of rounds) and the
ratio; the student's shipped int8 ONNX graph is faster again (``fairstream bench``). Issue 16 asks for
the teacher's cost beside the student's: users who want the accurate model pay this ratio.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from export.modeling import JointCrossEncoder
from export.train import predict
from fairstream.models.labels import load_labelled_pairs


def rate(encoder: Path, pairs, max_length: int, rounds: int) -> float:
    model = JointCrossEncoder(str(encoder)).eval()
    tok = Tokenizer.from_file(str(encoder / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    predict(model, tok, pairs[:32], max_length, bs=32)  # warm up
    cpu = []
    for _ in range(rounds):
        c0 = time.process_time()
        predict(model, tok, pairs, max_length, bs=32)
        cpu.append(time.process_time() - c0)
    return len(pairs) / statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--teacher", type=Path, required=True)
    ap.add_argument("--student", type=Path, required=True)
    ap.add_argument("--pairs", type=Path, default=Path("runs/gpu/pairs.jsonl"))
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pairs = [
        p
        for p in load_labelled_pairs(args.pairs)
        if p.source.startswith("r4-") or p.source.startswith("llm-")
    ]
    pairs = pairs[: args.n]
    student = rate(args.student, pairs, 192, args.rounds)
    teacher = rate(args.teacher, pairs, 128, args.rounds)
    print(
        json.dumps(
            {
                "cpu": platform.processor() or platform.machine(),
                "torch": torch.__version__,
                "threads": args.threads,
                "pairs": len(pairs),
                "student_pairs_per_cpu_s": round(student, 1),
                "teacher_pairs_per_cpu_s": round(teacher, 1),
                "student_over_teacher": round(student / teacher, 2),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
