"""Pure placement logic: deterministic functions of (state, event, now). No I/O, no clocks, no asyncio."""

from engine.native import install

install()  # the compiled build of the hot modules, when one matches the sources (engine/native.py)
