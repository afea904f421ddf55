"""Who may read and write which namespace: API keys resolved to principals, failing closed."""
