"""Run secrets: every credential a run's components read, and the forms it travels in.

Stage 1 of the pipeline. Imports nothing of redactkey but `_errors`."""
