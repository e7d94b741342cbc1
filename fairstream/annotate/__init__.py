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

The package's modules: ``prompts``, ``answers`` (reading a reply), ``annotator`` (one item) and
``files`` (a whole file, resumable); every name, and the chat backends of ``fairstream.llm`` that
lived here, are importable from ``fairstream.annotate``.
"""

from fairstream.annotate.annotator import (
    AnnotationCounts,
    AnnotationItem,
    Annotator,
)
from fairstream.annotate.answers import (
    parse_answer,
    parse_regard,
    parse_wsd,
)
from fairstream.annotate.files import (
    annotate_file,
    prepare_output,
    read_items,
    run_annotation,
)
from fairstream.annotate.prompts import (
    PROMPT_VERSION,
    RAW_SEPARATOR,
    REGARD_ANSWERS,
    REGARD_PROMPT,
    RETRY_PROMPT,
    WSD_ANSWERS,
    WSD_PROMPT,
    format_regard_prompt,
    format_retry_prompt,
    format_wsd_prompt,
)
from fairstream.llm import (
    BACKENDS,
    AnnotationConfigError,
    BackendError,
    ChatBackend,
    Message,
    OpenAIChatBackend,
    TransformersBackend,
    make_backend,
)

__all__ = [
    "BACKENDS",
    "PROMPT_VERSION",
    "RAW_SEPARATOR",
    "REGARD_ANSWERS",
    "REGARD_PROMPT",
    "RETRY_PROMPT",
    "WSD_ANSWERS",
    "WSD_PROMPT",
    "AnnotationConfigError",
    "AnnotationCounts",
    "AnnotationItem",
    "Annotator",
    "BackendError",
    "ChatBackend",
    "Message",
    "OpenAIChatBackend",
    "TransformersBackend",
    "annotate_file",
    "format_regard_prompt",
    "format_retry_prompt",
    "format_wsd_prompt",
    "make_backend",
    "parse_answer",
    "parse_regard",
    "parse_wsd",
    "prepare_output",
    "read_items",
    "run_annotation",
]
