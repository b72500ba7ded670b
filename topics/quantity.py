"""Kubernetes resource quantities (`500m`, `4Gi`) as doubles.

Part of the contract: ManagedCluster `allocatable` and `capacity` carry them as text, and both the engine's
resource prioritizers and the advisors read them with this one parser.
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_quantity"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


def parse_quantity(raw: str | int | float) -> float | None:
    """`500m` -> 0.5, `4Gi` -> 4294967296.0; None when the text is not a quantity or too large for a double
    (`1e400`: an infinite allocatable would make the resource score's ratio NaN)."""
    value = _parse(raw)
    return value if value is not None and math.isfinite(value) else None


def _parse(raw: str | int | float) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw)
    match = _QUANTITY.match(raw.strip())
    if match is None:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    if suffix in _BINARY:
        return float(number) * _BINARY[suffix]
    if suffix in _DECIMAL_EXP:
        # Decimal suffixes are powers of ten: parse through the exponent form so `100m` is exactly 0.1.
        return float(f"{number}e{_DECIMAL_EXP[suffix]}")
    return float(f"{number}{suffix}")
