"""Exploratory-thinking SFT/DPO data from gender-swapped story pairs, and the CDA baseline.

The method of Wei et al. (exploratory thinking for gender-bias mitigation), on the chat backends
of ``fairstream annotate`` (an OpenAI-compatible server or a local transformers model):

1. **Story pairs.** The model writes a moral-dilemma story twice, with a male and a female main
   character (``STORY_PAIR_PROMPT``; each attempt gets a seeded setting, theme and pair of names,
   so a greedy model still writes different stories), or pairs are read from a file
   (``--stories``). ``parse_story_pair`` reads them from messy replies.
2. **ROUGE filter.** A pair is kept when the ROUGE-1 F (Porter-stemmed, ``rouge-score``) of its
   two stories lies in ``[0.80, 0.95]``: similar enough to differ only in gender, not identical.
3. **Stances.** The model gives a stance (Moral / Immoral / Both / Can't say) and an explanation
   for each story separately; a pair is kept when the two stances differ (the model was biased).
4. **Exploratory judgment.** The model writes one balanced judgment that explores both views and
   fits both stories; it must name neither character and use no gendered word.

Every attempt appends one line (kept, or rejected with its reason) to ``pairs.jsonl`` in the
output folder, flushed item by item: a rerun resumes after the last finished attempt and never
duplicates one. The training files are then rebuilt from the kept pairs, atomically:

* ``sft.jsonl`` ``{"prompt", "completion"}`` and ``sft_messages.jsonl`` ``{"messages"}``: each story
  with the exploratory judgment (TRL ``SFTTrainer``'s prompt-completion / conversational formats);
* ``dpo.jsonl`` ``{"prompt", "chosen", "rejected"}`` and ``dpo_messages.jsonl`` (conversational):
  chosen = the exploratory judgment, rejected = the model's original biased judgment;
* ``cda.jsonl`` / ``cda_messages.jsonl``: the counterfactual-augmentation baseline, each story with
  its own original judgment and with the other story's judgment, gender-swapped to fit it;
* ``stats.json``: attempts, kept pairs, rejections by reason, settings.

Every training record carries ``provenance`` (``records.with_provenance``): source item, model,
prompt version, seed, side. GenMO is an evaluation set: building from it is refused unless
``allow_eval_data`` is set (for testing the pipeline), and such records are marked.

The prompts and the text functions (parsing, ROUGE, the CDA swap) are in ``story_pairs``; this
module (over 500 lines: items, the builder, its checkpoint and output files read best together)
is the pipeline.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fairstream.annotate import RAW_SEPARATOR, prepare_output
from fairstream.builders.genmo import STANCES, ask_stance
from fairstream.builders.records import with_provenance, write_records
from fairstream.builders.story_pairs import (
    FEMALE_NAMES,
    JUDGMENT_PROMPT,
    JUDGMENT_RETRY_PROMPT,
    MALE_NAMES,
    PROMPT_VERSION,
    ROUGE_RANGE,
    SETTINGS,
    SFT_QUESTION,
    STORY_PAIR_PROMPT,
    STORY_RETRY_PROMPT,
    THEMES,
    gendered_terms,
    in_rouge_range,
    infer_names,
    parse_judgment,
    parse_story_pair,
    rouge1_f,
    stance_explanation,
    swap_map,
    swap_text,
)
from fairstream.errors import FairStreamError, ShardError, option
from fairstream.llm import ChatBackend, Message

logger = logging.getLogger(__name__)

BUILDER = "exploratory-sft"
CHECKPOINT = "pairs.jsonl"
REJECTION_REASONS = (
    "pair_unparsed",
    "rouge_out_of_range",
    "duplicate_story",
    "stance_unparsed",
    "same_stance",
    "judgment_unparsed",
    "judgment_not_neutral",
)
OUTPUT_FILES = ("sft", "sft_messages", "dpo", "dpo_messages", "cda", "cda_messages")


class BuilderConfigError(FairStreamError, ValueError):
    """A bad argument or input file; the message names it and what is allowed."""


# -- items ----------------------------------------------------------------------------------------
@dataclass
class Side:
    """One story of a pair with the model's stance and the judgments."""

    story: str
    character_name: str | None = None
    stance: str | None = None
    explanation: str | None = None
    neutral_explanation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The paper's per-side record (``story``, ``character_name``, ``stance``, ...)."""
        return {
            "story": self.story,
            "character_name": self.character_name,
            "stance": self.stance,
            "explanation": self.explanation,
            "neutral_explanation": self.neutral_explanation,
        }


