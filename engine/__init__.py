"""Pure placement logic: deterministic functions of (state, event, now). No I/O, no clocks, no asyncio."""
