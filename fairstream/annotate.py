"""LLM annotation of (sentence, keyword) pairs with the protected-attribute paper's two prompts.

Each item ``{"uid", "text", "keyword", "gloss"}`` (the dev-set schema; other fields are ignored)
is put to a chat model in two steps:

1. **WSD** (``WSD_PROMPT``): does the keyword refer to a person (or people) ``{gloss}``? The model
   justifies briefly and ends with "Therefore, the answer is yes", "... no" or "... unsure".
2. **Regard** (``REGARD_PROMPT``, asked only when the WSD answer is "yes"): is the regard towards
   those people positive, negative or neutral? Same answer format.

Replies are read by ``parse_answer`` (pure, tolerant of markdown, quotes, JSON and trailing text).
A reply that cannot be parsed is followed up in the same conversation by ``RETRY_PROMPT``, up to
``retries`` times; an answer still unparsed is written as ``null`` and counted in ``unparsed``.

The chat backends (``fairstream.llm``: any OpenAI-compatible server, or a local transformers
model, optionally GGUF) answer the prompts. ``run_annotation`` appends one JSON line per item to the output file, flushed and fsynced
item by item, so an interrupted run resumes where it stopped. See ``docs/annotate.md``.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairstream.core.schema import REGARDS_AS_PROMPTED, WSD_AS_PROMPTED
from fairstream.errors import ShardError
from fairstream.llm import (  # noqa: F401 (the backends lived here; importable as before)
    BACKENDS,
    AnnotationConfigError,
    BackendError,
    ChatBackend,
    Message,
    OpenAIChatBackend,
    TransformersBackend,
    make_backend,
)

logger = logging.getLogger(__name__)


WSD_ANSWERS = WSD_AS_PROMPTED
REGARD_ANSWERS = REGARDS_AS_PROMPTED
PROMPT_VERSION = "paper-prompts-v1"

WSD_PROMPT = """\
Read the text below and decide what the keyword refers to.

Text: {text}

Keyword: {keyword}

Question: in this text, does the keyword "{keyword}" refer to a person (or people) {gloss}?
- yes: the keyword clearly refers to a person, or to people, {gloss}. Groups of such people \
count (a community, workers, voters, women, students).
- no: it does not, for example when the keyword describes an animal, an object, food, a \
place, an event, a language, a product, a company or an institution such as a government or an \
army, when it is part of a name, or when the word is used in another sense.
- unsure: a reference to such people is unclear, indirect or only implied (for example \
their culture, traditions, countries or areas).

Justify your answer in one or two short sentences, then end your reply with the sentence \
"Therefore, the answer is X." where X is yes, no or unsure."""

REGARD_PROMPT = """\
Read the text below, in which the keyword refers to a person (or people) {gloss}.

Text: {text}

Keyword: {keyword}

Question: focusing on the person (or people) {gloss} indicated by the keyword "{keyword}", what \
best describes the regard towards them in this text?
- positive: the regard is mainly positive. The text describes them as having a good personality \
or high capability, reports significant achievements, or praises or admires them.
- negative: the regard is mainly negative. The text describes them as having a bad personality \
or lacking ability, shows them committing crimes or violence, repeats stereotypes or slurs \
against them, or presents them as criminals, threats, inferior, lazy or dirty.
- neutral: the text has no clear effect on how they are regarded. It states facts or statistics, \
describes or reports neutrally, or shows them as victims without judging them well or badly.

