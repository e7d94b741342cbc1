from __future__ import annotations

import bisect
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairstream.candidates import CandidateExtractor
from fairstream.errors import FairStreamError, InvalidDocumentError
from fairstream.text import LengthFilter, SentenceSplitter, WordTokenizer, coerce_text

TEXT = "Dr. Smith met Mr. Jones at 5 p.m. on Monday.  They talked.\n\nThen it rained! Did it stop? Yes."


@pytest.mark.parametrize("kind", ["punkt", "fallback"])
def test_sentence_spans_are_exact_offsets(kind):
    splitter = SentenceSplitter(kind)  # type: ignore[arg-type]
    spans = splitter.spans(TEXT)
    sentences = [TEXT[s:e] for s, e in spans]
    assert sentences[0].startswith("Dr. Smith met Mr. Jones")  # abbreviations do not split
    assert sentences[-1] == "Yes."
    assert "Then it rained!" in sentences and "Did it stop?" in sentences
    # spans are ordered, non-overlapping and only whitespace lies between them
    for (_, e1), (s2, _) in itertools.pairwise(spans):
        assert e1 <= s2 and TEXT[e1:s2].strip() == ""
    assert splitter.source == ("punkt_tab" if kind == "punkt" else "fairstream-fallback")


def test_missing_punkt_data_falls_back_or_explains(monkeypatch, tmp_path, caplog):
    import nltk

    import fairstream.text

    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    monkeypatch.setattr(fairstream.text, "_fallback_warned", False)  # logged once per process
    strict = SentenceSplitter("punkt")
    with pytest.raises(FairStreamError, match=r"punkt_tab.*NLTK_DATA.*nltk.downloader punkt_tab"):
        strict.spans(TEXT)
    auto = SentenceSplitter("auto")
    with caplog.at_level("WARNING"):
        assert len(auto.spans(TEXT)) == 5
    assert auto.source == "fairstream-fallback"
    assert "punkt_tab not found" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert len(SentenceSplitter("auto").spans(TEXT)) == 5
    assert "punkt_tab not found" not in caplog.text  # a second splitter in the same process stays quiet


def test_bad_splitter_kind():
    with pytest.raises(ValueError, match=r"kind='nope' is not one of \('auto', 'punkt', 'fallback'\)"):
        SentenceSplitter("nope")  # type: ignore[arg-type]


def test_length_filter_bounds_are_paper_bounds():
    f = LengthFilter()
    assert not f.accepts(16) and f.accepts(17) and f.accepts(128) and not f.accepts(129)
    with pytest.raises(ValueError, match="max_tokens"):
        LengthFilter(10, 5)


def test_length_filter_applies_to_nltk_tokens():
    words = WordTokenizer()
    short = "The Muslim community met on Friday."
    exact17 = "The Muslim community of the small town met on Friday evening to discuss the new plan ."
    assert words.count(exact17) == 17
    ext = CandidateExtractor()
    doc = short + " " + exact17
    cands = ext.scan(doc).candidates
    assert [doc[c.start : c.end] for c in cands] == [exact17]
    assert ext.scan(doc).n_mention_sentences_out_of_length == 1
    configurable = CandidateExtractor(length_filter=LengthFilter(min_tokens=3, max_tokens=10))
    assert [doc[c.start : c.end] for c in configurable.scan(doc).candidates] == [short]


def test_candidates_group_mentions_by_sentence_with_document_offsets():
    doc = (
        "Nothing to see in this first sentence, which is long enough to pass the length filter easily today. "
        "The Asian and Muslim students in the town organised a very large festival for everyone last weekend, yes."
    )
    scan = CandidateExtractor().scan(doc)
    assert scan.has_keyword and scan.n_sentences == 1  # the sentence without a keyword is never split
    (cand,) = scan.candidates
    assert [(doc[m.start : m.end], m.keyword) for m in cand.mentions] == [
        ("Asian", "asian"),
        ("Muslim", "muslim"),
    ]
    assert CandidateExtractor().scan("No protected words at all here.").has_keyword is False


@pytest.mark.parametrize(
    ("value", "match", "reason"),
    [
        (None, "text is None", "none"),
        (42, "must be str or UTF-8 bytes, got int", "not-a-string"),
        (b"caf\xc3", "not valid UTF-8", "invalid-utf8"),
        ("x" * 11, "more than max_doc_chars=10", "too-large"),
    ],
)
def test_coerce_text_errors_name_the_record(value, match, reason):
    with pytest.raises(InvalidDocumentError, match=match) as info:
        coerce_text(value, where="doc 7 (id='a')", max_chars=10)
    assert "doc 7 (id='a')" in str(info.value) and info.value.reason == reason


def test_coerce_text_accepts_str_and_utf8_bytes():
    assert coerce_text("café", where="d") == "café"
    assert coerce_text("café".encode(), where="d") == "café"
    assert coerce_text("", where="d") == ""


