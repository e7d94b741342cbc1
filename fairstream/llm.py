"""Chat model backends shared by LLM annotation and the builders.

``OpenAIChatBackend`` talks to any OpenAI-compatible ``/chat/completions`` server (vLLM, TGI,
llama.cpp server) with the standard library only; ``TransformersBackend`` runs a local causal LM,
optionally from a GGUF file (needs the ``train`` extra). ``make_backend`` builds either from
command-line style options.
"""

from __future__ import annotations

import functools
import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from fairstream.errors import FairStreamError, MissingDependencyError

logger = logging.getLogger(__name__)

BACKENDS = ("openai", "transformers")


class BackendError(FairStreamError, RuntimeError):
    """A chat backend failed: the server answered with an error or could not be reached."""


class AnnotationConfigError(FairStreamError, ValueError):
    """A bad argument; the message names it, its value and what is allowed."""


# -- backends ---------------------------------------------------------------------------------------
Message = dict[str, str]


class ChatBackend(Protocol):
    """Anything that answers a chat conversation with the assistant's next message."""

    @property
    def model_id(self) -> str:
        """The model name written into every output line."""
        ...

    def chat(self, messages: list[Message]) -> str:
        """The assistant's reply to ``messages`` (dicts with ``role`` and ``content``)."""
        ...


RETRYABLE_HTTP_STATUS = frozenset({408, 429})  # plus every 5xx


