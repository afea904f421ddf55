"""Orchestration: delivered files become registered documents and Dagster runs (the CLI's and the
upload API's way into the asset graph)."""
