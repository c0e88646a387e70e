"""A ``pricing=`` that is not a mapping is refused with a message saying what is expected."""

from __future__ import annotations

import pytest

from symfonic_otel.emit.pricing import PriceTable


def test_non_mapping_pricing_is_refused_with_an_explaining_type_error() -> None:
    with pytest.raises(TypeError, match="pricing must be a mapping of model name to ModelPrice"):
        PriceTable([("gpt-4o", 1.0)])  # type: ignore[arg-type]