class OpenAIChatBackend:
    """A model behind an OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint.

    Uses only the standard library, so it works wherever fairstream does, against vLLM, TGI,
    llama.cpp server or the OpenAI API. Server errors (HTTP 5xx, 408, 429), timeouts and
    connection failures are retried with exponential backoff (``backoff_s``, ``2 * backoff_s``,
    ...) up to ``retries`` times; other HTTP errors (4xx) raise ``BackendError`` at once.

    Args:
        base_url: The API root, e.g. ``http://localhost:8000/v1``.
        model: The model name sent with each request and written into the output.
        api_key: Sent as a bearer token; defaults to the ``OPENAI_API_KEY`` environment
            variable, and no ``Authorization`` header is sent when neither is set.
        timeout: Seconds to wait for each response.
        temperature: Sampling temperature (0 = greedy, for reproducible labels).
        retries: How many times a failed request is retried.
        backoff_s: The first wait before a retry; it doubles with each further retry.
        max_tokens: Upper bound on the reply length in tokens (``None``: the server's default).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60,
        temperature: float = 0,
        *,
        retries: int = 3,
        backoff_s: float = 1.0,
        max_tokens: int | None = None,
    ) -> None:
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise AnnotationConfigError(f"base_url={base_url!r} must be an http:// or https:// URL")
        if not model:
            raise AnnotationConfigError(f"model={model!r} must be a non-empty model name")
        if timeout <= 0:
            raise AnnotationConfigError(f"timeout={timeout!r} must be > 0 seconds")
        if temperature < 0:
            raise AnnotationConfigError(f"temperature={temperature!r} must be >= 0")
        if retries < 0:
            raise AnnotationConfigError(f"retries={retries!r} must be >= 0")
        if backoff_s < 0:
            raise AnnotationConfigError(f"backoff_s={backoff_s!r} must be >= 0")
        if max_tokens is not None and max_tokens < 1:
            raise AnnotationConfigError(f"max_tokens={max_tokens!r} must be >= 1 or None")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout, self.temperature = timeout, temperature
        self.retries, self.backoff_s, self.max_tokens = retries, backoff_s, max_tokens
        self._sleep: Callable[[float], None] = time.sleep

    @property
    def model_id(self) -> str:
        """The model name written into every output line."""
        return self.model

    def chat(self, messages: list[Message]) -> str:
        """POST the conversation and return the first choice's message content.

        Raises:
            BackendError: An HTTP 4xx answer, a malformed response, or a failure that persisted
                through all retries; the message names the URL.
        """
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            payload["max_tokens"] = self.max_tokens
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        attempts = self.retries + 1
        for attempt in range(attempts):
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    data = response.read()
                return self._content(data)
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                if exc.code < 500 and exc.code not in RETRYABLE_HTTP_STATUS:
                    raise BackendError(
                        f"POST {self.url} failed with HTTP {exc.code} {exc.reason}: {detail} "
                        f"(check base_url and model={self.model!r})"
                    ) from None
                failure = f"HTTP {exc.code} {exc.reason}: {detail}"
            except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
                reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
                failure = f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
            if attempt + 1 < attempts:
                delay = self.backoff_s * 2**attempt
                logger.warning(
                    "POST %s failed (%s); retry %d/%d in %.1f s",
                    self.url,
                    failure,
                    attempt + 1,
                    self.retries,
                    delay,
                )
                self._sleep(delay)
        raise BackendError(f"POST {self.url} failed after {attempts} attempt(s): {failure}")

    def _content(self, data: bytes) -> str:
        try:
            obj = json.loads(data)
            content = obj["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise BackendError(
                f"POST {self.url} returned no chat completion (expected choices[0].message.content): "
                f"{data[:200]!r}"
            ) from None
        return "" if content is None else str(content)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        text = exc.read().decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text[:300] or "(empty body)"


class TransformersBackend:
    """A local causal language model run with transformers (greedy decoding).

    The model loads on the first ``chat`` call, so the backend is cheap to build and to pickle.
    The tokenizer's chat template formats the conversation; a model without one gets a plain
    ``User: ... / Assistant:`` transcript.

    Args:
        model: A local folder or Hugging Face repository id.
        gguf_file: The name of a ``.gguf`` file inside ``model`` to load (dequantized by
            transformers; needs the ``gguf`` package).
        device: The torch device to run on (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).
        max_new_tokens: Upper bound on the reply length in tokens.
    """

    def __init__(
        self, model: str, gguf_file: str | None = None, device: str = "cpu", max_new_tokens: int = 160
    ) -> None:
        if not model:
            raise AnnotationConfigError(f"model={model!r} must be a model folder or repository id")
        if gguf_file is not None and not gguf_file:
            raise AnnotationConfigError("gguf_file='' must be a file name or None")
        if max_new_tokens < 1:
            raise AnnotationConfigError(f"max_new_tokens={max_new_tokens!r} must be >= 1")
        self.model, self.gguf_file, self.device, self.max_new_tokens = (
            model,
            gguf_file,
            device,
            max_new_tokens,
        )
        self._tokenizer: Any = None
        self._model: Any = None
        self._torch: Any = None

    @property
    def model_id(self) -> str:
        """The model name written into every output line (``model`` or ``model#gguf_file``)."""
        return self.model if self.gguf_file is None else f"{self.model}#{self.gguf_file}"

    def _load(self) -> None:
        import torch

        self._tokenizer, self._model = load_causal_lm(self.model, self.gguf_file, self.device)
        self._torch = torch
        logger.info("loaded %s on %s", self.model_id, self.device)

    def chat(self, messages: list[Message]) -> str:
        """Generate the assistant's reply to ``messages`` greedily."""
        if self._model is None:
            self._load()
        tokenizer, model, torch = self._tokenizer, self._model, self._torch
        if getattr(tokenizer, "chat_template", None):
            prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        else:
            turns = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
            prompt = "\n\n".join([*turns, "Assistant:"])
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        with torch.inference_mode():
            output = model.generate(
                **inputs,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=pad_id,
            )
        new_tokens = output[0, inputs["input_ids"].shape[1] :]
        return str(tokenizer.decode(new_tokens, skip_special_tokens=True)).strip()


@functools.lru_cache(maxsize=1)
def load_causal_lm(model: str, gguf_file: str | None = None, device: str = "cpu") -> tuple[Any, Any]:
    """Tokenizer and causal LM (eval mode, on ``device``) from a local folder or a GGUF file in it.

    The last model loaded is kept for the next backend on the same model, device and file in this
    process: loading SmolLM2's GGUF took 37 s on a 2-core CPU (its tokenizer is converted each
    time), and a builder or an annotation run often makes several backends of one model.

    Raises:
        MissingDependencyError: torch/transformers (or the GGUF reader) are not installed.
        BackendError: the model cannot be loaded; the message names it.
    """
    model_id = model if gguf_file is None else f"{model}#{gguf_file}"
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise MissingDependencyError(
            f"language models need torch and transformers ({exc}); "
            "install them with: pip install 'fairstream[train]'"
        ) from exc
    kwargs: dict[str, Any] = {} if gguf_file is None else {"gguf_file": gguf_file}
    try:
        tokenizer: Any = AutoTokenizer.from_pretrained(model, **kwargs)
        lm: Any = AutoModelForCausalLM.from_pretrained(model, **kwargs)
    except ImportError as exc:
        raise MissingDependencyError(
            f"loading {model_id} needs a missing package ({exc}); install it with: pip install 'fairstream[train]'"
        ) from exc
    except (OSError, ValueError) as exc:
        raise BackendError(f"cannot load the model {model_id}: {exc}") from exc
    lm.to(device)
    lm.eval()
    return tokenizer, lm


def make_backend(
    backend: str,
    model: str,
    *,
    base_url: str | None = None,
    gguf_file: str | None = None,
    retries: int = 3,
    max_new_tokens: int = 160,
) -> ChatBackend:
    """Build the backend named ``backend`` (one of ``BACKENDS``) from command-line style options."""
    if backend == "openai":
        if gguf_file is not None:
            raise AnnotationConfigError(f"gguf_file={gguf_file!r} only applies to backend='transformers'")
        if base_url is None:
            raise AnnotationConfigError("backend='openai' needs base_url, e.g. 'http://localhost:8000/v1'")
        return OpenAIChatBackend(base_url, model, retries=retries, max_tokens=max_new_tokens)
    if backend == "transformers":
        return TransformersBackend(model, gguf_file=gguf_file, max_new_tokens=max_new_tokens)
    raise AnnotationConfigError(f"backend={backend!r} is not one of {BACKENDS}")
