"""Which clusters a placement's selectors and CEL expressions select: label and claim selectors, and the CEL
environment with its type checks, cost limits and extension functions. Depends on nothing else in the engine."""