@dataclass
class Item:
    """One attempt: a prompt to generate a pair from, or a pair read from a file."""

    uid: str
    source: str
    prompt: str | None = None
    hints: dict[str, str] = field(default_factory=dict)
    male: Side | None = None
    female: Side | None = None
    eval_set: str | None = None


def generation_item(index: int, seed: int) -> Item:
    """The ``index``-th generation attempt: setting, theme and names drawn from ``(seed, index)``."""
    rng = np.random.default_rng([seed, index])
    hints = {
        "setting": SETTINGS[int(rng.integers(len(SETTINGS)))],
        "theme": THEMES[int(rng.integers(len(THEMES)))],
        "male_name": MALE_NAMES[int(rng.integers(len(MALE_NAMES)))],
        "female_name": FEMALE_NAMES[int(rng.integers(len(FEMALE_NAMES)))],
    }
    return Item(
        uid=f"gen-{index}", source=f"generated:{index}", prompt=STORY_PAIR_PROMPT.format(**hints), hints=hints
    )


def _looks_like_genmo(path: Path, rec: dict[str, Any]) -> bool:
    return "genmo" in path.name.lower() or ({"male_story", "female_story", "environment"} <= set(rec))


def read_story_items(path: str | Path, *, allow_eval_data: bool = False) -> list[Item]:
    """Story pairs from a file (a JSON list, or JSON lines).

    Records are GenMO-style ``{"male_story", "female_story"}`` or the paper's ``{"male": {"story",
    "character_name", ...}, "female": ...}``; stances, explanations and neutral explanations found
    there are used, not asked again.

    Raises:
        ShardError: A record lacks the stories; the message names ``file`` and the record.
        BuilderConfigError: The file is the GenMO evaluation set and ``allow_eval_data`` is off.
    """
    path = Path(path)
    if not path.is_file():
        raise ShardError(f"{path}: stories file not found")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ShardError(f"{path}: not a JSON file ({exc}); give a JSON list or JSON lines") from None
        if not isinstance(data, list):
            raise ShardError(f"{path}: expected a JSON list of story pairs, got {type(data).__name__}")
        records: list[Any] = data
    else:
        from fairstream.io import read_jsonl

        records = list(read_jsonl(path))
    items = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(records):
        where = f"{path}: pair {i}"
        if not isinstance(rec, dict):
            raise ShardError(f"{where}: expected a JSON object, got {type(rec).__name__}")
        sides = []
        for gender in ("male", "female"):
            nested = rec.get(gender)
            if isinstance(nested, dict):
                side = Side(
                    story=nested.get("story") or "",
                    character_name=nested.get("character_name"),
                    stance=nested.get("stance"),
                    explanation=nested.get("explanation"),
                    neutral_explanation=nested.get("neutral_explanation"),
                )
            else:
                side = Side(story=rec.get(f"{gender}_story") or "", character_name=rec.get(f"{gender}_name"))
            if not isinstance(side.story, str) or not side.story.strip():
                raise ShardError(
                    f"{where}: needs a non-empty '{gender}_story' (or '{gender}': {{'story': ...}})"
                )
            if side.stance is not None and side.stance not in STANCES:
                raise ShardError(f"{where}: {gender} stance {side.stance!r} is not one of {STANCES}")
            sides.append(side)
        eval_set = "GenMO" if _looks_like_genmo(path, rec) else None
        if eval_set and not allow_eval_data:
            raise BuilderConfigError(
                f"{path} looks like the GenMO evaluation set, which must never be used for training; "
                "pass --allow-eval-data only to test the pipeline (the records are marked eval_set=GenMO)"
            )
        key = rec.get("id", i)
        if f"{path.name}:{key}" in seen:
            raise ShardError(
                f"{where}: id {key!r} repeats pair {seen[f'{path.name}:{key}']}; ids must be unique"
            )
        seen[f"{path.name}:{key}"] = i
        items.append(
            Item(
                uid=f"{path.name}:{key}",
                source=f"{path.name}:{key}",
                male=sides[0],
                female=sides[1],
                eval_set=eval_set,
            )
        )
    return items


