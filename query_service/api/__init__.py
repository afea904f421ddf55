"""The query service's HTTP and MCP surfaces and its command line."""
