"""Structure: rows with their heading hierarchy become titled, typed segments and a section tree
(hierarchy, titles, chunking, doc_nav)."""