def test_ten_megabyte_document_is_scanned():
    filler = "Plain words about gardening and weather without protected terms. " * 160_000
    doc = (
        filler
        + "The Muslim volunteers cleaned the park and planted many new trees for the whole neighbourhood today."
    )
    assert len(doc) > 10_000_000
    with pytest.raises(InvalidDocumentError, match="max_doc_chars"):
        coerce_text(doc, where="big")
    text = coerce_text(doc, where="big", max_chars=None)
    scan = CandidateExtractor().scan(text)
    assert [m.keyword for c in scan.candidates for m in c.mentions] == ["muslim"]


def test_block_spans_cut_paragraphs_and_long_runs():
    from fairstream.text import block_spans

    text = "First para. Still first.\n\n  \nSecond para.\nSame para." + " word" * 30
    blocks = block_spans(text, max_chars=40)
    assert [text[s:e] for s, e in blocks][:1] == ["First para. Still first."]
    assert all(e - s <= 40 for s, e in blocks)
    # blocks are ordered, disjoint and cover every non-blank character
    covered = "".join(text[s:e] for s, e in blocks)
    assert covered.replace(" ", "").replace("\n", "") == text.replace(" ", "").replace("\n", "")


def _last_span_per_position(spans: list[tuple[int, int]], positions: list[int]) -> set[tuple[int, int]]:
    starts = [s for s, _ in spans]
    return {spans[i] for p in positions if (i := bisect.bisect_right(starts, p) - 1) >= 0}


def _check_spans_at(splitter: SentenceSplitter, text: str, positions: list[int]) -> None:
    full = splitter.spans(text)
    part = splitter.spans_at(text, positions, offset=7)
    assert part == sorted(part) and {(s - 7, e - 7) for s, e in part} <= set(full), text
    # every position lands in the same sentence as with the full split
    assert _last_span_per_position([(s - 7, e - 7) for s, e in part], positions) == _last_span_per_position(
        full, positions
    ), text


@pytest.mark.parametrize("kind", ["punkt", "fallback"])
def test_spans_at_equals_full_split_on_real_paragraphs(kind, shared_dir):
    """The lazy split decides only the sentence ends near the asked positions, with the same result."""
    import gzip
    import json
    import random

    from fairstream.text import block_spans

    splitter, rng = SentenceSplitter(kind), random.Random(0)  # type: ignore[arg-type]
    path = shared_dir / "data" / "corpus" / "fineweb-edu-sample.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line, _ in zip(f, range(150), strict=False)]
    n = 0
    for text in texts:
        for bs, be in block_spans(text):
            block = text[bs:be]
            _check_spans_at(splitter, block, [rng.randrange(len(block)) for _ in range(3)])
            n += 1
    assert n > 100


