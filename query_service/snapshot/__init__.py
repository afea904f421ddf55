"""The read side of a published revision: opening it, its records, document cards and entity
router, index payloads and section trees, the answer cache and access statistics."""
