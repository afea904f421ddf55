"""Imported by the parse workers' forkserver (`corpus_pipeline.pipeline.isolation`): the tokenizer is loaded
there once (bpe_openai's import and encoding ~1.5 s) and every worker forked from it inherits it.
A worker that loaded it itself paid that for every document with a table."""

from corpus_pipeline.enrich.tokens import encoding

encoding()
