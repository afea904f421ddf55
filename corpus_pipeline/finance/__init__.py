"""Financial reports: statements, reporting periods, issuers and the measures analysts ask for.

Pure functions shared by the pipeline (which tags statements and reads a document's subject)
and the query service (which routes a question to its issuer and period and expands a measure
into the statement lines it is computed from).
"""
