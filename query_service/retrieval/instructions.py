"""Answer-format instructions are not search terms.

Agents pass on questions as users wrote them, and users tell the answerer how to answer:
"… Directly answer 'yes' or 'no'.", "Please write down the answer in list format, e.g.,
["1","2"]", "(Give the algorithm name)". Those words ("answer", "format", "list", "integer",
"string") are about the reply, not the document; matched as terms they pull in any page that
happens to say "format" or "list" (a paper's method section does). This module removes such
sentences before a query is searched. It is deliberately narrow: a sentence goes only if it is
not the query's first, opens with an instruction verb and names an answer form; what remains is
never empty.
"""

from __future__ import annotations

import re

# A sentence ends at . ? ! followed by space (a decimal point or "e.g." inside a sentence does
# not end it); a parenthesised aside that stands alone is a sentence of its own.
_SENTENCE = re.compile(r"\([^()]*\)|[^.?!()]+(?:[.?!](?!\s|$)[^.?!()]*)*[.?!]*", re.S)
_INSTRUCTION_OPENER = re.compile(
    r"^\W*(?:(?:please|kindly|just|directly|only)\s+)*"
    r"(?:answer|give|write|writhe|return|list|format|represent|save|express|round|respond|"
    r"reply|provide|output|state|present|put)\b",
    re.I,
)
_ANSWER_SUBJECT = re.compile(r"^\W*(?:the|your)\s+(?:final\s+)?answer\b", re.I)
_ANSWER_FORM = re.compile(
    r"\b(?:answer|format|formatted|integer|int|float|string|list|decimals?|yes|no|"
    r"e\.g\.|example|yyyy|rounded|nearest|order|number|numbers|name)\b",
    re.I,
)
# "For example: 1883 Dec.7, 2 8 p.m." after an instruction illustrates the instruction.
_EXAMPLE = re.compile(r"^\W*(?:for example|for instance|e\.g\.|such as)\b", re.I)


def is_answer_instruction(sentence: str) -> bool:
    """An imperative about the reply's form ("Write the answer in int format", "Directly
    answer 'yes' or 'no'", "The answer needs to be accurate to the minute")."""
    text = sentence.strip()
    if _ANSWER_SUBJECT.match(text):
        return True
    return bool(_INSTRUCTION_OPENER.match(text) and _ANSWER_FORM.search(text))


def sentences(query: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(query) if s.strip(" .?!")]


def search_text(query: str) -> str:
    """The query without its answer-format instructions (the first sentence always stays)."""
    parts = sentences(query)
    if len(parts) < 2:
        return query
    kept = [parts[0]]
    dropped = False
    for part in parts[1:]:
        dropped = is_answer_instruction(part) or (dropped and bool(_EXAMPLE.match(part)))
        if not dropped:
            kept.append(part)
    if len(kept) == len(parts):
        return query
    return " ".join(kept)
