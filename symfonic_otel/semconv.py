"""Every telemetry name this package emits: spans, attributes, metrics, units and buckets.

Dashboards, alert rules, the README table and the tests all read names from here, so a
semantic-convention change is one edit. ``gen_ai.*`` names follow the OpenTelemetry GenAI
semantic conventions; ``symfonic.*`` names are ours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

# --- span names and kinds ----------------------------------------------------------------------

OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"


def agent_span_name(agent_name: str) -> str:
    return f"{OP_INVOKE_AGENT} {agent_name}"


def chat_span_name(model: str) -> str:
    return f"{OP_CHAT} {model}" if model else OP_CHAT


def tool_span_name(tool_name: str) -> str:
    return f"{OP_EXECUTE_TOOL} {tool_name}" if tool_name else OP_EXECUTE_TOOL


EVENT_REACT_LOOP_END: Final = "symfonic.react.loop_end"
EVENT_FABRICATION_DETECTED: Final = "symfonic.fabrication.detected"

# --- attribute keys ----------------------------------------------------------------------------

TENANT_ID: Final = "tenant.id"
ERROR_TYPE: Final = "error.type"

GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
# Content attributes: only set when content capture is on.
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"

TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"

RUN_ID: Final = "symfonic.run.id"
RUN_OUTCOME: Final = "symfonic.run.outcome"
NODE_NAME: Final = "symfonic.node.name"
RESPONSE_EMPTY: Final = "symfonic.response.empty"
REACT_TERMINATION_REASON: Final = "symfonic.react.termination_reason"
REACT_ITERATION_INDEX: Final = "symfonic.react.iteration_index"
REACT_CONTENT_TYPE: Final = "symfonic.react.content_type"
REACT_HAS_TOOL_CALLS: Final = "symfonic.react.has_tool_calls"
REACT_TOOL_CALL_COUNT: Final = "symfonic.react.tool_call_count"
FABRICATION_MODE: Final = "symfonic.fabrication.mode"
FABRICATION_ACTION: Final = "symfonic.fabrication.action"
FABRICATION_MAX_CONFIDENCE: Final = "symfonic.fabrication.max_confidence"
FABRICATION_FINDINGS: Final = "symfonic.fabrication.findings"
FABRICATION_FINDING_KINDS: Final = "symfonic.fabrication.finding_kinds"
FABRICATION_REFUSE_THRESHOLD: Final = "symfonic.fabrication.refuse_threshold"
FABRICATION_DRAFT_PREVIEW: Final = "symfonic.fabrication.original_draft_preview"
FABRICATION_REPLACEMENT_PREVIEW: Final = "symfonic.fabrication.replacement_preview"
FABRICATION_PREVIEW_TRUNCATED: Final = "symfonic.fabrication.preview_truncated"
LLM_PRICING_UNKNOWN: Final = "symfonic.llm.pricing_unknown"
LLM_COST_USD: Final = "symfonic.llm.cost_usd"
SYNTHESIS_RECOVERED: Final = "symfonic.synthesis.recovered"
CONTENT_TRUNCATED: Final = "symfonic.content.truncated"
TELEMETRY_EVENT: Final = "symfonic.telemetry.event"
TELEMETRY_DROP_REASON: Final = "symfonic.telemetry.drop_reason"

# Values with a fixed meaning.
NODE_REACT: Final = "react"
NODE_SYNTHESIZE_FALLBACK: Final = "react_synthesize_fallback"
NODE_FABRICATION_REVISE: Final = "fabrication_revise"
TENANT_UNKNOWN: Final = "unknown"
OVERFLOW_VALUE: Final = "__overflow__"
# The SDK's overflow attribute set: what an instrument records past its cardinality limit.
METRIC_OVERFLOW: Final = "otel.metric.overflow"
OTHER_VALUE: Final = "_OTHER"
BAGGAGE_TENANT_KEY: Final = TENANT_ID
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The agent name of the no-code instrumentor's handler (``instrument(agent_name=...)`` wins).
AGENT_NAME_ENV: Final = "OTEL_INSTRUMENTATION_SYMFONIC_AGENT_NAME"

# --- metrics -----------------------------------------------------------------------------------

InstrumentKind = Literal["counter", "updown_counter", "histogram"]

# GenAI semantic conventions: explicit bucket advice for the two gen_ai.client.* histograms.
# fmt: off
GEN_AI_DURATION_BUCKETS: Final = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)
GEN_AI_TOKEN_BUCKETS: Final = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)
# fmt: on
# A whole agent run can outlast a single completion: the semconv ladder, doubled twice more.
AGENT_DURATION_BUCKETS: Final = (*GEN_AI_DURATION_BUCKETS, 163.84, 327.68)
ITERATION_BUCKETS: Final = (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 25, 30, 40, 50)
CONFIDENCE_BUCKETS: Final = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)


@dataclass(frozen=True)
class InstrumentSpec:
    """One metric instrument: OTel name, kind, unit, description, bucket advice."""

    name: str
    kind: InstrumentKind
    unit: str
    description: str
    buckets: tuple[float, ...] | None = None

    @property
    def prometheus_name(self) -> str:
        return prometheus_name(self)


AGENT_RUNS: Final = InstrumentSpec(
    "symfonic.agent.runs", "counter", "{run}", "Agent runs ended, by outcome and empty response."
)
AGENT_DURATION: Final = InstrumentSpec(
    "gen_ai.invoke_agent.duration", "histogram", "s", "Agent run duration.", AGENT_DURATION_BUCKETS
)
ACTIVE_RUNS: Final = InstrumentSpec(
    "symfonic.agent.active_runs", "updown_counter", "{run}", "Agent runs started and not ended."
)
SILENT_BAILS: Final = InstrumentSpec(
    "symfonic.react.silent_bails",
    "counter",
    "{bail}",
    "Agent runs that stopped without writing an answer (loop cut, step cap, empty completion),"
    " whether or not a fallback then produced one.",
)
SYNTHESIS_FALLBACKS: Final = InstrumentSpec(
    "symfonic.react.synthesis_fallbacks",
    "counter",
    "{call}",
    "Recovery completions issued after a silent bail, by whether they produced text.",
)
REACT_ITERATIONS: Final = InstrumentSpec(
    "symfonic.react.iterations",
    "histogram",
    "{iteration}",
    "Model calls of the loop per run.",
    ITERATION_BUCKETS,
)
CLIENT_OPERATION_DURATION: Final = InstrumentSpec(
    "gen_ai.client.operation.duration",
    "histogram",
    "s",
    "GenAI operation duration.",
    GEN_AI_DURATION_BUCKETS,
)
CLIENT_TOKEN_USAGE: Final = InstrumentSpec(
    "gen_ai.client.token.usage",
    "histogram",
    "{token}",
    "Number of input and output tokens used.",
    GEN_AI_TOKEN_BUCKETS,
)
LLM_COST: Final = InstrumentSpec(
    "symfonic.llm.cost.usd",
    "counter",
    "{USD}",
    "Model cost from the price table; unknown models add nothing.",
)
LLM_TOKENS: Final = InstrumentSpec(
    "symfonic.llm.tokens",
    "counter",
    "{token}",
    "Model tokens per tenant, by model and token type (a tenant's spend in one series).",
)
FABRICATION_DETECTIONS: Final = InstrumentSpec(
    "symfonic.fabrication.detections",
    "counter",
    "{detection}",
    "Fabrication-check detections by mode and action.",
)
FABRICATION_CONFIDENCE: Final = InstrumentSpec(
    "symfonic.fabrication.max_confidence",
    "histogram",
    "1",
    "Strongest finding confidence per detection.",
    CONFIDENCE_BUCKETS,
)
ORPHANED_RUNS: Final = InstrumentSpec(
    "symfonic.telemetry.orphaned_runs",
    "counter",
    "{run}",
    "Runs closed as abandoned because their end never arrived (TTL or open-run cap).",
)
DROPPED_EVENTS: Final = InstrumentSpec(
    "symfonic.telemetry.dropped_events",
    "counter",
    "{event}",
    "Events the handler could not attach to a run (unknown run, duplicate, malformed).",
)

# --- stop reasons, cache tokens, span losses (core handler and SDK setup) -----------------------

GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
RUN_STOP_REASON: Final = "symfonic.run.stop_reason"
# The run exits the ``symfonic.agent.stop_reasons`` counter always knows (other values pass
# through, capped): normalised terminal stop reasons, then the loop's and the caller's own exits.
STOP_REASON_VALUES: Final = (
    "end_turn",
    "max_tokens",
    "tool_use",
    "refusal",
    "loop_detected",
    "recursion_limit",
    "interrupted",
    "error",
)
STOP_REASON_ERROR: Final = "error"
STOP_REASON_INTERRUPTED: Final = "interrupted"
STOP_REASON_LOOP_DETECTED: Final = "loop_detected"
STOP_REASON_RECURSION_LIMIT: Final = "recursion_limit"
# Why the SDK setup lost spans (``symfonic.telemetry.drop_reason`` on the dropped-spans counter).
SPAN_DROP_QUEUE_FULL: Final = "queue_full"
SPAN_DROP_EXPORT_FAILED: Final = "export_failed"
SPAN_DROP_UNENCODABLE: Final = "unencodable"
# The instrumentation scope (tracer and meter name) of everything this package emits.
SCOPE_NAME: Final = "symfonic_otel"

STOP_REASONS: Final = InstrumentSpec(
    "symfonic.agent.stop_reasons",
    "counter",
    "{run}",
    "Agent runs ended, by how the run exited (stop reason).",
)
DROPPED_SPANS: Final = InstrumentSpec(
    "symfonic.telemetry.dropped_spans",
    "counter",
    "{span}",
    "Spans the exporter could not deliver (queue full, export failed, unencodable).",
)

# Every instrument; blocks further down append theirs.
ALL_INSTRUMENTS: tuple[InstrumentSpec, ...] = (
    AGENT_RUNS,
    AGENT_DURATION,
    ACTIVE_RUNS,
    SILENT_BAILS,
    SYNTHESIS_FALLBACKS,
    REACT_ITERATIONS,
    CLIENT_OPERATION_DURATION,
    CLIENT_TOKEN_USAGE,
    LLM_COST,
    LLM_TOKENS,
    FABRICATION_DETECTIONS,
    FABRICATION_CONFIDENCE,
    ORPHANED_RUNS,
    DROPPED_EVENTS,
    STOP_REASONS,
    DROPPED_SPANS,
)

# --- OTel -> Prometheus translation ------------------------------------------------------------

_UNIT_SUFFIXES: Final = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "1": ""}
_INVALID = re.compile(r"[^a-zA-Z0-9_:]")


def prometheus_label(attribute_key: str) -> str:
    """Prometheus label for an attribute key (``tenant.id`` -> ``tenant_id``)."""
    return _INVALID.sub("_", attribute_key)


def prometheus_name(spec: InstrumentSpec) -> str:
    """The name an instrument gets after the standard OTel -> Prometheus translation.

    Dots become underscores, a unit in braces adds nothing, ``s`` adds ``_seconds``, and
    monotonic counters end in ``_total``.
    """
    name = _INVALID.sub("_", spec.name)
    unit = "" if spec.unit.startswith("{") else _UNIT_SUFFIXES.get(spec.unit, spec.unit)
    if unit and not name.endswith(f"_{unit}"):
        name = f"{name}_{unit}"
    if spec.kind == "counter":
        name = f"{name}_total"
    return name


def prometheus_series_names(spec: InstrumentSpec) -> tuple[str, ...]:
    """Every series name Prometheus stores for an instrument (histograms have three)."""
    base = prometheus_name(spec)
    if spec.kind == "histogram":
        return (f"{base}_bucket", f"{base}_count", f"{base}_sum")
    return (base,)


# --- graph nodes of the reference loop (NodeStart/End/Error ``node_name``) -----------------------
# Its model calls are nodes named by call site (NODE_REACT, ...); its tool rounds are this node.
NODE_TOOLS: Final = "tools"


# --- trace content: request, response, content, retrieval, sub-agents, step events ------------

OP_TEXT_COMPLETION: Final = "text_completion"
OP_EMBEDDINGS: Final = "embeddings"
OP_RETRIEVAL: Final = "retrieval"
# A LangGraph node span (optional): semconv names no operation for a graph step.
OP_INVOKE_NODE: Final = "invoke_node"

GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
# The model operations ``llm_end(operation_name=...)`` accepts; anything else records ``chat``.
MODEL_OPERATIONS: Final = frozenset({OP_CHAT, OP_TEXT_COMPLETION, OP_EMBEDDINGS})

GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TOP_P: Final = "gen_ai.request.top_p"
GEN_AI_REQUEST_TOP_K: Final = "gen_ai.request.top_k"
GEN_AI_REQUEST_FREQUENCY_PENALTY: Final = "gen_ai.request.frequency_penalty"
GEN_AI_REQUEST_PRESENCE_PENALTY: Final = "gen_ai.request.presence_penalty"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_REQUEST_SEED: Final = "gen_ai.request.seed"
GEN_AI_REQUEST_CHOICE_COUNT: Final = "gen_ai.request.choice.count"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
GEN_AI_EMBEDDINGS_DIMENSION_COUNT: Final = "gen_ai.embeddings.dimension.count"
# Content attributes (capture on only), GenAI semconv JSON.
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_RETRIEVAL_QUERY_TEXT: Final = "gen_ai.retrieval.query.text"
GEN_AI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
# Always set: how many documents a retrieval returned, texts an embeddings call embedded.
RETRIEVAL_DOCUMENT_COUNT: Final = "symfonic.retrieval.document_count"
EMBEDDINGS_INPUT_COUNT: Final = "symfonic.embeddings.input_count"
# The run a sub-agent (a graph invoked inside a graph) was invoked from.
RUN_PARENT_ID: Final = "symfonic.run.parent_id"
# ``error.type`` of a tool that reported its own failure (``ToolMessage(status="error")``).
TOOL_ERROR_TYPE: Final = "tool_error"
# The semconv evaluation event, emitted for each fabrication detection beside our own event.
EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"  # content: capture only
EVALUATION_FABRICATION: Final = "symfonic.fabrication"

RUN_PAUSED: Final = "symfonic.run.paused"
RUN_PAUSE_KIND: Final = "symfonic.run.pause_kind"  # ``ask_user`` or ``interrupt``
RUN_INTERRUPT_NAME: Final = "symfonic.run.interrupt_name"
EVENT_RUN_PAUSED: Final = "symfonic.run.paused"
PAUSE_ASK_USER: Final = "ask_user"
PAUSE_INTERRUPT: Final = "interrupt"
REACT_FORCED_TOOL_CHOICE: Final = "symfonic.react.forced_tool_choice"
NODE_ERROR_MESSAGE: Final = "symfonic.node.error_message"  # content: capture only
# A tool or node span still open when its run ended (its result never came).
STEP_UNFINISHED: Final = "symfonic.step.unfinished"
# Graph-node spans (``node_spans=True``): ``invoke_node {node_name}``, INTERNAL. Semconv names
# no operation for a graph step; this one is ours (the LangChain adapter's node spans use it too).


def node_span_name(node_name: str) -> str:
    return f"{OP_INVOKE_NODE} {node_name}" if node_name else OP_INVOKE_NODE


def operation_span_name(operation: str, target: str) -> str:
    """``{operation} {target}`` as semconv names GenAI spans; the operation alone without one."""
    return f"{operation} {target}" if target else operation


CLIENT_TIME_TO_FIRST_CHUNK: Final = InstrumentSpec(
    "gen_ai.client.operation.time_to_first_chunk",
    "histogram",
    "s",
    "Time to receive the first chunk of a streamed response, from the request.",
    GEN_AI_DURATION_BUCKETS,
)
EXECUTE_TOOL_DURATION: Final = InstrumentSpec(
    "gen_ai.execute_tool.duration",
    "histogram",
    "s",
    "The duration of a single tool execution.",
    GEN_AI_DURATION_BUCKETS,
)

ALL_INSTRUMENTS = (*ALL_INSTRUMENTS, CLIENT_TIME_TO_FIRST_CHUNK, EXECUTE_TOOL_DURATION)


# --- framework adapters: OpenAI Agents SDK handoffs and guardrails ---------------------------
# A handoff between two agents of one run, and a guardrail's check, become spans of their own
# (semconv names no operation for either).
SPAN_HANDOFF: Final = "handoff"
SPAN_GUARDRAIL: Final = "guardrail"
HANDOFF_FROM_AGENT: Final = "symfonic.handoff.from_agent"
HANDOFF_TO_AGENT: Final = "symfonic.handoff.to_agent"
GUARDRAIL_NAME: Final = "symfonic.guardrail.name"
GUARDRAIL_TRIGGERED: Final = "symfonic.guardrail.triggered"
# ``error.type`` of a run a guardrail's tripwire stopped (the SDK's span error names no class).
GUARDRAIL_ERROR_TYPE: Final = "guardrail_tripwire"

# --- other instrumentations' span names, read by the span processor (``symfonic_otel.spans``) --
# The processor reads these on spans it did not make; it never writes them. GenAI semantic
# conventions first, then OpenInference's and OpenLLMetry (Traceloop)'s own names where they
# differ.
OP_INVOKE_WORKFLOW: Final = "invoke_workflow"  # util-genai's run of a graph that is no agent
OP_GENERATE_CONTENT: Final = "generate_content"
EXCEPTION_EVENT: Final = "exception"
EXCEPTION_TYPE: Final = "exception.type"
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
OPENINFERENCE_KIND_AGENT: Final = "AGENT"
OPENINFERENCE_KIND_CHAIN: Final = "CHAIN"
OPENINFERENCE_KIND_LLM: Final = "LLM"
OPENINFERENCE_OUTPUT_MESSAGES: Final = "llm.output_messages."  # a prefix: flattened messages
OPENINFERENCE_FINISH_REASON: Final = "llm.finish_reason"
OPENINFERENCE_OUTPUT_VALUE: Final = "output.value"
OPENINFERENCE_OUTPUT_MIME_TYPE: Final = "output.mime_type"
OPENINFERENCE_METADATA: Final = "metadata"  # the run's metadata, one JSON object
OPENINFERENCE_KIND_TOOL: Final = "TOOL"
OPENINFERENCE_TOOL_NAME: Final = "tool.name"
OPENINFERENCE_INPUT_VALUE: Final = "input.value"  # a TOOL span's arguments, with inputs shown
OPENINFERENCE_REDACTED: Final = "__REDACTED__"  # what OpenInference writes for hidden inputs
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
TRACELOOP_KIND_WORKFLOW: Final = "workflow"
TRACELOOP_KIND_AGENT: Final = "agent"
TRACELOOP_KIND_TOOL: Final = "tool"
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"  # with TRACELOOP_TRACE_CONTENT on
# The key under which LangChain hands a tool its input (OpenLLMetry records the whole callback
# input, run metadata included: only this key is the call's arguments).
LANGCHAIN_TOOL_INPUT: Final = "input_str"
TRACELOOP_ASSOCIATION_PREFIX: Final = "traceloop.association.properties."
TRACELOOP_COMPLETIONS: Final = "gen_ai.completion."  # a prefix: flattened completions (legacy)
TRACELOOP_REQUEST_TYPE: Final = "llm.request.type"
TRACELOOP_FINISH_REASON: Final = "llm.response.finish_reason"
PYDANTIC_AI_FINAL_RESULT: Final = "final_result"

# Names a framework gives a run nobody named (LangChain / LangGraph defaults): no agent name.
DEFAULT_RUN_NAMES: Final = frozenset({"LangGraph", "RunnableSequence", "RunnableLambda"})
# Where the processor looks for a run's tenant by default, first found wins.
SPAN_TENANT_ATTRIBUTES: Final = (TENANT_ID, f"{TRACELOOP_ASSOCIATION_PREFIX}tenant_id")

# --- trace retention: keep every failing run's trace whole, a share of the healthy ones --------
HEALTHY_TRACE_RATIO_ENV: Final = "SYMFONIC_OTEL_HEALTHY_TRACE_RATIO"
RETENTION_DECISION: Final = "symfonic.retention.decision"  # ``kept`` or ``dropped``
RETENTION_BASIS: Final = "symfonic.retention.basis"  # ``outcome``, ``ratio`` or ``capacity``
RETENTION_DROP_UNSAMPLED: Final = "unsampled"  # a healthy run the ratio did not choose
RETENTION_DROP_DECIDED_EARLY: Final = "decided_early"  # past the held-span bounds
RETENTION_TRACES: Final = InstrumentSpec(
    "symfonic.telemetry.retention.traces",
    "counter",
    "{trace}",
    "Traces decided by outcome retention, by decision and basis (capacity: decided early).",
)
RETENTION_DROPPED_SPANS: Final = InstrumentSpec(
    "symfonic.telemetry.retention.dropped_spans",
    "counter",
    "{span}",
    "Spans outcome retention did not export: unsampled healthy runs, runs decided early.",
)
RETENTION_LATE_KEEPS: Final = InstrumentSpec(
    "symfonic.telemetry.retention.late_keeps",
    "counter",
    "{trace}",
    "Runs that failed after the held-span bounds had dropped their trace (not exported).",
)
RETENTION_HELD_SPANS: Final = InstrumentSpec(
    "symfonic.telemetry.retention.held_spans",
    "updown_counter",
    "{span}",
    "Spans held in process until their run's local root span ends.",
)
ALL_INSTRUMENTS = (
    *ALL_INSTRUMENTS,
    RETENTION_TRACES,
    RETENTION_DROPPED_SPANS,
    RETENTION_LATE_KEEPS,
    RETENTION_HELD_SPANS,
)
# --- loops (``core.loops``): per-run call counts, identical tool calls, looping runs --------
CALL_COUNT_BUCKETS: Final = (1, 2, 4, 8, 16, 32, 64, 128)
INVOKE_AGENT_INFERENCE_CALLS: Final = InstrumentSpec(
    "gen_ai.invoke_agent.inference_calls", "histogram", "{inference_call}",
    "The number of model calls an agent invocation made.", CALL_COUNT_BUCKETS,
)  # fmt: skip
INVOKE_AGENT_TOOL_CALLS: Final = InstrumentSpec(
    "gen_ai.invoke_agent.tool_calls", "histogram", "{tool_call}",
    "The number of tool calls an agent invocation made.", CALL_COUNT_BUCKETS,
)  # fmt: skip
LOOPING_RUNS: Final = InstrumentSpec(
    "symfonic.agent.looping_runs", "counter", "{run}",
    "Agent runs detected looping (repeated tool call, call budget), counted at detection.",
)  # fmt: skip
REPEATED_TOOL_CALLS: Final = InstrumentSpec(
    "symfonic.agent.repeated_tool_calls", "counter", "{call}",
    "Tool calls identical (tool and arguments) to an earlier call of the same run.",
)  # fmt: skip
ALL_INSTRUMENTS = (*ALL_INSTRUMENTS, INVOKE_AGENT_INFERENCE_CALLS, INVOKE_AGENT_TOOL_CALLS)
ALL_INSTRUMENTS = (*ALL_INSTRUMENTS, LOOPING_RUNS, REPEATED_TOOL_CALLS)
LOOP_KIND: Final = "symfonic.loop.kind"
LOOP_REPEATED_TOOL_CALL: Final = "repeated_tool_call"
LOOP_CALL_BUDGET: Final = "call_budget"
LOOP_KINDS: Final = (LOOP_REPEATED_TOOL_CALL, LOOP_CALL_BUDGET)
LOOP_COUNT: Final = "symfonic.loop.count"  # identical tool calls, or model calls, at detection
RUN_INFERENCE_CALLS: Final = "symfonic.run.inference_calls"
RUN_TOOL_CALLS: Final = "symfonic.run.tool_calls"
RUN_REPEATED_TOOL_CALLS: Final = "symfonic.run.repeated_tool_calls"
EVENT_LOOP_DETECTED: Final = "symfonic.agent.loop_detected"
