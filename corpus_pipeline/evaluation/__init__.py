"""`corpus eval`: questions asked through the real query path, scored like the sets' own scorers.

A question file (`questions`) goes through the query service, in-process or over HTTP (`runner`),
each result is judged by the rule of its gold (`relevance`: answer strings, gold pages, or the
document), the figures are computed by ir-measures (`metrics`) next to a naive BM25 floor over
plain text asked the same questions in the same run (`baseline`, `plaintext`), and a run is
written as `results.json` plus a Markdown report with plots (`report`); two runs can be compared
(`compare`). The files' shapes are `corpus_pipeline.contracts.evaluation`.
"""
