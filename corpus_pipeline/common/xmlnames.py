"""XML namespaces that qualify local names, so the parsers of XML-based formats (OOXML,
OpenDocument, EPUB) write `text("p")` instead of spelling out `{uri}p` by hand."""

from __future__ import annotations


class Namespace(str):
    """A namespace URI that, called with a local name, gives the `{uri}local` (Clark) name lxml
    matches tags and attributes on. It is the URI itself too, so it still compares equal to the
    namespace an element's tag carries."""

    __slots__ = ()

    def __call__(self, local: str) -> str:
        return f"{{{self}}}{local}"

    def owns(self, tag: object) -> bool:
        """Whether an element's tag lies in this namespace (comments and processing
        instructions, whose tag is not a string, lie in none)."""
        return isinstance(tag, str) and tag.startswith(f"{{{self}}}")
