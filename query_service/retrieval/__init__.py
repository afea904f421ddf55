"""Retrieval over a published revision: classic fused search, agentic plans under one budget,
and the query understanding both share. Evidence only, never synthesised answers."""
