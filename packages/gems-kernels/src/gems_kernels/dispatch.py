"""Putting gems kernels into PyTorch's dispatcher and taking them out again.

A :class:`GemsSession` registers a selection of the registration table through one
``torch.library.Library`` at the vendor's dispatch key (its autograd key for entries that carry
their own backward). Closing the session destroys the library, which restores whatever kernel was
there before; sessions nest because the dispatcher keeps a stack of kernels per key.

While a gems kernel runs, every registered operator falls through to the kernel that was
registered before it: the host code of a kernel (allocations, the interpreter's copies) never
re-enters gems. Calls the kernels do not take (a false condition, complex tensors) fall through
too. The dispatcher hands a Python kernel the numbers of ``Tensor`` parameters (``x * 2``) as
Python numbers, which the previous kernel would refuse; they go back as 0-d tensors whose dtype
gives the same type promotion.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gems_kernels import caches, host, registration
from gems_kernels.backends import current_vendor
from gems_kernels.recording import OpRecorder

__all__ = ["GemsSession", "disable", "enable", "enabled_sessions", "only_enable", "use_gems"]

_ENABLED: list[GemsSession] = []
_depth = host.depth


@dataclass(frozen=True)
class TensorParameters:
    """Where an overload takes tensors, read from its schema."""

    positions: tuple[int, ...]
    """Positions of the positional ``Tensor`` / ``Tensor?`` parameters."""
    names: frozenset[str]
    """Names of every ``Tensor`` / ``Tensor?`` parameter, keyword-only ones included."""
    list_positions: tuple[int, ...]
    """Positions of the ``Tensor[]`` / ``Tensor?[]`` parameters."""

    def has_complex(self, args: tuple[Any, ...]) -> bool:
        """Whether a tensor argument of the call is complex (or a complex number stands for
        one); only the schema's tensor positions are looked at."""
        count = len(args)
        for index in self.positions:
            if index < count:
                arg = args[index]
                if arg.is_complex() if isinstance(arg, torch.Tensor) else type(arg) is complex:
                    return True
        for index in self.list_positions:
            if index < count and any(
                isinstance(item, torch.Tensor) and item.is_complex() for item in args[index]
            ):
                return True
        return False


@functools.cache
def tensor_parameters(entry: registration.Registration) -> TensorParameters:
    """The tensor parameters of ``entry``'s overload."""
    schema = getattr(getattr(torch.ops.aten, entry.op_name), entry.overload_name)._schema
    positions, names, list_positions = [], set(), []
    for index, argument in enumerate(schema.arguments):
        kind = str(argument.type)
        if kind in ("Tensor", "Optional[Tensor]"):
            names.add(argument.name)
            if not argument.kwarg_only:
                positions.append(index)
        elif kind in ("List[Tensor]", "List[Optional[Tensor]]") and not argument.kwarg_only:
            list_positions.append(index)
    return TensorParameters(tuple(positions), frozenset(names), tuple(list_positions))


# 0-d tensors do not promote within a category: half-precision numbers stay exact as float32.
_SCALAR_DTYPES = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def _as_scalar_tensor(value: Any, like: torch.Tensor | None) -> Any:
    """``value`` as a 0-d tensor when it is a Python number, typed as the number would promote
    with ``like`` (half precisions as float32, which 0-d tensors do not promote above)."""
    if not isinstance(value, (bool, int, float, complex)):
        return value
    if like is None:
        return torch.tensor(value)
    dtype = torch.result_type(like, value)
    dtype = _SCALAR_DTYPES.get(dtype, dtype)
    return torch.tensor(value, dtype=dtype, device=like.device)


def _previous_kernel(overload: str, key: str) -> Any:
    """The kernel registered at ``key`` before gems, or None where ATen has none (the CUDA-only
    attention entry points on the CPU backend)."""
    try:
        return torch._C._dispatch_get_computed_kernel_for_dispatch_key(
            f"aten::{overload}", getattr(torch._C.DispatchKey, key)
        )
    except RuntimeError:
        return None


