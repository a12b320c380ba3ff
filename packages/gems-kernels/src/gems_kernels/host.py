"""Whether the current thread is inside a gems kernel's host code.

While it is, every registered overload falls through to the kernel registered before gems (see
:mod:`gems_kernels.dispatch`): allocations and the interpreter's copies never re-enter gems. The
dispatcher wrapper marks forward calls; autograd backward functions of autograd-key kernels mark
themselves with :func:`host_code`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["depth", "enter", "host_code", "leave"]


class _State(threading.local):
    depth = 0


_STATE = _State()
_F = TypeVar("_F", bound=Callable[..., Any])


def depth() -> int:
    """1 inside a gems kernel's host code, else 0."""
    return _STATE.depth


def enter() -> int:
    """Mark the thread as inside gems host code; returns the previous depth for :func:`leave`."""
    previous = depth()
    _STATE.depth = 1
    return previous


def leave(previous: int) -> None:
    """Restore the depth :func:`enter` returned."""
    _STATE.depth = previous


def host_code(fn: _F) -> _F:
    """Run ``fn`` as gems host code (for autograd backward functions)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = enter()
        try:
            return fn(*args, **kwargs)
        finally:
            leave(previous)

    return cast(_F, wrapper)
