"""Record and replay: modes, the model and tool layers, the HTTP exchange, the run report.

Stage 7. May import the stages below it."""
