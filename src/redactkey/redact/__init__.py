"""The redactor: applies the spans the scan finds to data, text, bytes and streams.

Stage 3. May import `secrets` and `scan`."""
