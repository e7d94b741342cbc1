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

The prompts and the text functions (parsing, ROUGE, the CDA swap) are in ``story_pairs``, the
items (generated or read from a file) in ``sft_items``, the checkpoint and the training files in
``sft_outputs``; this module is the pipeline (``ExploratoryBuilder``, ``build_sft``).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fairstream.annotate.files import prepare_output
from fairstream.annotate.prompts import RAW_SEPARATOR
from fairstream.builders.genmo import ask_stance
from fairstream.builders.records import BuilderConfigError, write_records
from fairstream.builders.sft_items import Item, Side, generation_item
from fairstream.builders.sft_outputs import (
    CHECKPOINT,
    REJECTION_REASONS,
    BuildResult,
    check_settings,
    read_checkpoint,
    training_records,
)
from fairstream.builders.story_pairs import (
    JUDGMENT_PROMPT,
    JUDGMENT_RETRY_PROMPT,
    PROMPT_VERSION,
    ROUGE_RANGE,
    STORY_RETRY_PROMPT,
    gendered_terms,
    in_rouge_range,
    infer_names,
    parse_judgment,
    parse_story_pair,
    rouge1_f,
    stance_explanation,
)
from fairstream.errors import option
from fairstream.llm import ChatBackend, Message

logger = logging.getLogger(__name__)


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
    check_settings(
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
