"""Keys: RFC 8785 canonical JSON, key specs and the SHA-256 of a call's key material.

Stage 4. May import `secrets`, `scan` and `redact`."""
