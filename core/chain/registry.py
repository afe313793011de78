"""The registry of implemented methods: :data:`STEP_CLASSES` and the :func:`register`
decorator.
"""

from __future__ import annotations

from typing import Any, TypeVar

from .settings import Method

#: Implemented methods → their step classes. Extend with :func:`register`.
STEP_CLASSES: dict[Method, type[Any]] = {}

_S = TypeVar("_S", bound=type[Any])


def register(cls: _S) -> _S:
    """Class decorator: register ``cls`` as the implementation of ``cls.method``."""
    if not isinstance(getattr(cls, "method", None), Method):
        raise TypeError(f"{cls.__name__}.method must be a Method member")
    STEP_CLASSES[cls.method] = cls
    return cls
