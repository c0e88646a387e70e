"""The demo's levers: named tenants, noisy tenants by kind, and a noisy period that ends.

Each scenario's outcome is checked through the real reference loop and handler; the mixes are
then checked from the shipped weights: ordinary tenants sit clearly below every alert threshold,
each noisy kind raises exactly its own failure.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from symfonic_otel import tenant_scope
from symfonic_otel.agent import ReactAgent
from symfonic_otel.cli import EXIT_USAGE, build_parser, main
from symfonic_otel.demo import DemoOptions
from symfonic_otel.demo.levers import (
    LOST_RUN_EVERY,
    RETRIED_END_EVERY,
    Faults,
    NoisyClock,
    noisy_tenants,
    tenant_names,
)
from symfonic_otel.demo.scenarios import NOISY_KINDS, SCENARIOS, TOOLS, Behaviour, DemoProviderError
from symfonic_otel.demo.traffic import AGENT_NAME, plan_runs
from symfonic_otel.testing.scripted import ScriptedChatModel
from symfonic_otel.testing.telemetry import InMemoryTelemetry

# What each scenario does to a run: the classes the alerts count.
BAIL, EMPTY, ERROR, TRUNCATED, CANCELLED = "bail", "empty", "error", "truncated", "cancelled"
EXPECTED: dict[str, set[str]] = {
    "answer": set(),
    "tool_round_trip": set(),
    "qwen_salvage": set(),
    "loop_cut_synthesis_recovered": {BAIL},
    "loop_cut_unrecovered": {BAIL, EMPTY},
    "iteration_cap": {BAIL, EMPTY},
    "empty_recovered": {BAIL},
    "empty_unrecovered": {BAIL, EMPTY},
    "fabrication_observe": set(),
    "fabrication_revise": set(),
    "fabrication_refuse": set(),
    "provider_error": {ERROR},
    "truncated": {TRUNCATED},
    "cancelled": {CANCELLED},
}
# Ordinary tenants: well under SymfonicSilentBailRateHigh's 10 %, the 5 % error and empty-answer
# thresholds, and any burn-rate alert of a silent-bail SLO of a few percent.
ORDINARY_CEILING = {BAIL: 0.005, EMPTY: 0.01, ERROR: 0.01, TRUNCATED: 0.01}
NOISY_FLOOR = 0.2  # a noisy kind's own failure, in its tenant's runs


def share(behaviour: Behaviour, kind: str) -> float:
    weights = {scenario.name: scenario.weights[behaviour] for scenario in SCENARIOS}
    return sum(w for name, w in weights.items() if kind in EXPECTED[name]) / sum(weights.values())


# --- each scenario, through the real loop and handler --------------------------------------------


async def _play(scenario_name: str, telemetry: InMemoryTelemetry) -> tuple[Any, str | None]:
    """One run of the scenario: (AgentResponse or the exception, the outcome recorded)."""
    scenario = next(s for s in SCENARIOS if s.name == scenario_name)
    plan = scenario.build(random.Random(3), "acme")
    latency = plan.latency_s if plan.cancel_after_s is not None else 0.0
    model = ScriptedChatModel(plan.script, model_name=plan.model_name, latency_s=latency)
    handler = telemetry.handler(agent_name=AGENT_NAME)
    agent = ReactAgent(model, TOOLS, config=plan.config, callbacks=[handler], name=AGENT_NAME)
    with tenant_scope("acme"):
        task = asyncio.create_task(agent.run(plan.query, run_id=f"run-{scenario_name}"))
    if plan.cancel_after_s is not None:
        await asyncio.sleep(plan.cancel_after_s)
        task.cancel()
    result: Any
    try:
        result = await task
    except (DemoProviderError, asyncio.CancelledError) as exc:
        result = exc
    outcomes = {a.get("symfonic.run.outcome") for a, _ in telemetry.points("symfonic.agent.runs")}
    return result, outcomes.pop() if len(outcomes) == 1 else None


@pytest.mark.parametrize("scenario_name", sorted(EXPECTED))
async def test_each_scenario_ends_its_run_the_way_the_mix_counts_it(
    scenario_name: str, telemetry: InMemoryTelemetry
) -> None:
    assert {s.name for s in SCENARIOS} == set(EXPECTED)
    expected = EXPECTED[scenario_name]
    result, outcome = await _play(scenario_name, telemetry)
    bails = telemetry.value("symfonic.react.silent_bails")
    assert bails == (1 if BAIL in expected else 0)
    if ERROR in expected:
        assert isinstance(result, DemoProviderError) and outcome == "error"
    elif CANCELLED in expected:
        assert isinstance(result, asyncio.CancelledError) and outcome == "cancelled"
    else:
        assert outcome == "completed"
        assert (result.final_response == "") == (EMPTY in expected)
        # Truncation: the run ends at the token limit with its (cut) text as the answer.
        assert (result.stop_reason == "max_tokens") == (TRUNCATED in expected)
        assert (result.termination_reason is not None) == (BAIL in expected)
    assert telemetry.value("symfonic.telemetry.dropped_events") == 0


# --- the mixes -----------------------------------------------------------------------------------


def test_ordinary_tenants_sit_clearly_below_every_threshold() -> None:
    for kind, ceiling in ORDINARY_CEILING.items():
        assert share("ordinary", kind) < ceiling, (kind, share("ordinary", kind))


@pytest.mark.parametrize(
    ("behaviour", "own"), [("silent_bail", BAIL), ("errors", ERROR), ("truncation", TRUNCATED)]
)
def test_each_noisy_kind_raises_its_own_failure_and_no_other(
    behaviour: Behaviour, own: str
) -> None:
    assert share(behaviour, own) > NOISY_FLOOR
    for kind, ceiling in ORDINARY_CEILING.items():
        if kind != own and not (own == BAIL and kind == EMPTY):  # unrecovered bails are empty
            assert share(behaviour, kind) < ceiling, (behaviour, kind, share(behaviour, kind))


# --- plan_runs: who is noisy, and until when -----------------------------------------------------


def _take(runs: Iterator[Any], count: int) -> list[Any]:
    return [run for _, run in zip(range(count), runs, strict=False)]


def test_only_the_noisy_tenants_draw_from_their_kind() -> None:
    names = ["acme", "globex", "initech"]
    runs = _take(plan_runs(5, names, {"globex": "errors", "initech": "truncation"}), 600)
    assert {(r.tenant, r.behaviour) for r in runs} == {
        ("acme", "ordinary"),
        ("globex", "errors"),
        ("initech", "truncation"),
    }
    errors = sum(r.plan.scenario == "provider_error" for r in runs if r.tenant == "globex")
    assert errors > NOISY_FLOOR * sum(r.tenant == "globex" for r in runs)
    # Same seed, same runs.
    again = _take(plan_runs(5, names, {"globex": "errors", "initech": "truncation"}), 600)
    assert [(r.tenant, r.plan.scenario) for r in again] == [
        (r.tenant, r.plan.scenario) for r in runs
    ]


def test_default_noisy_tenant_is_globex_when_it_runs() -> None:
    assert noisy_tenants(None, tenant_names(5)) == {"globex": "silent_bail"}
    assert noisy_tenants(None, ["acme", "initech"]) == {}
    assert noisy_tenants((), tenant_names(5)) == {}
    assert {r.behaviour for r in _take(plan_runs(7, ["acme", "initech"]), 200)} == {"ordinary"}
    default = _take(plan_runs(7, tenant_names(5)), 200)
    assert {r.tenant for r in default if r.behaviour == "silent_bail"} == {"globex"}


def test_the_default_mix_has_no_telemetry_faults_and_the_lever_adds_them() -> None:
    """Lost workers and retried ends fire the telemetry-health alerts: behind ``--faults``."""
    count = 100 * max(LOST_RUN_EVERY, RETRIED_END_EVERY)
    plain = _take(plan_runs(7, tenant_names(5)), count)
    faulty = _take(plan_runs(7, tenant_names(5), faults=Faults(enabled=True)), count)
    assert not any(r.lost_worker or r.retried_end for r in plain)
    lost = sum(r.lost_worker for r in faulty)
    retried = sum(r.retried_end for r in faulty)
    assert count / LOST_RUN_EVERY / 2 < lost < count / LOST_RUN_EVERY * 2
    assert count / RETRIED_END_EVERY / 2 < retried < count / RETRIED_END_EVERY * 2
    # The lever changes nothing else: one seed, the same runs.
    assert [(r.tenant, r.plan.scenario) for r in plain] == [
        (r.tenant, r.plan.scenario) for r in faulty
    ]


def test_noisy_tenants_turn_ordinary_once_the_noisy_period_ends() -> None:
    misbehaving = True
    runs = plan_runs(9, ["acme", "globex"], {"globex": "silent_bail"}, lambda: misbehaving)
    before = _take(runs, 200)
    misbehaving = False
    after = _take(runs, 200)
    assert {r.behaviour for r in before if r.tenant == "globex"} == {"silent_bail"}
    assert {r.behaviour for r in after} == {"ordinary"}


def test_noisy_clock_runs_from_start() -> None:
    forever = NoisyClock(None)
    forever.start()
    assert forever()
    clock = NoisyClock(0.2)
    assert clock()  # not started: the traffic has not begun
    clock.start()
    assert clock()
    time.sleep(0.3)
    assert not clock()


# --- the flags -----------------------------------------------------------------------------------


@pytest.fixture
def cli_logging() -> Iterator[None]:
    """``main`` configures structlog for the demo; put the defaults back afterwards."""
    yield
    structlog.reset_defaults()


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--tenants", "acme,,globex"], "argument --tenants: expected a count or"),
        (["--tenants", "acme,acme"], "--tenants: 'acme' is listed twice"),
        (["--tenants", "acme,unknown"], "--tenants: 'unknown' is a reserved label value"),
        (["--tenants", "-2"], "argument --tenants: must be at least 1"),
        (["--noisy", "globex"], "argument --noisy: expected TENANT=KIND or none"),
        (["--noisy", "globex=loud"], "--noisy: unknown kind 'loud' for globex"),
        (["--noisy", "nobody=errors"], "--noisy: 'nobody' is not one of the tenants"),
        (["--noisy", "globex=errors,globex=truncation"], "--noisy: 'globex' is given twice"),
        (["--noisy", "none", "--noisy", "globex=errors"], "--noisy none cannot be combined"),
        (["--noisy-for", "10"], "--noisy-for needs --duration"),
        (["--noisy-for", "0", "--duration", "5"], "argument --noisy-for: must be a positive"),
    ],
)
def test_bad_lever_values_get_one_line_and_exit_code_2(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str], cli_logging: None
) -> None:
    try:
        code = main(["demo", *argv])
    except SystemExit as exit_:  # argparse's own errors exit
        code = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert code == EXIT_USAGE
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], captured.err


@pytest.mark.parametrize("port", [0, 1, 65535])
def test_every_port_in_0_to_65535_is_accepted_and_0_means_pick_a_free_one(port: int) -> None:
    """``--prometheus-port 0`` is documented: the OS picks a free port. The bounds are ports."""
    args = build_parser().parse_args(["demo", "--prometheus-port", str(port)])
    assert args.prometheus_port == port


def test_demo_options_take_names_and_noisy_pairs() -> None:
    options = DemoOptions(tenants=("a", "b"), noisy=(("b", "errors"),), duration_s=5, noisy_for_s=2)
    assert noisy_tenants(options.noisy, tenant_names(options.tenants)) == {"b": "errors"}
    assert set(NOISY_KINDS) == {"silent_bail", "errors", "truncation"}
    with pytest.raises(ValueError, match=r"^--noisy-for needs --duration"):
        DemoOptions(noisy_for_s=2)


def _bail_rates(output: str) -> dict[str, float]:
    table = output.split("Silent bails per tenant")[1].split("Synthesis fallbacks")[0]
    rows = ([c.strip() for c in line.strip("│ ").split("│")] for line in table.splitlines())
    return {cells[0]: float(cells[3].rstrip(" %")) for cells in rows if "%" in "".join(cells)}


def test_named_tenants_and_a_chosen_noisy_tenant_show_in_the_summary() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "symfonic_otel", "demo", "--runs", "150", "--seed", "3",
         "--tenants", "acme,globex,initech", "--noisy", "initech=silent_bail"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rates = _bail_rates(result.stdout)
    assert set(rates) == {"acme", "globex", "initech"}
    # initech bails; globex, no longer named noisy, is as quiet as acme.
    assert rates["initech"] > 30 and max(rates["acme"], rates["globex"]) < 10, rates
    assert "Noisy tenants: initech (silent_bail)" in result.stderr
