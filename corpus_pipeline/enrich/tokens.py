"""Token counting with a real BPE tokenizer that works offline (o200k_base, bundled)."""

from __future__ import annotations

from functools import cache
from typing import Any

ENCODING_NAME = "o200k_base"


@cache
def encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING_NAME)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    return len(encoding().encode(text))
