"""The scan: rules as data and one pass over a text that finds candidate spans.

Stage 2. May import `secrets`."""
