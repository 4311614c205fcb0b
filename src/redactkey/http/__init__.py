"""The HTTP document model: requests, responses and streams as JSON documents.

Stage 6. Imports no HTTP client library; may import the stages below it."""