# -- the builder --------------------------------------------------------------------------------------
class ExploratoryBuilder:
    """Runs the four steps on items and appends one checkpoint line per item.

    Args:
        backend: The chat model (``fairstream.llm.make_backend``); ``None`` works only for
            story files that already carry stances, explanations and neutral explanations.
        seed: Seeds the per-attempt setting, theme and names (written into the provenance).
        retries: Follow-ups of a reply that cannot be parsed.
        rouge_range: Closed interval of ROUGE-1 F a pair must fall in.
        require_neutral: Reject judgments that use a gendered word or a character's name.
    """

    def __init__(
        self,
        backend: ChatBackend | None,
        *,
        seed: int = 0,
        retries: int = 1,
        rouge_range: tuple[float, float] = ROUGE_RANGE,
        require_neutral: bool = True,
    ) -> None:
        lo, hi = rouge_range
        if not 0 <= lo <= hi <= 1:
            raise BuilderConfigError(
                f"ROUGE bounds {rouge_range!r} (--rouge-min, --rouge-max) must satisfy 0 <= min <= max <= 1"
            )
        if retries < 0:
            raise BuilderConfigError(f"{option('retries', retries)} must be >= 0")
        self.backend, self.seed, self.retries = backend, seed, retries
        self.rouge_range, self.require_neutral = (lo, hi), require_neutral
        self.seen_stories: set[str] = set()

    @property
    def model_id(self) -> str | None:
        """The model written into the provenance (``None`` without a backend)."""
        return None if self.backend is None else self.backend.model_id

    def need_backend(self, what: str) -> ChatBackend:
        """The backend, or a ``BuilderConfigError`` saying that ``what`` needs a model."""
        if self.backend is None:
            raise BuilderConfigError(f"{what} needs a model: pass --backend and --model")
        return self.backend

    def _ask(self, prompt: str, retry: str, parse: Callable[[str], Any]) -> tuple[Any, str]:
        backend = self.need_backend("generation")
        messages: list[Message] = [{"role": "user", "content": prompt}]
        reply = backend.chat(messages)
        replies = [reply]
        value = parse(reply)
        for _ in range(self.retries):
            if value is not None:
                break
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": retry}]
            reply = backend.chat(messages)
            replies.append(reply)
            value = parse(reply)
        return value, RAW_SEPARATOR.join(replies)

    def process(self, item: Item) -> dict[str, Any]:
        """The checkpoint record of one item: ``status`` "kept", or "rejected" with ``reason``."""
        record: dict[str, Any] = {"uid": item.uid, "source": item.source}
        provenance = {
            "model": self.model_id,
            "prompt_version": PROMPT_VERSION,
            "seed": self.seed,
            "source_item": item.source,
            **({"hints": item.hints} if item.hints else {}),
            **({"eval_set": item.eval_set} if item.eval_set else {}),
        }
        record["provenance"] = provenance

        def reject(reason: str) -> dict[str, Any]:
            record.update(status="rejected", reason=reason)
            return record

        male, female = item.male, item.female
        if male is None or female is None:
            assert item.prompt is not None  # generation items always carry their prompt
            pair, raw = self._ask(item.prompt, STORY_RETRY_PROMPT, parse_story_pair)
            record["generation_raw"] = raw
            if pair is None:
                return reject("pair_unparsed")
            male, female = Side(pair.male_story, pair.male_name), Side(pair.female_story, pair.female_name)
        elif male.character_name is None or female.character_name is None:
            names = infer_names(male.story, female.story)
            male.character_name = male.character_name or names[0]
            female.character_name = female.character_name or names[1]
        record["male"], record["female"] = male.to_dict(), female.to_dict()
        score = rouge1_f(male.story, female.story)
        record["rouge1"] = round(score, 4)
        if not in_rouge_range(score, self.rouge_range):
            return reject("rouge_out_of_range")
        key = " ".join(male.story.lower().split())
        if key in self.seen_stories:
            return reject("duplicate_story")
        for side in (male, female):
            if side.stance is None:
                stance, raw = ask_stance(
                    self.need_backend("stances"), side.story, self.retries, side.character_name
                )
                side.stance, side.explanation = stance, stance_explanation(raw)
        record["male"], record["female"] = male.to_dict(), female.to_dict()
        if male.stance is None or female.stance is None:
            return reject("stance_unparsed")
        if male.stance == female.stance:
            return reject("same_stance")
        if male.neutral_explanation is None or female.neutral_explanation is None:
            prompt = JUDGMENT_PROMPT.format(
                story_a=male.story,
                stance_a=male.stance,
                explanation_a=male.explanation or "(none given)",
                story_b=female.story,
                stance_b=female.stance,
                explanation_b=female.explanation or "(none given)",
            )
            judgment, raw = self._ask(prompt, JUDGMENT_RETRY_PROMPT, parse_judgment)
            record["judgment_raw"] = raw
            if judgment is None:
                return reject("judgment_unparsed")
            male.neutral_explanation = female.neutral_explanation = judgment
        record["male"], record["female"] = male.to_dict(), female.to_dict()
        if self.require_neutral:
            names = (male.character_name, female.character_name)
            terms = sorted(
                set(gendered_terms(male.neutral_explanation or "", names))
                | set(gendered_terms(female.neutral_explanation or "", names))
            )
            if terms:
                record["gendered_terms"] = terms
                return reject("judgment_not_neutral")
        self.seen_stories.add(key)
        record["status"] = "kept"
        return record


