"""The per-tenant counters in Prometheus' text formats, rendered from the store itself.

Translating them through the SDK exporter and prometheus_client costs about 40 µs a line; here a
series' line is built once and rebuilt only when its total changed (a few hundred nanoseconds a
line otherwise), and text is handed out in chunks, so a scrape never holds a second copy of it.
The output is what the OTel Prometheus exporter makes of the same points: its name, unit and
label translation (``sanitize_full_name``, ``map_unit``, ``sanitize_attribute``, every label of
a family on every series, sorted), with the HELP / TYPE / UNIT lines rendered by
prometheus_client itself. Under OpenMetrics a series with an exemplar (a tenant's latest silent
bail, an errored run) carries it after its value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any, Final, cast

from opentelemetry.exporter.prometheus._mapping import (
    map_unit,
    sanitize_attribute,
    sanitize_full_name,
)
from prometheus_client import CollectorRegistry
from prometheus_client import utils as prometheus_utils
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import CounterMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from symfonic_otel.emit.tenant_counters import Series
from symfonic_otel.emit.tenant_hub import TenantHub
from symfonic_otel.emit.tenant_points import SCOPE
from symfonic_otel.semconv import InstrumentSpec

CHUNK_LINES: Final = 2_000
# prometheus_client's value formatting (Go's float syntax), untyped upstream.
_format = cast(Callable[[float], str], prometheus_utils.floatToGoString)
_SCOPE_LABELS: Final = {
    "otel_scope_name": SCOPE.name,
    "otel_scope_version": SCOPE.version or "",
    "otel_scope_schema_url": SCOPE.schema_url or "",
}


def _label_value(value: object) -> str:
    """The exporter's label value: strings as they are, anything else as JSON."""
    # default=str guards a value JSON cannot encode; OTel attribute values never are one.
    return value if isinstance(value, str) else json.dumps(value, default=str)  # pragma: no mutate


@functools.lru_cache(maxsize=256)
def _label_name(key: str) -> str:
    return sanitize_attribute(key)


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class _Family:
    """One counter's names, header lines and the label keys its series are rendered with."""

    __slots__ = ("headers", "keys", "sample")

    def __init__(self, spec: InstrumentSpec) -> None:
        name = sanitize_full_name(spec.name)
        # Equivalent mutants: every per-tenant counter has a description and an annotation unit
        # ({run}, {USD}) that the exporter's mapping drops; openmetrics=None reads as False.
        unit = map_unit(spec.unit or "")  # pragma: no mutate
        family = CounterMetricFamily(name, spec.description or "", unit=unit)  # pragma: no mutate
        self.sample = f"{family.name}_total"
        self.headers = (
            _header(family, openmetrics=False),  # pragma: no mutate
            _header(family, openmetrics=True),
        )
        self.keys: tuple[str, ...] = ()

    def widen(self, series: list[Series]) -> bool:
        """Add the label keys of series not rendered yet; True if the family's keys grew."""
        keys = set(self.keys)
        for s in series:
            if s.line is None:
                keys.update(_label_name(k) for k in s.attributes)
        keys.update(_SCOPE_LABELS)
        if len(keys) == len(self.keys):
            return False  # pragma: no mutate: True only re-renders lines the same way
        self.keys = tuple(sorted(keys))
        return True

    def prefix(self, series: Series) -> str:
        labels = dict(_SCOPE_LABELS)
        for key, value in series.attributes.items():
            labels[_label_name(key)] = _label_value(value)
        body = ",".join(f'{key}="{_escape(labels.get(key, ""))}"' for key in self.keys)
        return f"{self.sample}{{{body}}} "


def _header(family: CounterMetricFamily, *, openmetrics: bool) -> str:
    """prometheus_client's own HELP / TYPE (/ UNIT) lines for a family with no samples."""
    registry = CollectorRegistry(auto_describe=False)  # pragma: no mutate: one collector, no clash

    class _One:
        def collect(self) -> Iterator[Any]:
            yield family

    registry.register(_One())
    text = (generate_openmetrics if openmetrics else generate_latest)(registry).decode()
    return text.removesuffix("# EOF\n")


class TenantExposition:
    """Renders a hub's per-tenant counters; one instance per endpoint, one scrape at a time."""

    def __init__(self, hub: TenantHub) -> None:
        self._hub = hub
        self._families: dict[str, _Family] = {}

    def chunks(self, openmetrics: bool) -> Iterator[str]:
        """The exposition text, a family's header then its lines, ``CHUNK_LINES`` at a time."""
        links = self._hub.trace_filter
        for spec, series in self._hub.families():
            if not series:
                continue  # a counter with no series has no family, as from the exporter
            family = self._families.get(spec.name)
            if family is None:
                family = self._families[spec.name] = _Family(spec)
            if family.widen(series):
                for s in series:
                    s.line = None  # every line gets the new keys
            yield family.headers[openmetrics]
            for start in range(0, len(series), CHUNK_LINES):
                yield "".join(
                    _lines(family, series[start : start + CHUNK_LINES], openmetrics, links)
                )


def _lines(
    family: _Family,
    series: list[Series],
    openmetrics: bool,
    links: Callable[[int], bool] | None,
) -> Iterator[str]:
    for s in series:
        total = s.total
        line = s.line  # pragma: no mutate: without the cache every line is rendered anew
        if line is None or s.line_total != total:
            prefix = family.prefix(s) if line is None else line[: line.rindex(" ") + 1]
            line = s.line = f"{prefix}{_format(total)}\n"
            s.line_total = total  # pragma: no mutate: as above, a miss only costs time
        exemplar = s.exemplar if openmetrics else None
        if exemplar is None or (links is not None and not links(exemplar[0])):
            yield line
        else:
            trace_id, span_id, value, time_ns = exemplar
            yield (
                f'{line[:-1]} # {{span_id="{span_id:016x}",trace_id="{trace_id:032x}"}} '
                f"{_format(value)} {time_ns / 1e9}\n"
            )
