"""The planner/navigator LLM client against a real local OpenAI-compatible server."""

from __future__ import annotations

import copy
import socket
import time
import traceback
from typing import Any

import pytest

from corpus_pipeline.enrich.tokens import count_tokens
from query_service.retrieval.llm import (
    JSON_INSTRUCTION,
    LLMClient,
    LLMConfig,
    LLMError,
    Usage,
    count_message_tokens,
    ensure_json_word,
)

from .openai_server import ReplyResult, Request, completion, error, openai_server, stream_completion
from .support import FakeTime

KEY_A = "sk-test-key-aaaa"
KEY_B = "sk-test-key-bbbb"


def make_client(
    base_url: str,
    keys: tuple[str, ...] = (KEY_A,),
    fake: FakeTime | None = None,
    **config: Any,
) -> LLMClient:
    fake = fake or FakeTime()
    settings = LLMConfig(base_url=base_url, model="planner-mini", api_keys=list(keys), **config)
    return LLMClient(settings, clock=fake.clock, sleep=fake.sleep)


def ok(body: dict[str, object]) -> tuple[int, str]:
    return 200, completion('{"steps": []}')


# -- json mode -------------------------------------------------------------------------


def test_json_mode_adds_the_word_json_when_the_prompt_lacks_it():
    messages = [
        {"role": "system", "content": "You plan retrieval."},
        {"role": "user", "content": "Split: ducks and geese"},
        {"role": "assistant", "content": "ok"},
    ]
    original = copy.deepcopy(messages)
    with openai_server(ok) as server:
        data, result = make_client(server.base_url).complete_json(messages)
    assert data == {"steps": []}
    assert messages == original  # the caller's list is not modified
    (body,) = server.requests
    assert body["response_format"] == {"type": "json_object"}
    assert body["model"] == "planner-mini"
    sent = body["messages"]
    assert sent[0] == original[0] and sent[2] == original[2]
    assert sent[1]["content"].startswith("Split: ducks and geese")
    assert sent[1]["content"].endswith(JSON_INSTRUCTION)
    assert any("json" in m["content"].lower() for m in sent)
    assert result.text == '{"steps": []}'


def test_json_mode_leaves_a_prompt_that_mentions_json_unchanged():
    messages = [
        {"role": "system", "content": "Reply with a Json object."},
        {"role": "user", "content": "Split: ducks and geese"},
    ]
    with openai_server(ok) as server:
        make_client(server.base_url).complete(messages, json_mode=True)
    (body,) = server.requests
    assert body["messages"] == messages
    assert body["response_format"] == {"type": "json_object"}


def test_plain_mode_sends_no_response_format_and_keeps_the_prompt():
    with openai_server(ok) as server:
        result = make_client(server.base_url).complete("Say hi", max_tokens=5)
    (body,) = server.requests
    assert "response_format" not in body
    assert body["messages"] == [{"role": "user", "content": "Say hi"}]
    assert body["max_tokens"] == 5 and body["temperature"] == 0
    assert result.key_index == 0 and result.model == "test-model"


def test_ensure_json_word_handles_parts_and_prompts_without_user_messages():
    parts = [{"role": "user", "content": [{"type": "text", "text": "Describe"}]}]
    (message,) = ensure_json_word(parts)
    assert message["content"][-1] == {"type": "text", "text": JSON_INSTRUCTION}
    assert parts[0]["content"] == [{"type": "text", "text": "Describe"}]
    only_assistant = [{"role": "assistant", "content": "previous"}]
    assert ensure_json_word(only_assistant)[-1] == {"role": "user", "content": JSON_INSTRUCTION}
    assert ensure_json_word("list the JSON keys") == [
        {"role": "user", "content": "list the JSON keys"}
    ]


def test_invalid_json_raises_with_the_spent_usage():
    with openai_server(lambda body: (200, completion("not json at all"))) as server:
        client = make_client(server.base_url)
        with pytest.raises(LLMError) as caught:
            client.complete_json("Plan it")
    assert caught.value.kind == "invalid_json"
    assert caught.value.result is not None and caught.value.result.usage.total_tokens == 2


