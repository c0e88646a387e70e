"""The demo's scenario mix: each scenario is a scripted model, its tools and a loop config.

Scripts replay provider-shaped messages (OpenAI ``finish_reason`` and Anthropic ``stop_reason``,
usage metadata) so the reference loop takes each termination path for real. Simulated latencies
sit mid-way between the GenAI histogram buckets, so the percentiles the demo prints from those
buckets do not move with scheduling jitter.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool

from symfonic_otel.agent import FrameworkConfig

__all__ = [
    "NOISY_KINDS",
    "SCENARIOS",
    "TOOLS",
    "Behaviour",
    "NoisyKind",
    "Scenario",
    "ScenarioPlan",
    "pick_scenario",
]

NoisyKind = Literal["silent_bail", "errors", "truncation"]
"""How a noisy tenant misbehaves: bails far more often, fails at the provider, or gets answers
cut at the token limit (stop reason ``max_tokens``)."""
Behaviour = Literal["ordinary", NoisyKind]
NOISY_KINDS: Final[tuple[NoisyKind, ...]] = get_args(NoisyKind)

# Seconds each scripted call "takes": the geometric centres of GenAI duration buckets, as
# far from both edges as can be, so scheduling jitter never moves a call to another bucket.
FAST = 0.16 * 2**0.5  # 0.226 s
SLOW = 0.32 * 2**0.5  # 0.453 s

MODELS = (
    ("gpt-4o-mini", "openai", FAST),
    ("gpt-4o", "openai", FAST),
    ("claude-sonnet-4-5", "anthropic", SLOW),
    ("qwen3-max", "dashscope", FAST),  # not in the price table: pricing_unknown
)


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status by id."""
    return f"Order {order_id}: shipped on 2026-11-28, carrier DHL, 2 items."


@tool
def search_docs(query: str) -> str:
    """Search the help-centre articles."""
    return f"Top article for {query!r}: refunds are accepted within 30 days of delivery."


@tool
def get_exchange_rate(currency: str) -> str:
    """Current EUR exchange rate for a currency code."""
    return f"1 EUR = 1.08 {currency.upper()}"


TOOLS: tuple[BaseTool, ...] = (lookup_order, search_docs, get_exchange_rate)


@dataclass(frozen=True)
class ScenarioPlan:
    """One run's script and settings, drawn from a scenario with the demo's seeded RNG."""

    scenario: str
    model_name: str
    latency_s: float
    script: list[Any]
    config: FrameworkConfig
    query: str
    cancel_after_s: float | None = None
    """Cancel the run's task after this long: the run ends ``cancelled``."""


@dataclass(frozen=True)
class Scenario:
    name: str
    build: Callable[[random.Random, str], ScenarioPlan]
    weights: Mapping[Behaviour, float]
    """Relative weight of the scenario in each tenant behaviour's mix."""
    tags: Sequence[str] = field(default_factory=tuple)