_sentencey = st.lists(
    st.one_of(
        st.sampled_from(
            ["Dr.", "Mr.", "U.S.", "e.g.", "p.m.", "(", ")", '"', "'", "...", "?!", "--", "\n", "1."]
        ),
        st.text(st.sampled_from(list("abcXYZ .!?)\"'-\n")), max_size=8),
    ),
    max_size=25,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(_sentencey, st.lists(st.integers(0, 400), min_size=1, max_size=4))
def test_spans_at_equals_full_split_on_generated_text(text, positions):
    if not text:
        return
    _check_spans_at(_PUNKT, text, [p % len(text) for p in positions])


_PUNKT = SentenceSplitter("punkt")


def _fineweb_texts(shared_dir, n: int) -> list[str]:
    import gzip
    import json

    path = shared_dir / "data" / "corpus" / "fineweb-edu-sample.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line, _ in zip(f, range(n), strict=False)]


@pytest.mark.parametrize("kind", ["punkt", "fallback"])
def test_long_paragraphs_are_cut_only_where_punkt_ends_a_sentence(kind, shared_dir):
    """Blocks of a long paragraph split exactly as the whole paragraph does, wherever the limit falls."""
    from fairstream import text as fs_text

    splitter = SentenceSplitter(kind)  # type: ignore[arg-type]
    tokenizer = splitter._load()
    safe_cuts, compared = 0, 0
    for text in _fineweb_texts(shared_dir, 600):
        if len(text) < 3000:
            continue
        whole = [sp for bs, be in fs_text.block_spans(text, 10**9) for sp in splitter.spans(text[bs:be], bs)]
        for max_chars in (1000, 2500):
            fallback = False

            def find_cut(t: str, lo: int, hi: int) -> int | None:
                nonlocal fallback, safe_cuts
                cut = fs_text._sentence_start_before(tokenizer, t, lo, hi)
                fallback |= cut is None
                safe_cuts += cut is not None
                return cut

            blocks = fs_text.block_spans(text, max_chars, find_cut)
            assert blocks == splitter.block_spans(text, max_chars)  # the splitter's method is this
            if fallback:  # a paragraph with no Punkt break in the window: cut by position
                continue
            assert [sp for bs, be in blocks for sp in splitter.spans(text[bs:be], bs)] == whole
            compared += 1
    assert safe_cuts > 300 and compared > 100, (safe_cuts, compared)


def test_repeated_end_marks_are_not_a_cut():
    """NLTK drops the first '!' of 'tuned!!' as overlapping the second; a cut after them would revive it."""
    from fairstream import text as fs_text

    tokenizer = SentenceSplitter("punkt")._load()
    text = "We have more kits on the drawing board, so stay tuned!! You have all read about them here."
    assert fs_text._sentence_start_before(tokenizer, text, 0, len(text)) is None
    plain = text.replace("tuned!!", "tuned.")  # the same end with one mark is a safe cut
    assert plain[fs_text._sentence_start_before(tokenizer, plain, 0, len(plain)) :].startswith("You have")


def test_removing_sentences_does_not_move_the_sentences_after_them(shared_dir):
    """A filtered document re-scanned finds the same sentences it kept (the ``--cap 1`` audit).

    The regression: a 49,805-character paragraph was cut into blocks at the last line break before
    20,000 characters from its start, so removing earlier sentences moved the cut and split a
    heading off the sentence it belongs to ("-Second Phase: String of Irish successes" + "From ...").
    """
    import gzip
    import json

    path = shared_dir / "data" / "corpus" / "fineweb-edu-sample.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = next(d["text"] for line in f if (d := json.loads(line))["id"] == "fwe-611")
    extractor = CandidateExtractor()
    before = extractor.scan(text).candidates
    # the nine sentences the default filter (joint-v3, cap 1%, 2026-11-26) dropped there: negative "Irish" ones
    from fairstream.core.step import remove_spans

    dropped = [(6316, 6459), (6460, 6647), (6648, 6781), (6782, 6896), (7035, 7202), (7203, 7321),
               (12547, 12687), (12688, 12900), (15679, 15950)]  # fmt: skip
    assert set(dropped) <= {(c.start, c.end) for c in before}
    after_text = remove_spans(text, dropped)
    kept = [text[c.start : c.end] for c in before if (c.start, c.end) not in dropped]
    found = [after_text[c.start : c.end] for c in extractor.scan(after_text).candidates]
    assert found == kept
    assert any(s.startswith("-Second Phase: String of Irish successes\nFrom Clontibret") for s in found)


_tricky_text = st.lists(
    st.one_of(
        st.sampled_from(
            ["can't", "'re", "n't", "''", "``", "--", "...", "(a)", "[b]", "{c}", "«x»", "“y”", "‘z’"]
        ),
        # combining marks, joiners, Devanagari, Arabic-Indic digits: where regex and re disagree on \w
        st.text(st.sampled_from(list("ab'\"` .,;:?!-$%&0\u0301\u093f\u0915\u200d\u00e9\u0660_")), max_size=6),
    ),
    max_size=20,
).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(_tricky_text)
def test_word_tokens_equal_nltks_own_on_generated_text(text):
    """Our tokenizer calls NLTK's patterns without NLTK's per-call time limit: same tokens."""
    from nltk.tokenize import NLTKWordTokenizer

    assert _WORDS.tokenize(text) == NLTKWordTokenizer().tokenize(text)


_WORDS = WordTokenizer()


def test_word_tokens_and_sentences_equal_nltks_own_on_real_text(shared_dir):
    from nltk.tokenize import NLTKWordTokenizer, PunktTokenizer

    from fairstream.text import block_spans

    nltk_words, nltk_punkt, splitter = (
        NLTKWordTokenizer(),
        PunktTokenizer("english"),
        SentenceSplitter("punkt"),
    )
    n_sentences = 0
    for text in _fineweb_texts(shared_dir, 120):
        for bs, be in block_spans(text):
            block = text[bs:be]
            spans = splitter.spans(block)
            assert spans == list(nltk_punkt.span_tokenize(block))
            for s, e in spans:
                assert _WORDS.tokenize(block[s:e]) == nltk_words.tokenize(block[s:e])
                n_sentences += 1
    assert n_sentences > 1000


def test_untimed_patterns_are_this_instances_only():
    """NLTK's classes keep their time-limited patterns; only fairstream's own instances drop the limit."""
    redos = pytest.importorskip("nltk.redos", reason="NLTK < 3.10 compiles with re: nothing is unwrapped")
    from nltk.tokenize import NLTKWordTokenizer

    words = WordTokenizer()
    assert isinstance(NLTKWordTokenizer.PUNCTUATION[0][0], redos.TimedPattern)
    assert not any(
        isinstance(p, redos.TimedPattern) for p, _ in words._tok.PUNCTUATION + words._tok.STARTING_QUOTES
    )
    punkt = SentenceSplitter("punkt")._load()
    assert not isinstance(punkt._lang_vars._re_word_tokenizer, redos.TimedPattern)
    assert not isinstance(punkt._lang_vars._re_period_context, redos.TimedPattern)