def test_fenced_json_is_accepted():
    reply = completion('```json\n{"a": 1}\n```')
    with openai_server(lambda body: (200, reply)) as server:
        data, _ = make_client(server.base_url).complete_json("Plan it in JSON")
    assert data == {"a": 1}


# -- streaming -------------------------------------------------------------------------


def test_streaming_concatenates_only_non_null_content():
    pieces = ["Mallards ", None, "dabble", "", " in shallow water."]
    with openai_server(lambda body: stream_completion(pieces)) as server:
        result = make_client(server.base_url).complete("Ducks?", stream=True)
    assert server.requests[0]["stream"] is True
    assert result.text == "Mallards dabble in shallow water."
    assert result.finish_reason == "stop"
    # a stream without a usage chunk: counted locally
    assert result.usage == Usage(
        count_tokens("Ducks?"),
        count_tokens(result.text),
        count_tokens("Ducks?") + count_tokens(result.text),
        estimated=True,
    )


def test_streaming_json_mode():
    with openai_server(lambda body: stream_completion(['{"steps"', ": [1]}"])) as server:
        data, _ = make_client(server.base_url).complete_json("Plan", stream=True)
    assert data == {"steps": [1]}
    assert server.requests[0]["messages"][0]["content"].endswith(JSON_INSTRUCTION)


# -- usage -----------------------------------------------------------------------------


def test_usage_comes_from_the_server_when_reported():
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    with openai_server(lambda body: (200, completion("fine", usage=usage))) as server:
        result = make_client(server.base_url).complete("How are you?")
    assert result.usage == Usage(11, 7, 18, estimated=False)


def test_usage_is_counted_when_the_server_omits_it():
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "How are the ducks?"},
    ]
    with openai_server(lambda body: (200, completion("They dabble.", usage=None))) as server:
        result = make_client(server.base_url).complete(messages)
    prompt = count_tokens("You are terse.") + count_tokens("How are the ducks?")
    assert count_message_tokens(messages) == prompt
    done = count_tokens("They dabble.")
    assert result.usage == Usage(prompt, done, prompt + done, estimated=True)
    assert prompt > 0 and done > 0


# -- key rotation and rate limits ------------------------------------------------------


def test_keys_rotate_within_their_rate_limit_and_the_third_call_waits():
    fake = FakeTime()
    with openai_server(ok) as server:
        client = make_client(server.base_url, (KEY_A, KEY_B), fake, requests_per_minute=1)
        first = client.complete("one")
        second = client.complete("two")
        assert fake.sleeps == []
        third = client.complete("three")
    assert [first.key_index, second.key_index, third.key_index] == [0, 1, 0]
    assert server.api_keys == [KEY_A, KEY_B, KEY_A]
    assert fake.sleeps == [pytest.approx(60.0)]


def test_a_window_frees_gradually():
    fake = FakeTime()
    with openai_server(ok) as server:
        client = make_client(server.base_url, (KEY_A,), fake, requests_per_minute=2)
        client.complete("one")
        fake.now += 10
        client.complete("two")
        client.complete("three")  # waits for the first request to leave the window
        client.complete("four")  # waits for the second
    assert fake.sleeps == [pytest.approx(50.0), pytest.approx(10.0)]


def test_a_429_is_retried_at_once_with_the_next_key():
    fake = FakeTime()

    def script(request: Request) -> ReplyResult:
        if request.api_key == KEY_A:
            return error(429, "slow down", {"Retry-After": "30"})
        return 200, completion('{"ok": true}')

    with openai_server(on_request=script) as server:
        client = make_client(server.base_url, (KEY_A, KEY_B), fake)
        data, result = client.complete_json("Plan in json")
        assert data == {"ok": True} and result.key_index == 1
        assert fake.sleeps == []  # no waiting: key B was free
        assert server.api_keys == [KEY_A, KEY_B]
        client.complete("again")  # key A is cooling down: B again, still without waiting
        assert server.api_keys[-1] == KEY_B and fake.sleeps == []
        fake.now += 30
        client.complete("later")  # A has cooled down, is tried (429 again), then B at once
        assert server.api_keys[-2:] == [KEY_A, KEY_B] and fake.sleeps == []


