"""A fleet, live: three agent processes -> one Prometheus -> Alertmanager -> the on-call's webhook.

Three ``symfonic-otel demo`` processes with different tenant mixes each serve their own /metrics.
globex is noisy (silent bails) in two of them, hooli in the one that hosts it; acme, initech and
umbrella are ordinary everywhere. One Prometheus scrapes all three with the shipped rules (a
copy with every window and ``for:`` divided by ``FACTOR``) and sends its alerts to a real
Alertmanager running the shipped example route (its timers divided the same way), whose every
receiver posts to a webhook served by this test. After ``NOISY_FOR_S`` the noisy tenants behave
like the others, so their pages must resolve.

The on-call must get exactly one silent-bail page per noisy tenant, whatever the number of
processes serving it (the rules aggregate by tenant, Alertmanager groups by tenant), with the
tenant and a runbook that resolves inside the project, then one resolved notification; and
nothing at all about the ordinary tenants.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.alertmanager_support import paging_alertmanager
from tests.support.fleet_support import (
    DASHBOARDS,
    REPO,
    RULES,
    DemoProcess,
    demo_fleet,
    shortened_rules,
    silent_bail_pages,
)
from tests.support.prometheus_support import PrometheusServer, require_binary

FACTOR = 30  # 10m windows -> 20 s, `for: 10m` -> 20 s, group_interval 5m -> 10 s
DEMO_RATE = 15  # runs per second per process: 5 per tenant and process
NOISY_FOR_S = 60
DURATION_S = 240  # longer than the test: the processes are stopped when it ends
FLEET = (  # (tenants, noisy) per process
    ("acme,globex,initech", "globex=silent_bail"),
    ("acme,globex,umbrella", "globex=silent_bail"),
    ("initech,umbrella,hooli", "hooli=silent_bail"),
)
NOISY = frozenset({"globex", "hooli"})
ORDINARY = frozenset({"acme", "initech", "umbrella"})

pytestmark = pytest.mark.timeout(300)


# --- what the shipped files say ------------------------------------------------------------------


def runbook_pages() -> set[str]:
    """The runbook links the rules can give: ``runbooks/<alert>/``, one docs page per alert."""
    return {f"runbooks/{page.stem}/" for page in (REPO / "docs" / "runbooks").glob("*.md")}


# --- what the webhook received -------------------------------------------------------------------


def _tenant(alert: dict[str, Any]) -> str:
    return str(alert.get("labels", {}).get("tenant_id", ""))


def page_announcements(
    notifications: list[dict[str, Any]], pages: set[str]
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(tenant, receiver) -> the notifications in which a silent-bail page newly fires: firing
    in this notification, not in the previous one of its group."""
    firing_before: dict[str, set[str]] = defaultdict(set)
    announced: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for note in notifications:
        firing = {
            alert["fingerprint"]
            for alert in note["alerts"]
            if alert["status"] == "firing" and alert["labels"].get("alertname") in pages
        }
        if firing - firing_before[note["groupKey"]]:
            tenants = {_tenant(a) for a in note["alerts"] if a["fingerprint"] in firing}
            for tenant in tenants:
                announced[(tenant, note["receiver"])].append(note)
        firing_before[note["groupKey"]] = firing
    return announced


def page_states(
    notifications: list[dict[str, Any]], pages: set[str], tenant: str
) -> dict[str, list[str]]:
    """Each of the tenant's silent-bail pages (by alert name) -> its statuses, notification
    after notification."""
    states: dict[str, list[str]] = defaultdict(list)
    for note in notifications:
        for alert in note["alerts"]:
            if alert["labels"].get("alertname") in pages and _tenant(alert) == tenant:
                states[alert["labels"]["alertname"]].append(alert["status"])
    return dict(states)


def all_resolved(states: dict[str, list[str]]) -> bool:
    return bool(states) and all(sequence[-1] == "resolved" for sequence in states.values())


# --- the fleet ------------------------------------------------------------------------------------


def fleet(workdir: Path) -> contextlib.AbstractContextManager[list[DemoProcess]]:
    return demo_fleet(
        workdir, FLEET, duration_s=DURATION_S, rate=DEMO_RATE, noisy_for_s=NOISY_FOR_S, seed=100
    )


