"""Read-only explanations of one placement's evaluation (per filter, prioritizer and CEL expression) for the
explain command. Builds on every other sub-package and is imported by none of them."""
