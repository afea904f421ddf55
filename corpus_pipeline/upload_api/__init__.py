"""The upload API: documents in over HTTP, processed asynchronously by leased jobs."""
