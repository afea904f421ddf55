"""Offline-by-default enrichment: token counts, extractive summaries, statistical keywords,
and the optional LLM roles that replace them when configured."""