@pytest.mark.parametrize(
    ("headers", "wait"),
    [({"Retry-After": "5"}, 5.0), ({"retry-after-ms": "2500"}, 2.5), ({}, 12.0)],
)
def test_when_every_key_is_rate_limited_the_client_waits_for_the_cooldown(headers, wait):
    fake = FakeTime()
    seen: list[str] = []

    def script(request: Request) -> ReplyResult:
        seen.append(request.api_key)
        if len(seen) <= 2:
            return error(429, "rate limited", headers)
        return 200, completion("done")

    with openai_server(on_request=script) as server:
        client = make_client(server.base_url, (KEY_A, KEY_B), fake, default_cooldown_seconds=12.0)
        result = client.complete("hello")
    assert result.text == "done"
    assert server.api_keys == [KEY_A, KEY_B, KEY_A]
    assert fake.sleeps == [pytest.approx(wait)]


def test_a_key_that_keeps_being_rate_limited_gives_up_after_the_attempts():
    fake = FakeTime()
    with openai_server(lambda body: error(429, "no", {"Retry-After": "1"})) as server:
        client = make_client(server.base_url, (KEY_A, KEY_B), fake)
        with pytest.raises(LLMError) as caught:
            client.complete("hello")
    assert caught.value.kind == "rate_limited" and caught.value.status_code == 429
    assert len(server.requests) == 5  # 2 * keys + 1


def test_a_wait_longer_than_the_limit_raises_instead_of_blocking():
    fake = FakeTime()
    with openai_server(lambda body: error(429, "no", {"Retry-After": "3600"})) as server:
        client = make_client(server.base_url, (KEY_A,), fake, max_wait_seconds=120.0)
        with pytest.raises(LLMError) as caught:
            client.complete("hello")
    assert caught.value.kind == "rate_limited"
    assert fake.sleeps == [] and len(server.requests) == 1


# -- errors never leak the endpoint or a key -------------------------------------------


def assert_no_secrets(exc: LLMError, base_url: str) -> None:
    port = base_url.split(":")[2].split("/")[0]
    rendered = [str(exc), repr(exc), "".join(traceback.format_exception(exc))]
    for text in rendered:
        for secret in (base_url, "127.0.0.1", port, KEY_A, KEY_B, "sk-test"):
            assert secret not in text


def test_a_server_error_raises_a_typed_error_without_url_or_key():
    with openai_server(lambda body: error(500, f"boom at {KEY_A}")) as server:
        client = make_client(server.base_url, (KEY_A, KEY_B))
        with pytest.raises(LLMError) as caught:
            client.complete("hello")
    assert caught.value.kind == "status" and caught.value.status_code == 500
    assert "500" in str(caught.value)
    assert len(server.requests) == 1  # not retried with another key
    assert_no_secrets(caught.value, server.base_url)


def test_an_auth_error_is_typed():
    reply = error(401, f"Incorrect API key provided: {KEY_A}")
    with openai_server(lambda body: reply) as server, pytest.raises(LLMError) as caught:
        make_client(server.base_url).complete("hello")
    assert caught.value.kind == "auth"
    assert_no_secrets(caught.value, server.base_url)


def test_an_unreachable_endpoint_raises_without_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(LLMError) as caught:
        make_client(base_url).complete("hello")
    assert caught.value.kind == "connection"
    assert_no_secrets(caught.value, base_url)


def test_a_slow_provider_times_out():
    def slow(body: dict[str, object]) -> tuple[int, str]:
        time.sleep(1.0)
        return 200, completion("late")

    with openai_server(slow) as server:
        with pytest.raises(LLMError) as caught:
            make_client(server.base_url, timeout=0.2).complete("hello")
        assert_no_secrets(caught.value, server.base_url)
    assert caught.value.kind == "timeout"


def test_config_validates_and_hides_keys():
    with pytest.raises(ValueError, match="API key"):
        LLMConfig(base_url="http://x/v1", model="m", api_keys=[])
    with pytest.raises(ValueError, match="requests_per_minute"):
        LLMConfig(base_url="http://x/v1", model="m", api_keys=["k"], requests_per_minute=0)
    config = LLMConfig(base_url="http://x/v1", model="m", api_keys=[KEY_A, KEY_B])
    assert config.api_keys == (KEY_A, KEY_B)
    assert KEY_A not in repr(config)
    assert KEY_A not in repr(LLMClient(config))
