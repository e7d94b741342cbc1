"""The paper's two prompts (WSD, then regard), the follow-up of an unparsed reply, and their answers."""

from __future__ import annotations

from collections.abc import Sequence

from fairstream.core.schema import REGARDS_AS_PROMPTED, WSD_AS_PROMPTED

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