def _usage(rng: random.Random, prompt: int, completion: int) -> dict[str, int]:
    input_tokens = prompt + rng.randint(0, prompt // 4)
    output_tokens = completion + rng.randint(0, max(completion // 4, 1))
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _model(rng: random.Random) -> tuple[str, str, float]:
    return rng.choice(MODELS)


def _final(
    model: str, provider: str, text: str, usage: dict[str, int], *, truncated: bool = False
) -> AIMessage:
    """A terminal turn; ``truncated``: cut at the output-token limit, in the provider's words."""
    meta: dict[str, Any] = (
        {"stop_reason": "max_tokens" if truncated else "end_turn", "model": model}
        if provider == "anthropic"
        else {"finish_reason": "length" if truncated else "stop", "model_name": model}
    )
    return AIMessage(content=text, response_metadata=meta, usage_metadata=usage)


def _tool_turn(
    model: str,
    provider: str,
    calls: list[tuple[str, dict[str, Any]]],
    usage: dict[str, int],
    text: str = "",
    stop: str | None = None,
) -> AIMessage:
    tool_calls = [
        {"name": name, "args": args, "id": f"call_{index}_{name}", "type": "tool_call"}
        for index, (name, args) in enumerate(calls)
    ]
    if stop is None:
        meta: dict[str, Any] = (
            {"stop_reason": "tool_use", "model": model}
            if provider == "anthropic"
            else {"finish_reason": "tool_calls", "model_name": model}
        )
    else:
        meta = {"finish_reason": stop, "model_name": model}
    return AIMessage(
        content=text,
        tool_calls=tool_calls,
        response_metadata=meta,
        usage_metadata=usage,
    )


def _plan(
    name: str,
    model: tuple[str, str, float],
    script: list[Any],
    query: str,
    config: FrameworkConfig | None = None,
    cancel_after_s: float | None = None,
) -> ScenarioPlan:
    return ScenarioPlan(
        scenario=name,
        model_name=model[0],
        latency_s=model[2],
        script=script,
        config=config or FrameworkConfig(),
        query=query,
        cancel_after_s=cancel_after_s,
    )


def _answer(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = _model(rng)
    text = "Our support hours are 9:00-18:00 CET, Monday to Friday."
    return _plan("answer", m, [_final(m[0], m[1], text, _usage(rng, 900, 40))], "Support hours?")


def _tool_round_trip(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = _model(rng)
    order = str(rng.randint(10_000, 99_999))
    script = [
        _tool_turn(m[0], m[1], [("lookup_order", {"order_id": order})], _usage(rng, 1100, 25)),
        _final(m[0], m[1], f"Order {order} shipped on 2026-11-28 with DHL.", _usage(rng, 1300, 30)),
    ]
    return _plan("tool_round_trip", m, script, f"Where is order {order}?")


def _qwen_salvage(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = ("qwen3-max", "dashscope", FAST)
    script = [
        _tool_turn(
            m[0],
            m[1],
            [("search_docs", {"query": "refund"})],
            _usage(rng, 1000, 60),
            text="Refunds are accepted within 30 days of delivery.",
            stop="stop",
        )
    ]
    return _plan("qwen_salvage", m, script, "Can I get a refund?")


def _loop_cut(rng: random.Random, tenant: str, *, synthesize: bool, recovers: bool) -> ScenarioPlan:
    m = _model(rng)
    same = ("get_exchange_rate", {"currency": "usd"})
    script: list[Any] = [_tool_turn(m[0], m[1], [same], _usage(rng, 1200, 20)) for _ in range(3)]
    if synthesize:
        text = "1 EUR buys 1.08 USD today." if recovers else ""
        script.append(_final(m[0], m[1], text, _usage(rng, 1500, 20 if recovers else 0)))
    config = FrameworkConfig(synthesize_on_empty_final=synthesize)
    return _plan("loop_cut", m, script, "EUR to USD?", config)


def _iteration_cap(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = _model(rng)
    script = [
        _tool_turn(m[0], m[1], [("lookup_order", {"order_id": str(n)})], _usage(rng, 1000, 20))
        for n in range(4)
    ]
    config = FrameworkConfig(recursion_limit=4)
    return _plan("iteration_cap", m, script, "Check all my orders", config)


def _empty_completion(
    rng: random.Random, tenant: str, *, synthesize: bool, recovers: bool
) -> ScenarioPlan:
    m = _model(rng)
    script: list[Any] = [_final(m[0], m[1], "", _usage(rng, 900, 0))]
    if synthesize:
        text = "I could not find anything about that topic." if recovers else ""
        script.append(_final(m[0], m[1], text, _usage(rng, 950, 15 if recovers else 0)))
    config = FrameworkConfig(synthesize_on_empty_final=synthesize)
    return _plan("empty_completion", m, script, "Tell me about plan X", config)


def _fabrication(rng: random.Random, tenant: str, *, mode: str) -> ScenarioPlan:
    m = _model(rng)
    draft = "Full details are at https://help.example.com/refunds-2026 (updated today)."
    script: list[Any] = [
        _tool_turn(m[0], m[1], [("search_docs", {"query": "refund"})], _usage(rng, 1000, 20)),
        _final(m[0], m[1], draft, _usage(rng, 1200, 30)),
    ]
    if mode == "revise":
        revised = "Refunds are accepted within 30 days of delivery."
        script.append(_final(m[0], m[1], revised, _usage(rng, 1400, 20)))
    config = FrameworkConfig(fabrication_check=mode, fabrication_refuse_min_confidence=0.6)  # type: ignore[arg-type]
    return _plan(f"fabrication_{mode}", m, script, "Where is the refund policy?", config)


def _truncated(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = _model(rng)
    text = "To request a refund, open the order, choose the items to return and"
    script = [_final(m[0], m[1], text, _usage(rng, 1000, 256), truncated=True)]
    return _plan("truncated", m, script, "How do I request a refund?")


class DemoProviderError(RuntimeError):
    """The demo's stand-in for a provider outage (HTTP 529, overloaded)."""


def _provider_error(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = _model(rng)
    return _plan("provider_error", m, [DemoProviderError("overloaded")], "Summarise my account")


def _cancelled(rng: random.Random, tenant: str) -> ScenarioPlan:
    m = ("claude-sonnet-4-5", "anthropic", SLOW)
    script = [_final(m[0], m[1], "Too late.", _usage(rng, 900, 10))]
    return _plan("cancelled", m, script, "Long question", cancel_after_s=SLOW / 2)


def _weights(
    ordinary: float,
    *,
    silent_bail: float | None = None,
    errors: float | None = None,
    truncation: float | None = None,
) -> dict[Behaviour, float]:
    """A scenario's weight per behaviour; a noisy mix is the ordinary one where not given."""
    return {
        "ordinary": ordinary,
        "silent_bail": ordinary if silent_bail is None else silent_bail,
        "errors": ordinary if errors is None else errors,
        "truncation": ordinary if truncation is None else truncation,
    }


# The ordinary mix (weights sum to 100, so each is a percentage) keeps every tenant well below
# every alert threshold: 1 % silent bails, 0.35 % empty answers, 0.8 % errors, 0.7 % answers
# cut at max_tokens, 2 % fabrication refusals. Each noisy mix raises one failure far above its
# threshold and leaves the others ordinary: silent_bail 58 % bails, nearly all of them recovered
# by synthesis (2.4 % of runs left empty, under the 5 % empty-answer alert: the answers look
# fine, only the silent-bail page tells), errors 29 % provider errors, truncation 29 % answers
# cut at max_tokens.
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("answer", _answer, _weights(48, silent_bail=10)),
    Scenario("tool_round_trip", _tool_round_trip, _weights(34, silent_bail=10)),
    Scenario("qwen_salvage", _qwen_salvage, _weights(6, silent_bail=4)),
    Scenario(
        "loop_cut_synthesis_recovered",
        lambda r, t: _loop_cut(r, t, synthesize=True, recovers=True),
        _weights(0.1, silent_bail=24),
    ),
    Scenario(
        "loop_cut_unrecovered",
        lambda r, t: _loop_cut(r, t, synthesize=False, recovers=False),
        _weights(0.04, silent_bail=0.8),
    ),
    Scenario("iteration_cap", _iteration_cap, _weights(0.03, silent_bail=0.7)),
    Scenario(
        "empty_recovered",
        lambda r, t: _empty_completion(r, t, synthesize=True, recovers=True),
        _weights(0.08, silent_bail=22),
    ),
    Scenario(
        "empty_unrecovered",
        lambda r, t: _empty_completion(r, t, synthesize=True, recovers=False),
        _weights(0.03, silent_bail=0.5),
    ),
    Scenario("fabrication_observe", lambda r, t: _fabrication(r, t, mode="observe"), _weights(4)),
    Scenario("fabrication_revise", lambda r, t: _fabrication(r, t, mode="revise"), _weights(3)),
    Scenario("fabrication_refuse", lambda r, t: _fabrication(r, t, mode="refuse"), _weights(2)),
    Scenario("provider_error", _provider_error, _weights(0.8, errors=40)),
    Scenario("truncated", _truncated, _weights(0.7, truncation=40)),
    Scenario("cancelled", _cancelled, _weights(0.5)),
)


def pick_scenario(rng: random.Random, behaviour: Behaviour = "ordinary") -> Scenario:
    weights = [scenario.weights[behaviour] for scenario in SCENARIOS]
    return rng.choices(SCENARIOS, weights=weights, k=1)[0]
