"""The tantivy search channels: schema, analyzers and query shaping, shared by the publisher
(writes) and the query service (reads) so tokenisation is identical on both sides."""
