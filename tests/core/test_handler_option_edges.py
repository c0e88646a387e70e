"""Handler options at their edges: an agent name that cleans to nothing is refused, and a
misspelt keyword's message names the option it is close to (and none when nothing is close)."""

from __future__ import annotations

import pytest

from symfonic_otel.options import check_handler_options, unexpected_option

GOOD = {
    "agent_name": "agent",
    "tenant_id": None,
    "max_tenants": 10,
    "run_ttl_s": 60.0,
    "max_open_runs": 10,
    "tenant_from_baggage": False,
}


@pytest.mark.parametrize("name", ["   ", "\x00", "\n\t"])
def test_an_agent_name_that_cleans_to_nothing_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="agent_name must be a non-empty str"):
        check_handler_options(**{**GOOD, "agent_name": name})
    check_handler_options(**GOOD)


def test_a_misspelt_option_names_the_closest_one() -> None:
    options = ["tenant_id", "agent_name", "max_tenants"]
    assert unexpected_option("Handler", "tenant", options) == (
        "Handler() got an unexpected keyword argument 'tenant'; did you mean 'tenant_id'?"
    )
    assert unexpected_option("Handler", "agentname", options).endswith("did you mean 'agent_name'?")
    assert unexpected_option("Handler", "colour", options) == (
        "Handler() got an unexpected keyword argument 'colour'"
    )
