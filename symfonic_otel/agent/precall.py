"""What the loop's ``LLMPreCallEvent`` says of a runnable: its tools and invocation parameters.

The tools are the binding's (``bind_tools``), as the ``{"name", "description", "schema"}``
records of seed 003; the parameters are the chat model's ``_get_invocation_params`` with the
binding's keywords (``tool_choice``...), which is where Symfonic reads them. Both are read once
per runnable, since the loop reuses its bindings, and reading them never raises: a runnable that
does not tell gives no tools or no parameters.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["RequestShapes"]

_CACHE_SIZE: Final = 32
Request = tuple[tuple[dict[str, Any], ...], dict[str, Any]]


def _record(tool: object) -> dict[str, Any] | None:
    """One bound tool (OpenAI ``function`` or Anthropic ``input_schema`` shape) as a record."""
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        return None
    schema = spec.get("parameters")
    if schema is None:
        schema = spec.get("input_schema", {})
    return {"name": name, "description": str(spec.get("description") or ""), "schema": schema}


def _read(runnable: object) -> Request:
    bound = getattr(runnable, "bound", None)
    kwargs = getattr(runnable, "kwargs", None)
    if bound is None or not isinstance(kwargs, Mapping):  # the model itself, no binding
        bound, kwargs = runnable, {}
    tools = kwargs.get("tools")
    records = tuple(
        record
        for record in (_record(tool) for tool in (tools if isinstance(tools, list | tuple) else ()))
        if record is not None
    )
    extra = {key: value for key, value in kwargs.items() if key != "tools"}
    params: dict[str, Any] = {}
    invocation_params = getattr(bound, "_get_invocation_params", None)
    if callable(invocation_params):
        try:
            found = invocation_params(**extra)
        except Exception:  # a model whose parameters cannot be read: the binding's keywords
            found = extra
        params = dict(found) if isinstance(found, Mapping) else dict(extra)
    return records, params


class RequestShapes:
    """The tools and invocation parameters of each runnable, by identity (kept alive while
    cached, so an id is not reused), at most ``_CACHE_SIZE`` of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, tuple[object, Request]] = OrderedDict()

    def __call__(self, runnable: object) -> Request:
        with self._lock:
            hit = self._cache.get(id(runnable))
        if hit is not None and hit[0] is runnable:
            return hit[1]
        try:
            request = _read(runnable)
        except Exception:  # a binding of an unexpected shape
            request = ((), {})
        with self._lock:
            self._cache[id(runnable)] = (runnable, request)
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return request
