"""Dagster definitions, one module per stage or integration (pure logic lives outside)."""
