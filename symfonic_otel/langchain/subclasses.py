"""Methods wrapped on every subclass of a LangChain base class, those defined later included.

The instrumentor's embeddings and retriever wrappers both need it: LangChain calls these
methods with no callback of its own around them. ``install`` wraps the named methods (with
wrapt) where each class defines them, on the classes that exist, and hooks the base's
``__init_subclass__`` so a class defined later is wrapped as it is made; ``uninstall`` puts back
every method and the hook. An abstract method is left alone, and so is one already wrapped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from wrapt import FunctionWrapper

from symfonic_otel.logs import FailureLog

__all__ = ["SubclassMethods"]

Wrapper = Callable[[Callable[..., Any], Any, Any, Any], Any]


class SubclassMethods:
    """Wraps ``wrappers``' methods (name -> wrapt wrapper) on a base class and its subclasses.

    A class that cannot be wrapped is reported to ``failures`` as ``failure_kind`` and keeps
    working, unwrapped.
    """

    def __init__(
        self, wrappers: Mapping[str, Wrapper], failures: FailureLog, failure_kind: str
    ) -> None:
        self._wrappers = dict(wrappers)
        self._failures = failures
        self._failure_kind = failure_kind
        self._wrapped: list[tuple[type, str, object]] = []
        self._hooked: tuple[type, object] | None = None

    def install(self, base: type, *, include_base: bool = True) -> None:
        """Wrap ``base`` (unless ``include_base`` is off) and its subclasses, now and later."""
        pending: list[type] = [base] if include_base else list(base.__subclasses__())
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            self._wrap_class(cls)
        original = base.__dict__.get("__init_subclass__")
        wrap_class = self._wrap_class

        def init_subclass(cls: Any, /, **kwargs: Any) -> None:
            if isinstance(original, classmethod):  # the base's own hook (BaseRetriever has one)
                original.__get__(None, cls)(**kwargs)
            else:
                super(base, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]
            wrap_class(cls)

        base.__init_subclass__ = classmethod(init_subclass)  # type: ignore[assignment]
        self._hooked = (base, original)

    def uninstall(self) -> None:
        if self._hooked is not None:
            base, original = self._hooked
            if original is not None:
                base.__init_subclass__ = original  # type: ignore[assignment]
            elif "__init_subclass__" in base.__dict__:
                delattr(base, "__init_subclass__")
            self._hooked = None
        for cls, name, method in reversed(self._wrapped):
            setattr(cls, name, method)
        self._wrapped.clear()

    def _wrap_class(self, cls: type) -> None:
        try:
            for name, wrapper in self._wrappers.items():
                method = cls.__dict__.get(name)
                if method is None or isinstance(method, FunctionWrapper):
                    continue
                if getattr(method, "__isabstractmethod__", False):
                    continue
                setattr(cls, name, FunctionWrapper(method, wrapper))
                self._wrapped.append((cls, name, method))
        except Exception as exc:  # a class we cannot wrap still works, unwrapped
            self._failures.report(self._failure_kind, exc)
