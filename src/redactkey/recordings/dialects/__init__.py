"""One reader per recording dialect (see `recordings._readers` for the entry point)."""