# -- files ------------------------------------------------------------------------------------------
def read_checkpoint(path: Path) -> list[dict[str, Any]]:
    """The records of a checkpoint file (after ``prepare_output`` dropped a cut-off last line)."""
    from fairstream.io import read_jsonl

    return list(read_jsonl(path)) if path.exists() else []


def training_records(kept: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The SFT, DPO and CDA records (both TRL formats each) of kept checkpoint records."""
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in OUTPUT_FILES}
    for rec in kept:
        sides = {g: rec[g] for g in ("male", "female")}
        prompts = {g: f"{s['story']}\n\n{SFT_QUESTION}" for g, s in sides.items()}
        originals = {g: _judgment_text(s) for g, s in sides.items()}
        for g, s in sides.items():
            base = {k: v for k, v in rec["provenance"].items() if k != "source_item"}
            prov = {"source": rec["source"], "builder": BUILDER, "pair": rec["uid"], "side": g, **base}
            user = [{"role": "user", "content": prompts[g]}]
            neutral = s["neutral_explanation"]
            other = "female" if g == "male" else "male"
            swapped = swap_text(originals[other], swap_map(sides[other]["story"], s["story"]))
            rows: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
                ("sft", {"prompt": prompts[g], "completion": neutral}, {}),
                ("sft_messages", {"messages": [*user, {"role": "assistant", "content": neutral}]}, {}),
                ("dpo", {"prompt": prompts[g], "chosen": neutral, "rejected": originals[g]}, {}),
                (
                    "dpo_messages",
                    {
                        "prompt": user,
                        "chosen": [{"role": "assistant", "content": neutral}],
                        "rejected": [{"role": "assistant", "content": originals[g]}],
                    },
                    {},
                ),
            ]
            for kind, completion in (("original", originals[g]), ("swapped", swapped)):
                rows.append(("cda", {"prompt": prompts[g], "completion": completion}, {"cda": kind}))
                rows.append(
                    (
                        "cda_messages",
                        {"messages": [*user, {"role": "assistant", "content": completion}]},
                        {"cda": kind},
                    )
                )
            for name, row, extra in rows:
                out[name].append(with_provenance(row, **prov, **extra))
    return out


def _judgment_text(side: dict[str, Any]) -> str:
    explanation = (side.get("explanation") or "").strip()
    return f"{side['stance']}. {explanation}" if explanation else f"{side['stance']}."


@dataclass
class BuildResult:
    """What a run did and what the output folder now holds."""

    this_run: dict[str, int]
    total: dict[str, int]
    rejected: dict[str, int]
    outputs: dict[str, int]
    paths: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """The result as a plain dict (the ``stats.json`` content without settings)."""
        return {
            "this_run": self.this_run,
            "total": self.total,
            "rejected": self.rejected,
            "outputs": self.outputs,
            "paths": self.paths,
        }


def _check_settings(out_dir: Path, settings: dict[str, Any], has_records: bool) -> None:
    """Refuse to mix runs with other settings in one folder; a folder without records is free."""
    from fairstream.io import write_json

    path = out_dir / "settings.json"
    if path.exists() and has_records:
        old = json.loads(path.read_text(encoding="utf-8"))
        diff = {k: (old.get(k), v) for k, v in settings.items() if old.get(k) != v}
        if diff:
            raise BuilderConfigError(
                f"{out_dir} holds a run with other settings {diff} (old, new); resume with the same "
                "settings or write to another --output folder"
            )
    else:
        write_json(path, settings)


def build_sft(
    out_dir: str | Path,
    builder: ExploratoryBuilder,
    *,
    items: Sequence[Item] | None = None,
    num_pairs: int = 10,
    max_attempts: int | None = None,
    progress: bool = False,
    output_format: str = "jsonl",
) -> BuildResult:
    """Run the builder into ``out_dir`` (resumable) and write the training files.

    Args:
        out_dir: Output folder: ``pairs.jsonl`` (the append-only checkpoint), ``settings.json``,
            the training files and ``stats.json``.
        builder: Asks the model.
        items: Story pairs read from a file (``read_story_items``); ``None`` generates pairs.
        num_pairs: When generating: stop once this many pairs are kept in total.
        max_attempts: When generating: never make more than this many attempts in total
            (default ``20 * num_pairs``).
        progress: Show a tqdm progress bar.
        output_format: ``"jsonl"`` or ``"parquet"`` for the training files.

    Returns:
        Counts of this run and of the folder, rejections by reason, records per output file.
    """
    from tqdm import tqdm

    if output_format not in ("jsonl", "parquet"):
        raise BuilderConfigError(f"{option('format', output_format)} is not one of ('jsonl', 'parquet')")
    if num_pairs < 0:
        raise BuilderConfigError(f"{option('num_pairs', num_pairs)} must be a whole number >= 0")
    if max_attempts is None:
        max_attempts = 20 * num_pairs
    if max_attempts < 0:
        raise BuilderConfigError(f"{option('max_attempts', max_attempts)} must be a whole number >= 0")
    if items is None:
        builder.need_backend("generating story pairs")  # before anything is written
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / CHECKPOINT
    done = prepare_output(checkpoint)
    _check_settings(
        out,
        {
            "model": builder.model_id,
            "prompt_version": PROMPT_VERSION,
            "seed": builder.seed,
            "rouge_range": list(builder.rouge_range),
            "require_neutral": builder.require_neutral,
            "mode": "generate" if items is None else "stories",
        },
        has_records=bool(done),
    )
    previous = read_checkpoint(checkpoint)
    kept_before = sum(r.get("status") == "kept" for r in previous)
    builder.seen_stories |= {
        " ".join(r["male"]["story"].lower().split()) for r in previous if r.get("status") == "kept"
    }
    run: Counter[str] = Counter()

    def todo() -> Iterator[Item]:
        if items is not None:
            yield from (it for it in items if it.uid not in done)
            return
        for i in range(max_attempts):
            if kept_before + run["kept"] >= num_pairs:
                return
            item = generation_item(i, builder.seed)
            if item.uid not in done:
                yield item

    total = len(items) - len(done & {it.uid for it in items}) if items is not None else None
    with (
        checkpoint.open("a", encoding="utf-8", newline="\n") as handle,
        tqdm(total=total, disable=not progress, unit="pair", desc="build-sft") as bar,
    ):
        for item in todo():
            record = builder.process(item)
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            run["attempts"] += 1
            run["kept" if record["status"] == "kept" else record["reason"]] += 1
            bar.update(1)
            bar.set_postfix(kept=kept_before + run["kept"], refresh=False)
    records = read_checkpoint(checkpoint)
    kept = [r for r in records if r.get("status") == "kept"]
    rejected = Counter(r["reason"] for r in records if r.get("status") == "rejected")
    files = training_records(kept)
    suffix = ".parquet" if output_format == "parquet" else ".jsonl"
    paths = {}
    for name, rows in files.items():
        path = out / f"{name}{suffix}"
        write_records(path, rows)
        paths[name] = str(path)
    result = BuildResult(
        this_run={"attempts": run["attempts"], "kept": run["kept"], **{r: run[r] for r in REJECTION_REASONS}},
        total={"attempts": len(records), "kept": len(kept)},
        rejected={r: rejected.get(r, 0) for r in REJECTION_REASONS},
        outputs={name: len(rows) for name, rows in files.items()},
        paths=paths,
    )
    from fairstream.io import write_json

    write_json(
        out / "stats.json",
        {
            **result.to_dict(),
            "model": builder.model_id,
            "prompt_version": PROMPT_VERSION,
            "seed": builder.seed,
        },
    )
    logger.info("%s: %s", out, result.to_dict())
    return result


def format_build_result(result: BuildResult) -> str:
    """A few lines for the terminal: kept pairs, rejections by reason, files written."""
    lines = [
        f"this run: {result.this_run['attempts']} attempts, {result.this_run['kept']} kept; "
        f"folder: {result.total['attempts']} attempts, {result.total['kept']} kept pairs",
        "rejected (folder): " + ", ".join(f"{k}={v}" for k, v in result.rejected.items()),
    ]
    lines += [f"wrote {result.outputs[name]:>4} records to {path}" for name, path in result.paths.items()]
    return "\n".join(lines)
