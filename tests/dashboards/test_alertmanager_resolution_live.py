"""The page's resolution reaches the on-call as a resolution, in a real Alertmanager.

The shipped example route (``dashboards/alertmanager/alertmanager.yml``, its timers divided,
every receiver a webhook of this test) receives the alerts Prometheus would send for one tenant:
the silent-bail page, and the slow-burn ticket the shipped inhibition holds back while the page
fires. The page then resolves, and the ticket, no longer inhibited, starts. The on-call's last
notification for the tenant must say ``resolved`` (the ticket goes to the ticket receiver, in a
group of its own), not ``firing`` because the ticket joined the page's group. The same scenario
against the route without the severity split shows the failure the split prevents.
"""

from __future__ import annotations

import copy
import json
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.alertmanager_support import AlertmanagerServer, WebhookReceiver, config_for_test
from tests.support.prometheus_support import require_binary

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "dashboards" / "alertmanager" / "alertmanager.yml"
TENANT = "newcomer-co"
PAGE = "SymfonicSilentBailBudgetBurn"
TICKET = "SymfonicSilentBailBudgetSlowBurn"
FACTOR = 60  # group_wait 30s -> 2s (floor), group_interval 5m -> 5s

pytestmark = pytest.mark.timeout(120)


def _alert(name: str, severity: str, *, ends_in_s: float) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "labels": {"alertname": name, "tenant_id": TENANT, "severity": severity},
        "annotations": {"summary": f"{name} for {TENANT}"},
        "startsAt": (now - timedelta(minutes=5)).isoformat(),
        "endsAt": (now + timedelta(seconds=ends_in_s)).isoformat(),
        "generatorURL": "http://prometheus.example.invalid/graph",
    }


def _post(alertmanager: AlertmanagerServer, alerts: list[dict[str, Any]]) -> None:
    request = urllib.request.Request(
        f"{alertmanager.url}/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _page_notes(hook: WebhookReceiver) -> list[dict[str, Any]]:
    """The notifications of groups that hold the page (whatever receiver they went to)."""
    return [
        note
        for note in hook.notifications()
        if any(alert["labels"]["alertname"] == PAGE for alert in note["alerts"])
    ]


def _wait(condition: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return bool(condition())


def _run_incident(tmp_path: Path, config: dict[str, Any]) -> WebhookReceiver:
    """Page fires (ticket inhibited), page resolves, ticket starts; returns the hook."""
    with WebhookReceiver() as hook:
        test_config = config_for_test(config, hook.url, factor=FACTOR)
        with AlertmanagerServer(tmp_path, test_config) as alertmanager:
            page = _alert(PAGE, "critical", ends_in_s=600)
            _post(alertmanager, [page])
            assert _wait(lambda: _page_notes(hook), 20), alertmanager.log_tail()
            assert _page_notes(hook)[0]["status"] == "firing"
            # The slow burn starts while the page fires: the shipped inhibition holds it back.
            _post(alertmanager, [_alert(TICKET, "warning", ends_in_s=600)])

            def ticket_inhibited() -> bool:
                return any(
                    a["labels"]["alertname"] == TICKET and a["status"]["inhibitedBy"]
                    for a in alertmanager.alerts()
                )

            assert _wait(ticket_inhibited, 20), alertmanager.alerts()
            time.sleep(6)  # one group interval: the ticket stays out of every notification
            for note in hook.notifications():
                assert [a["labels"]["alertname"] for a in note["alerts"]] == [PAGE], note
            # Prometheus resolves the page: the same alert, ending now; the ticket stays.
            resolved = dict(page, endsAt=datetime.now(UTC).isoformat())
            _post(alertmanager, [resolved, _alert(TICKET, "warning", ends_in_s=600)])

            def settled() -> bool:
                notes = _page_notes(hook)
                return len(notes) > 1 and any(
                    a["labels"]["alertname"] == PAGE and a["status"] == "resolved"
                    for a in notes[-1]["alerts"]
                )

            assert _wait(settled, 30), (hook.notifications(), alertmanager.log_tail())
            time.sleep(6)  # one more group interval: nothing turns the page's group back
        return hook


def test_the_pages_resolution_is_a_resolved_notification(tmp_path: Path) -> None:
    require_binary("prometheus-alertmanager", package="prometheus-alertmanager")
    hook = _run_incident(tmp_path / "shipped", yaml.safe_load(SHIPPED.read_text()))
    notes = hook.notifications()
    pages = _page_notes(hook)
    assert pages[-1]["status"] == "resolved", pages
    assert pages[-1]["groupLabels"] == {"tenant_id": TENANT}
    assert {note["receiver"] for note in pages} == {"symfonic-oncall"}
    # The ticket reached the ticket receiver, alone in its group, after the page cleared.
    tickets = [n for n in notes if any(a["labels"]["alertname"] == TICKET for a in n["alerts"])]
    assert tickets and {note["receiver"] for note in tickets} == {"symfonic-tickets"}
    assert all(a["labels"]["alertname"] == TICKET for note in tickets for a in note["alerts"]), (
        tickets
    )
    assert tickets[0]["status"] == "firing"


def test_without_the_severity_split_the_resolution_reads_firing(tmp_path: Path) -> None:
    """The failure the split prevents: one group per tenant, the ticket joins the page's group."""
    require_binary("prometheus-alertmanager", package="prometheus-alertmanager")
    config = copy.deepcopy(yaml.safe_load(SHIPPED.read_text()))
    route = config["route"]
    route["routes"] = [r for r in route["routes"] if r.get("receiver") != "symfonic-tickets"]
    config["receivers"] = [r for r in config["receivers"] if r["name"] != "symfonic-tickets"]
    hook = _run_incident(tmp_path / "unsplit", config)
    last = _page_notes(hook)[-1]
    assert last["status"] == "firing"  # although the page itself resolved
    states = {a["labels"]["alertname"]: a["status"] for a in last["alerts"]}
    assert states == {PAGE: "resolved", TICKET: "firing"}
