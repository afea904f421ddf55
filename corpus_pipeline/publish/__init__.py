"""Publishing: per-document artifacts → one consistent revision per namespace (LanceDB + tantivy)."""
