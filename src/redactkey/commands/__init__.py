"""The `redact` command line: check, audit, scrub, migrate, prune and their reports.

Stage 10. May import every stage below it; only the pytest plugin sits above."""