def _make_kernel(
    entry: registration.Registration, native: Any, recorder: OpRecorder | None
) -> Callable[..., Any]:
    impl, condition, overload = entry.impl, entry.condition, entry.overload
    tensors = tensor_parameters(entry)
    positions, names, has_complex = tensors.positions, tensors.names, tensors.has_complex

    def fall_through(keyset: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if native is None:
            raise NotImplementedError(
                f"aten::{overload}: no kernel for these arguments on this backend (gems takes "
                "only the calls its condition accepts, and ATen has no kernel here)"
            )
        like = next((arg for arg in args if isinstance(arg, torch.Tensor)), None)
        if positions:
            args = tuple(
                _as_scalar_tensor(arg, like) if index in positions else arg
                for index, arg in enumerate(args)
            )
        if kwargs and names:
            kwargs = {
                key: _as_scalar_tensor(value, like) if key in names else value
                for key, value in kwargs.items()
            }
        return native.call_boxed(keyset, *args, **kwargs)

    state = host._STATE

    def kernel(keyset: Any, *args: Any, **kwargs: Any) -> Any:
        if (
            state.depth
            or has_complex(args)
            or (condition is not None and not condition(*args, **kwargs))
        ):
            return fall_through(keyset, args, kwargs)
        if recorder is not None:
            recorder.record(overload)
        state.depth = 1
        try:
            return impl(*args, **kwargs)
        finally:
            state.depth = 0

    return kernel


class GemsSession:
    """A set of registered overloads, live until :meth:`close`."""

    def __init__(
        self,
        entries: Iterable[registration.Registration],
        record: bool = False,
        record_path: Path | str | None = None,
    ) -> None:
        vendor = current_vendor()
        if vendor.name == "cpu" and not _interpreting():
            raise RuntimeError(
                "gems_kernels: the cpu vendor runs kernels in Triton's interpreter; "
                "set TRITON_INTERPRET=1 before importing gems_kernels"
            )
        self.recorder = (
            OpRecorder(record_path or caches.cache_dir() / "recorded_ops.txt") if record else None
        )
        self.overloads: tuple[str, ...] = ()
        self._library: torch.library.Library | None = torch.library.Library("aten", "IMPL")
        registered = []
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Oo]verrid.*")
            for entry in entries:
                key = vendor.autograd_key if entry.autograd else vendor.dispatch_key
                native = _previous_kernel(entry.overload, key)
                kernel = _make_kernel(entry, native, self.recorder)
                self._library.impl(entry.overload, kernel, key, with_keyset=True)
                registered.append(entry.overload)
        self.overloads = tuple(registered)

    def close(self) -> None:
        """Unregister; the kernels registered before this session are active again."""
        if self._library is not None:
            self._library._destroy()
            self._library = None

    @property
    def is_open(self) -> bool:
        """Whether this session's kernels are registered."""
        return self._library is not None


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def enable(
    unused: registration.Names | None = None,
    record: bool = False,
    record_path: Path | str | None = None,
) -> GemsSession:
    """Register every table entry except those named in ``unused`` (op names, or a file of
    them; ``$GEMS_KERNELS_INCLUDE``/``$GEMS_KERNELS_EXCLUDE`` apply too), until :func:`disable`.
    """
    entries = registration.select(exclude=unused, exclude_field="unused")
    session = GemsSession(entries, record=record, record_path=record_path)
    _ENABLED.append(session)
    return session


def only_enable(
    include: registration.Names, record: bool = False, record_path: Path | str | None = None
) -> GemsSession:
    """Register only the entries named in ``include`` (less ``$GEMS_KERNELS_EXCLUDE``), until
    :func:`disable`."""
    session = GemsSession(
        registration.select(include=include), record=record, record_path=record_path
    )
    _ENABLED.append(session)
    return session


def enabled_sessions() -> tuple[GemsSession, ...]:
    """The sessions :func:`enable` and :func:`only_enable` opened that :func:`disable` has not
    closed yet (how a process, a TrainJob rank say, tells that gems is on)."""
    return tuple(_ENABLED)


def disable() -> None:
    """Close every session opened by :func:`enable` or :func:`only_enable`, newest first."""
    while _ENABLED:
        _ENABLED.pop().close()


@contextlib.contextmanager
def use_gems(
    include: registration.Names | None = None,
    exclude: registration.Names | None = None,
    record: bool = False,
    record_path: Path | str | None = None,
) -> Iterator[GemsSession]:
    """Register the selected entries inside the ``with`` block only: those named in ``include``
    (all when None) and not in ``exclude``, with the lists of the environment variables as in
    :func:`gems_kernels.registration.select`."""
    session = GemsSession(
        registration.select(include=include, exclude=exclude),
        record=record,
        record_path=record_path,
    )
    try:
        yield session
    finally:
        session.close()
