"""One placement's evaluation as a pure function (`evaluate`): compile the spec, filter and score candidates
with the plugins in `plugins/`, apply spread (`spread/`), pick the decision groups and pages, set conditions.
Builds on `matching` and `fleet`; knows nothing of what is remembered between records."""
