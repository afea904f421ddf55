"""Measurements of what the pipeline keeps (no side effects: they read artifacts and sources)."""
