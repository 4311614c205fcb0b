"""Recordings: reading other tools' cassettes and files, one reader per dialect, within bounds.

Stage 9. May import the stages below it."""
