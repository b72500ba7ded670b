"""The inventory as the pipeline reads it: integer cluster ids (`ids`) and the derived views computed once
per inventory version and shared by every placement (`views`). Builds on `matching` only."""
