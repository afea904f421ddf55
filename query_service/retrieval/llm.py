"""Chat client for any OpenAI-compatible endpoint, used by the agentic planner and navigator.

One `LLMClient` per role (planner, navigator), each with its own `LLMConfig`: base URL, model,
several API keys and a per-key rate limit. The client

- rotates among the keys under per-key rate limits (`corpus_pipeline.common.keypool.KeyPool`: each key
  in its own sliding one-minute window, sleeping when none is free; clock and sleep injectable);
- retries an HTTP 429 at once with the next available key, the 429 key cooling down for its
  `Retry-After` (or `retry-after-ms`) or `default_cooldown_seconds`;
- in JSON mode makes sure the word "json" is in the prompt (DeepSeek and OpenAI reject
  `response_format={"type": "json_object"}` otherwise);
- concatenates only non-None `delta.content` when streaming;
- returns the token usage of every call (from the response, else counted with the corpus
  tokenizer and flagged `estimated`), so a budget can reserve before and commit after.

Provider failures raise `LLMError`, whose message never holds the base URL, host or a key: it
names only the failure kind and HTTP status, and the original exception (whose text may hold
the URL) is not chained.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import httpx
import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionMessageParam

from corpus_pipeline.common.closing import Closing
from corpus_pipeline.common.keypool import KeyPool, KeysExhausted, retry_after
from corpus_pipeline.enrich.tokens import count_tokens

JSON_INSTRUCTION = "Respond in JSON."

Messages = str | Sequence[Mapping[str, Any]]


class LLMError(Exception):
    """A provider failure, with a message free of endpoint URLs and keys.

    `kind` is one of: rate_limited, timeout, connection, status, auth, bad_request,
    invalid_json, empty. `result` holds the completed call when tokens were spent anyway
    (invalid JSON), so a budget can still commit them.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        status_code: int | None = None,
        result: LLMResult | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status_code = status_code
        self.result = result


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    estimated: bool = False  # counted locally because the server reported no usage


