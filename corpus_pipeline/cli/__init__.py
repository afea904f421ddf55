"""The `corpus` command."""
