"""Profiling: sniff the format from the bytes and gather cheap structural evidence, once."""

from corpus_pipeline.profiling.profile import Profiled, profile_source
from corpus_pipeline.profiling.sniff import sniff_format

__all__ = ["Profiled", "profile_source", "sniff_format"]