@dataclass(frozen=True)
class LLMResult:
    text: str
    usage: Usage
    key_index: int
    model: str
    finish_reason: str | None = None


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_keys: Sequence[str] = field(repr=False)
    requests_per_minute: int = 60
    timeout: float = 20.0
    default_cooldown_seconds: float = 60.0  # after a 429 without Retry-After
    max_wait_seconds: float = 300.0  # longest single wait for a free key before giving up
    max_attempts: int | None = None  # 429 retries included; default 2 * keys + 1

    def __post_init__(self) -> None:
        keys = tuple(self.api_keys)
        if not keys or any(not k for k in keys):
            raise ValueError("LLMConfig needs at least one non-empty API key")
        if self.requests_per_minute < 1:
            raise ValueError("requests_per_minute must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        object.__setattr__(self, "api_keys", keys)

    @property
    def attempts(self) -> int:
        return self.max_attempts or 2 * len(self.api_keys) + 1


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return " ".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def normalize_messages(messages: Messages) -> list[dict[str, Any]]:
    """A fresh list of message dicts (a plain string is one user message)."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def ensure_json_word(messages: Messages) -> list[dict[str, Any]]:
    """The messages, with "Respond in JSON." appended to the last user or system message
    unless some message already says "json" (any case). The input is not modified."""
    out = normalize_messages(messages)
    if any("json" in _text_of(m.get("content")).lower() for m in out):
        return out
    for message in reversed(out):
        if message.get("role") not in ("user", "system"):
            continue
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = f"{content.rstrip()}\n\n{JSON_INSTRUCTION}".lstrip()
        elif isinstance(content, Sequence):
            message["content"] = [*content, {"type": "text", "text": JSON_INSTRUCTION}]
        else:
            message["content"] = JSON_INSTRUCTION
        return out
    out.append({"role": "user", "content": JSON_INSTRUCTION})
    return out


def count_message_tokens(messages: Messages) -> int:
    """Tokens of the message texts (corpus tokenizer; no per-message overhead)."""
    return sum(count_tokens(_text_of(m.get("content"))) for m in normalize_messages(messages))


def _strip_fences(text: str) -> str:
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        body = body[3:-3]
        first, _, rest = body.partition("\n")
        if first.strip().lower() in ("", "json"):
            body = rest
    return body.strip()


def _usage(reported: CompletionUsage) -> Usage:
    prompt = reported.prompt_tokens or 0
    done = reported.completion_tokens or 0
    return Usage(prompt, done, reported.total_tokens or prompt + done)


class LLMClient(Closing):
    """Thread-safe chat client over several API keys of one OpenAI-compatible endpoint."""

    def __init__(
        self,
        config: LLMConfig,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self._clock = clock
        self._sleep = sleep
        # one `openai` client per key, sharing one connection pool
        self._http = openai.DefaultHttpxClient(timeout=config.timeout)
        self._clients = [
            openai.OpenAI(
                base_url=config.base_url or None,
                api_key=key,
                max_retries=0,
                timeout=config.timeout,
                http_client=self._http,
            )
            for key in config.api_keys
        ]
        self._pool = KeyPool(
            len(config.api_keys),
            config.requests_per_minute,
            default_cooldown_seconds=config.default_cooldown_seconds,
            max_wait_seconds=config.max_wait_seconds,
            clock=clock,
            sleep=sleep,
        )

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:
        return f"LLMClient(model={self.config.model!r}, keys={len(self._pool)})"

    def _acquire(self) -> int:
        try:
            return self._pool.acquire()
        except KeysExhausted as exc:
            raise LLMError(str(exc), kind="rate_limited") from None

    # -- calls --------------------------------------------------------------------------

    def complete(
        self,
        messages: Messages,
        *,
        json_mode: bool = False,
        stream: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = 0,
    ) -> LLMResult:
        sent = ensure_json_word(messages) if json_mode else normalize_messages(messages)
        last_status: int | None = None
        for _ in range(self.config.attempts):
            index = self._acquire()
            try:
                return self._call(index, sent, json_mode, stream, max_tokens, temperature)
            except openai.RateLimitError as exc:
                last_status = exc.status_code
                self._pool.cool_down(index, retry_after(exc.response.headers))
            except openai.APITimeoutError:
                raise LLMError("LLM request timed out", kind="timeout") from None
            except openai.APIConnectionError:
                raise LLMError("could not reach the LLM provider", kind="connection") from None
            except openai.APIStatusError as exc:
                status = exc.status_code
                kind = (
                    "auth" if status in (401, 403) else "bad_request" if status < 500 else "status"
                )
                raise LLMError(
                    f"LLM provider returned HTTP {status}", kind=kind, status_code=status
                ) from None
            except (openai.OpenAIError, httpx.HTTPError) as exc:
                raise LLMError(
                    f"LLM provider call failed ({type(exc).__name__})", kind="status"
                ) from None
        raise LLMError(
            f"LLM provider kept rate limiting after {self.config.attempts} attempts",
            kind="rate_limited",
            status_code=last_status,
        )

    def complete_json(
        self,
        messages: Messages,
        *,
        stream: bool = False,
        max_tokens: int | None = None,
        temperature: float | None = 0,
    ) -> tuple[dict[str, Any], LLMResult]:
        """A JSON-object reply, parsed; invalid or non-object JSON raises `LLMError`
        (with `.result` set, since the tokens were spent)."""
        result = self.complete(
            messages, json_mode=True, stream=stream, max_tokens=max_tokens, temperature=temperature
        )
        try:
            data = json.loads(_strip_fences(result.text))
        except ValueError:
            data = None
        if not isinstance(data, dict):
            kind = "empty" if not result.text.strip() else "invalid_json"
            raise LLMError(
                f"model reply is not a JSON object (finish_reason={result.finish_reason})",
                kind=kind,
                result=result,
            )
        return data, result

    def _call(
        self,
        index: int,
        messages: list[dict[str, Any]],
        json_mode: bool,
        stream: bool,
        max_tokens: int | None,
        temperature: float | None,
    ) -> LLMResult:
        client = self._clients[index]
        params = cast(list[ChatCompletionMessageParam], messages)
        response_format: Any = {"type": "json_object"} if json_mode else openai.omit
        max_tokens_arg: Any = openai.omit if max_tokens is None else max_tokens
        temperature_arg: Any = openai.omit if temperature is None else temperature
        reported: Usage | None = None
        finish_reason: str | None = None
        model = self.config.model
        if stream:
            parts: list[str] = []
            with client.chat.completions.create(
                model=self.config.model,
                messages=params,
                stream=True,
                response_format=response_format,
                max_tokens=max_tokens_arg,
                temperature=temperature_arg,
            ) as chunks:
                for chunk in chunks:
                    model = chunk.model or model
                    if chunk.usage is not None:
                        reported = _usage(chunk.usage)
                    for choice in chunk.choices:
                        if choice.index != 0:
                            continue
                        if choice.delta is not None and choice.delta.content is not None:
                            parts.append(choice.delta.content)
                        finish_reason = choice.finish_reason or finish_reason
            text = "".join(parts)
        else:
            response = client.chat.completions.create(
                model=self.config.model,
                messages=params,
                response_format=response_format,
                max_tokens=max_tokens_arg,
                temperature=temperature_arg,
            )
            model = response.model or model
            first = response.choices[0] if response.choices else None
            text = (first.message.content if first is not None else None) or ""
            finish_reason = first.finish_reason if first is not None else None
            if response.usage is not None:
                reported = _usage(response.usage)
        usage = reported
        if usage is None:
            prompt = count_message_tokens(messages)
            done = count_tokens(text)
            usage = Usage(prompt, done, prompt + done, estimated=True)
        return LLMResult(
            text=text, usage=usage, key_index=index, model=model, finish_reason=finish_reason
        )
