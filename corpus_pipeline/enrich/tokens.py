"""Token counting with a real BPE tokenizer that works offline (o200k_base, bundled)."""

from __future__ import annotations

from functools import cache
from typing import Any

ENCODING_NAME = "o200k_base"


@cache
def encoding() -> Any:
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING_NAME)


# The encoder refuses inputs past about a million characters or 200k tokens; a longer text
# (a huge table, a file of one line) is counted in pieces cut at white space.
_PIECE = 100_000


def count_tokens(text: str) -> int:
    if not text:
        return 0
    if len(text) <= _PIECE:
        return len(encoding().encode(text))
    total, start = 0, 0
    while start < len(text):
        end = min(start + _PIECE, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + _PIECE // 2, end)
            end = cut if cut > start else end
        total += len(encoding().encode(text[start:end]))
        start = end
    return total
