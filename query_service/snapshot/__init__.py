"""The read side of a published revision: opening it, its records, document cards and entity
router, the answer cache and access statistics."""