def test_one_page_per_noisy_tenant_across_the_fleet_none_for_the_others_and_it_resolves(
    tmp_path: Path,
) -> None:
    require_binary("prometheus")
    require_binary("prometheus-alertmanager", package="prometheus-alertmanager")
    shipped_rules = yaml.safe_load(RULES.read_text())
    pages = set(silent_bail_pages(shipped_rules))
    assert pages, "no alert pages on the silent-bail rate"
    rules = tmp_path / "symfonic-rules.fleet.yml"
    rules.write_text(shortened_rules(RULES.read_text(), factor=FACTOR))
    runbooks = runbook_pages()

    with (
        paging_alertmanager(tmp_path / "alertmanager", factor=FACTOR) as (hook, alertmanager),
        fleet(tmp_path) as processes,
        PrometheusServer(
            tmp_path / "prometheus",
            scrape_targets=[process.target for process in processes],
            rule_files=[rules],
            alertmanagers=[alertmanager.target],
        ) as prom,
    ):
        started = time.monotonic()
        assert prom.wait_for(lambda: len(prom.query("up == 1")) == 3, timeout_s=30), prom.log_tail()

        def announced() -> dict[tuple[str, str], list[dict[str, Any]]]:
            return page_announcements(hook.notifications(), pages)

        def every_noisy_tenant_paged() -> bool:
            return {tenant for tenant, _ in announced()} >= NOISY

        assert prom.wait_for(every_noisy_tenant_paged, timeout_s=90, interval_s=1.0), (
            f"pages: {sorted(announced())}; Prometheus alerts: {prom.alerts()};"
            f" Alertmanager log: {alertmanager.log_tail()}"
        )
        paged_at = time.monotonic() - started

        def every_page_resolved() -> bool:
            notes = hook.notifications()
            return all(all_resolved(page_states(notes, pages, tenant)) for tenant in NOISY)

        assert prom.wait_for(every_page_resolved, timeout_s=120, interval_s=1.0), (
            f"not resolved: {[(t, page_states(hook.notifications(), pages, t)) for t in NOISY]}"
        )
        resolved_at = time.monotonic() - started
        assert all(process.running() for process in processes), [
            process.stderr()[-1000:] for process in processes
        ]

    notes = hook.notifications()
    print(f"paged after {paged_at:.0f} s, resolved after {resolved_at:.0f} s, {len(notes)} notes")
    # Exactly one page per noisy tenant (and receiver): not one per process serving it, and no
    # second page while it lasted.
    announcements = page_announcements(notes, pages)
    for tenant in NOISY:
        receivers = [receiver for t, receiver in announcements if t == tenant]
        assert receivers, f"no page for {tenant}"
        for receiver in receivers:
            assert len(announcements[(tenant, receiver)]) == 1, (tenant, receiver, notes)
        # One alert per tenant, aggregated across processes: no instance or job label on it.
        alerts = [
            alert
            for note in notes
            for alert in note["alerts"]
            if alert["labels"].get("alertname") in pages and _tenant(alert) == tenant
        ]
        fingerprints = {(a["labels"]["alertname"], a["fingerprint"]) for a in alerts}
        assert len(fingerprints) == len({name for name, _ in fingerprints}), fingerprints
        assert not {"instance", "job"} & {key for a in alerts for key in a["labels"]}, alerts
        # The tenant and its runbook are on the notification.
        for receiver in receivers:
            page = announcements[(tenant, receiver)][0]
            assert page["groupLabels"].get("tenant_id") == tenant, page["groupLabels"]
            runbook = next(
                alert["annotations"].get("runbook_url", "")
                for alert in page["alerts"]
                if alert["labels"].get("alertname") in pages
            )
            assert runbook in runbooks, f"runbook {runbook!r} not in the project"
        # Fired, then resolved once the tenant stopped bailing, and never fired again.
        for states in page_states(notes, pages, tenant).values():
            assert states[0] == "firing" and states[-1] == "resolved", states
            assert "firing" not in states[states.index("resolved") :], states
    assert resolved_at > NOISY_FOR_S, "a page resolved before its tenant stopped bailing"
    # Nothing at all about the ordinary tenants.
    about_ordinary = [
        (alert["labels"].get("alertname"), _tenant(alert))
        for note in notes
        for alert in note["alerts"]
        if _tenant(alert) in ORDINARY
    ]
    assert not about_ordinary, about_ordinary


def test_the_docs_show_the_fleet_this_test_runs() -> None:
    readme = (DASHBOARDS.parent / "docs" / "operators" / "fleets.md").read_text()
    shown = [
        (tenants, noisy)
        for tenants, noisy in re.findall(
            r"symfonic-otel demo --duration \d+ --rate \d+ --prometheus-port \d+ \\\n"
            r"\s+--tenants (\S+) --noisy (\S+) --noisy-for \d+",
            readme,
        )
    ]
    assert shown == list(FLEET)
