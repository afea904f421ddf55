"""Parsers: one typed entry point (`parse_document`) routes each file to its format strategy."""
