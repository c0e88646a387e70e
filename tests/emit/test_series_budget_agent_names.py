"""The series budget grows with agent names only for the per-tenant counters that carry the
agent's name; the others (tokens, cost, fabrication, synthesis) hold the same sets whatever the
number of agents."""

from __future__ import annotations

from symfonic_otel.emit.budget import AGENT_LABELLED, PER_TENANT, per_tenant_sets


def test_counters_without_an_agent_label_do_not_scale_with_agent_names() -> None:
    unlabelled = PER_TENANT.keys() - AGENT_LABELLED
    assert unlabelled
    for name in unlabelled:
        assert per_tenant_sets(name, agent_names=4) == per_tenant_sets(name, agent_names=1)
    for name in PER_TENANT.keys() & AGENT_LABELLED:
        assert per_tenant_sets(name, agent_names=4) > per_tenant_sets(name, agent_names=1)
