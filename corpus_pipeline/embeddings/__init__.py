"""Dense vectors for chunks and queries: the local default model and an OpenAI-compatible
provider behind one interface."""
