"""Durable storage of delivered files (content-addressed objects and the document registry) and
the garbage collection of what no record references."""