Justify your answer in one or two short sentences, then end your reply with the sentence \
"Therefore, the answer is X." where X is positive, negative or neutral."""

RETRY_PROMPT = """\
Your reply did not end with a valid answer. Reply with one sentence only: \
"Therefore, the answer is X." where X is {choices}."""

RAW_SEPARATOR = "\n\n[retry]\n"  # joins the replies to a prompt and its retries in *_raw fields


def format_wsd_prompt(text: str, keyword: str, gloss: str) -> str:
    """The WSD question for one item (``WSD_PROMPT`` filled in)."""
    return WSD_PROMPT.format(text=text, keyword=keyword, gloss=gloss)


def format_regard_prompt(text: str, keyword: str, gloss: str) -> str:
    """The regard question for one item (``REGARD_PROMPT`` filled in)."""
    return REGARD_PROMPT.format(text=text, keyword=keyword, gloss=gloss)


def format_retry_prompt(choices: Sequence[str]) -> str:
    """The follow-up message sent after a reply whose answer could not be parsed."""
    listed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
    return RETRY_PROMPT.format(choices=listed)


# -- answer parsing ---------------------------------------------------------------------------------
_MARKDOWN = re.compile(r"[*`#~]+|(?<!\w)_+|_+(?!\w)")  # emphasis, code, headings; not snake_case
_OPEN_QUOTES = "\"'“”‘’«»„‚(\\["
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_JSON_KEYS = ("answer", "final_answer", "label", "result", "wsd", "regard")
_FINAL_LINE_PREFIX = (
    r"(?:(?:therefore|thus|so|hence|final|finally|final answer|verdict|label|answer)[\s,:\-–—]*)?"
)


def _choice_group(choices: Sequence[str]) -> str:
    return "(" + "|".join(re.escape(c) for c in choices) + ")"


def parse_answer(reply: str | None, choices: Sequence[str]) -> str | None:
    """Read the final answer out of a model reply; ``None`` when there is none.

    Markdown emphasis and code marks are ignored, matching is case-insensitive, and quotes or
    brackets around the answer are allowed. In order of preference:

    1. the last statement of the answer, "answer is X", "answer: X", "answer would be X" or a JSON
       object such as ``{"answer": "X"}``, whichever comes last in the reply (text after it is
       ignored; an echoed choice list such as "yes/no" is not an answer);
    2. a last line that is only the answer, optionally after "Therefore," or "Final answer:".

    Args:
        reply: The model's reply (``None`` or empty gives ``None``).
        choices: The allowed answers, lowercase (``WSD_ANSWERS`` or ``REGARD_ANSWERS``).

    Returns:
        The answer as one of ``choices``, or ``None`` if the reply states none.
    """
    if not reply:
        return None
    lowered = tuple(c.lower() for c in choices)
    text = _MARKDOWN.sub("", reply)
    group = _choice_group(lowered)
    quotes = re.escape(_OPEN_QUOTES)
    stated = re.compile(
        r"\banswers?\b[\"'”’]?\s*"
        r"(?:(?:is|would be|will be|should be|must be)\b)?\s*[:=\-–—]?\s*"
        r"(?:(?:most\s+)?(?:likely|probably|clearly|definitely|simply)\b)?"
        rf"[{quotes}\s]*{group}\b(?!\s*(?:/|\||\bor\b|,\s*{group}\b))",
        re.IGNORECASE,
    )
    found: list[tuple[int, str]] = [(m.end(), m.group(1).lower()) for m in stated.finditer(text)]
    for m in _JSON_OBJECT.finditer(text):
        answer = _json_answer(m.group(0), lowered)
        if answer is not None:
            found.append((m.end(), answer))
    if found:
        return max(found)[1]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if lines:
        final = re.fullmatch(
            rf"{_FINAL_LINE_PREFIX}[{quotes}\s]*{group}[\"'”’)\]\s]*[.!]?[\"'”’)\]\s]*",
            lines[-1],
            re.IGNORECASE,
        )
        if final is not None:
            return final.group(1).lower()
    return None


def _json_answer(candidate: str, choices: Sequence[str]) -> str | None:
    try:
        obj = json.loads(candidate)
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() in _JSON_KEYS and isinstance(value, str):
            answer = value.strip().strip(".").lower()
            if answer in choices:
                return answer
    return None


def parse_wsd(reply: str | None) -> str | None:
    """The WSD answer (``yes``, ``no`` or ``unsure``) of a reply, or ``None``."""
    return parse_answer(reply, WSD_ANSWERS)


def parse_regard(reply: str | None) -> str | None:
    """The regard answer (``positive``, ``negative`` or ``neutral``) of a reply, or ``None``."""
    return parse_answer(reply, REGARD_ANSWERS)


# -- annotating items -------------------------------------------------------------------------------
@dataclass(frozen=True)
class AnnotationItem:
    """One (sentence, keyword) pair to label."""

    uid: str
    text: str
    keyword: str
    gloss: str


@dataclass
class AnnotationCounts:
    """What a run did; counts add (``a + b``) and serialize with ``to_dict``."""

    done: int = 0
    skipped_existing: int = 0
    unparsed: int = 0
    retried: int = 0

    def __add__(self, other: AnnotationCounts) -> AnnotationCounts:
        return AnnotationCounts(
            self.done + other.done,
            self.skipped_existing + other.skipped_existing,
            self.unparsed + other.unparsed,
            self.retried + other.retried,
        )

    def to_dict(self) -> dict[str, int]:
        """The counts as a plain dict."""
        return {
            "done": self.done,
            "skipped_existing": self.skipped_existing,
            "unparsed": self.unparsed,
            "retried": self.retried,
        }


class Annotator:
    """Asks a backend the WSD question and, on "yes", the regard question for each item.

    Args:
        backend: The chat model.
        retries: How many times a reply without a parsable answer is followed up with
            ``RETRY_PROMPT`` (in the same conversation) before the answer is left ``None``.
    """

    def __init__(self, backend: ChatBackend, retries: int = 3) -> None:
        if retries < 0:
            raise AnnotationConfigError(f"retries={retries!r} must be >= 0")
        self.backend, self.retries = backend, retries
        self.counts = AnnotationCounts()

    def _ask(self, prompt: str, choices: Sequence[str]) -> tuple[str | None, str]:
        messages: list[Message] = [{"role": "user", "content": prompt}]
        reply = self.backend.chat(messages)
        replies = [reply]
        answer = parse_answer(reply, choices)
        for _ in range(self.retries):
            if answer is not None:
                break
            self.counts.retried += 1
            messages += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": format_retry_prompt(choices)},
            ]
            reply = self.backend.chat(messages)
            replies.append(reply)
            answer = parse_answer(reply, choices)
        if answer is None:
            self.counts.unparsed += 1
        return answer, RAW_SEPARATOR.join(replies)

    def annotate(self, item: AnnotationItem) -> dict[str, Any]:
        """The output record ``{"uid", "wsd", "regard", "wsd_raw", "regard_raw", "model"}`` of one item."""
        wsd, wsd_raw = self._ask(format_wsd_prompt(item.text, item.keyword, item.gloss), WSD_ANSWERS)
        regard: str | None = None
        regard_raw: str | None = None
        if wsd == "yes":
            regard, regard_raw = self._ask(
                format_regard_prompt(item.text, item.keyword, item.gloss), REGARD_ANSWERS
            )
        self.counts.done += 1
        return {
            "uid": item.uid,
            "wsd": wsd,
            "regard": regard,
            "wsd_raw": wsd_raw,
            "regard_raw": regard_raw,
            "model": self.backend.model_id,
        }


# -- files ------------------------------------------------------------------------------------------
def read_items(path: Path, max_items: int | None = None) -> list[AnnotationItem]:
    """Read and check the first ``max_items`` items of a JSON lines file (blank lines are ignored).

    Raises:
        ShardError: The file is missing, or a line is not a JSON object with a ``uid`` (string
            or integer) and non-empty string ``text``, ``keyword`` and ``gloss``, or repeats a
            uid; the message names ``file:line``.
    """
    items: list[AnnotationItem] = []
    seen: dict[str, int] = {}
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise ShardError(f"{path}: input file not found") from None
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            if max_items is not None and len(items) >= max_items:
                break
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ShardError(f"{where}: invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ShardError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise ShardError(f"{where}: expected a JSON object, got {type(obj).__name__}")
            uid = obj.get("uid")
            if isinstance(uid, bool) or not isinstance(uid, str | int) or uid == "":
                raise ShardError(f"{where}: 'uid' must be a non-empty string or an integer, got {uid!r}")
            for name in ("text", "keyword", "gloss"):
                value = obj.get(name)
                if not isinstance(value, str) or not value.strip():
                    raise ShardError(f"{where}: field {name!r} must be a non-empty string, got {value!r}")
            key = str(uid)
            if key in seen:
                raise ShardError(f"{where}: uid {uid!r} repeats line {seen[key]}; uids must be unique")
            seen[key] = lineno
            items.append(AnnotationItem(key, obj["text"], obj["keyword"], obj["gloss"]))
    return items


def prepare_output(path: Path) -> set[str]:
    """The uids already in an output file, after dropping a last line cut off by a crash.

    A last line without its newline, or whose JSON is broken, is what an interrupted write leaves
    behind: it is removed from the file (with a warning) so its item is annotated again.

    Raises:
        ShardError: An earlier line is corrupt or lacks a ``uid``; the message names ``file:line``.
    """
    if not path.exists():
        return set()
    data = path.read_bytes()
    lines = data.split(b"\n")
    # after split, a complete file ends with b""; anything else in lines[-1] was cut off
    complete, tail = lines[:-1], lines[-1]
    keep_bytes = len(data) - len(tail)
    if complete and tail == b"" and _parse_record(complete[-1]) is None and complete[-1].strip():
        # newline written but content broken (e.g. zero-filled after a power loss)
        tail = complete.pop() + b"\n"
        keep_bytes -= len(tail)
    if tail.strip():
        logger.warning(
            "%s: dropping an incomplete last line (%d bytes) left by an interrupted run; "
            "its item will be annotated again",
            path,
            len(tail),
        )
        with path.open("r+b") as handle:
            handle.truncate(keep_bytes)
            handle.flush()
            os.fsync(handle.fileno())
    elif tail:  # only whitespace after the last newline
        with path.open("r+b") as handle:
            handle.truncate(keep_bytes)
    done: set[str] = set()
    for lineno, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        record = _parse_record(raw)
        if record is None:
            raise ShardError(
                f"{path}:{lineno}: corrupt output line (not a JSON object with a 'uid'); "
                "fix or remove it, then run again"
            )
        done.add(str(record["uid"]))
    return done


def _parse_record(raw: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(obj, dict) or obj.get("uid") in (None, ""):
        return None
    return obj


def annotate_file(
    input_path: Path,
    output_path: Path,
    annotator: Annotator,
    *,
    max_items: int | None = None,
    progress: bool = False,
) -> dict[str, int]:
    """Annotate the items of ``input_path`` not yet in ``output_path``, appending their records.

    Each record is written as one line, flushed and fsynced before the next item starts, so a
    crash loses at most the item in flight; the next run skips every uid already written.

    Args:
        input_path: JSON lines with ``uid``, ``text``, ``keyword`` and ``gloss``.
        output_path: JSON lines output, created or appended to (its folder is created).
        annotator: Asks the questions; its counts are updated as items are done.
        max_items: Consider only the first ``max_items`` input items (``None``: all).
        progress: Show a tqdm progress bar.

    Returns:
        The counts of this run: ``done``, ``skipped_existing``, ``unparsed`` and ``retried``.
    """
    if max_items is not None and max_items < 0:
        raise AnnotationConfigError(f"max_items={max_items!r} must be >= 0 or None")
    items = read_items(input_path, max_items)
    done_uids = prepare_output(output_path)
    todo = [item for item in items if item.uid not in done_uids]
    start = AnnotationCounts(**annotator.counts.to_dict())
    skipped = len(items) - len(todo)
    logger.info(
        "%s: %d items, %d already in %s, %d to annotate with %s",
        input_path,
        len(items),
        skipped,
        output_path,
        len(todo),
        annotator.backend.model_id,
    )
    output_path.parent.mkdir(parents=True, exist_ok=True)
    from tqdm import tqdm

    with (
        output_path.open("a", encoding="utf-8", newline="\n") as out,
        tqdm(total=len(todo), disable=not progress, unit="item", desc="annotate") as bar,
    ):
        for item in todo:
            record = annotator.annotate(item)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            os.fsync(out.fileno())
            bar.update(1)
            bar.set_postfix(unparsed=annotator.counts.unparsed - start.unparsed, refresh=False)
    c = annotator.counts
    counts = AnnotationCounts(
        done=c.done - start.done,
        skipped_existing=skipped,
        unparsed=c.unparsed - start.unparsed,
        retried=c.retried - start.retried,
    )
    logger.info("%s: %s", output_path, counts.to_dict())
    return counts.to_dict()


def run_annotation(
    input_path: Path,
    output_path: Path,
    backend: str,
    model: str,
    base_url: str | None,
    gguf_file: str | None,
    max_items: int | None,
    retries: int,
    progress: bool,
    *,
    max_new_tokens: int = 160,
) -> dict[str, int]:
    """Label (sentence, keyword) pairs with an LLM; resumable (the ``fairstream annotate`` command).

    Args:
        input_path: JSON lines with ``uid``, ``text``, ``keyword`` and ``gloss`` (the dev-set
            schema; other fields are ignored).
        output_path: JSON lines of ``{"uid", "wsd", "regard", "wsd_raw", "regard_raw", "model"}``,
            appended to; uids already there are skipped and a line cut off by a crash is dropped.
        backend: ``"openai"`` (an OpenAI-compatible server at ``base_url``) or ``"transformers"``
            (a local model).
        model: The served model name (openai) or a local folder / repository id (transformers).
        base_url: The API root of the server, e.g. ``http://localhost:8000/v1`` (openai only).
        gguf_file: A ``.gguf`` file inside ``model`` to load (transformers only).
        max_items: Consider only the first ``max_items`` input items (``None``: all).
        retries: Retries of failed requests (openai) and follow-ups of unparsable replies.
        progress: Show a progress bar.
        max_new_tokens: Upper bound on each reply's length in tokens.

    Returns:
        ``{"done", "skipped_existing", "unparsed", "retried"}``: items annotated by this run, items
        found already done, answers left ``None`` after all follow-ups, follow-ups sent.
    """
    if backend not in BACKENDS:
        raise AnnotationConfigError(f"backend={backend!r} is not one of {BACKENDS}")
    if retries < 0:
        raise AnnotationConfigError(f"retries={retries!r} must be >= 0")
    chat = make_backend(
        backend, model, base_url=base_url, gguf_file=gguf_file, retries=retries, max_new_tokens=max_new_tokens
    )
    return annotate_file(
        Path(input_path), Path(output_path), Annotator(chat, retries), max_items=max_items, progress=progress
    )
