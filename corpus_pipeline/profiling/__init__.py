"""Profiling: sniff the format from the bytes and gather cheap structural evidence, once."""

from corpus_pipeline.profiling.profile import profile_file
from corpus_pipeline.profiling.sniff import sniff_format

__all__ = ["profile_file", "sniff_format"]
