"""Which ATen ops of a workload ran on gems kernels and which ran natively.

:class:`NativeOpTrace` is a ``TorchDispatchMode`` that sees every ATen call below autograd. A call
counts as gems when its overload is in the registration table and the entry's condition accepts
the arguments (the rule :mod:`gems_kernels.dispatch` applies); views, metadata and uninitialised
allocations are listed apart because they compute nothing, and so are copies of a tensor onto its
own memory (what Triton's CPU interpreter does to every kernel argument after a launch). Calls
made by a gems kernel's own host code run on ATen (every registered overload falls through there),
so they are counted apart too: a sum or a fill in a gems kernel's host code is ATen's work.

An op whose only kernel is a composite one (no kernel at the backend key) counts as composite
when its decomposition calls ATen ops that compute (they are counted in turn), and as native when
it does the work itself: on the CPU ``convolution``, ``mkldnn_convolution`` and
``convolution_backward`` have composite kernels only, which call oneDNN directly. What counts is
whether the kernel does the work, not its dispatch key. An implicit composite (``softmax.int``)
reaches the trace only when an explicit composite's kernel calls it below autograd
(``_safe_softmax``); it is decomposed the same way, as the dispatcher would run it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gems_kernels import dispatch, host, registration
from gems_kernels.backends import current_vendor

__all__ = ["METADATA_OPS", "NativeOpTrace", "overload_name"]

# Ops that compute nothing: allocation without initialisation, aliasing, metadata and reading
# one value back to the host.
METADATA_OPS: Final[frozenset[str]] = frozenset(
    {
        "empty.memory_format",
        "empty_like.default",
        "empty_strided.default",
        "new_empty.default",
        "new_empty_strided.default",
        "detach.default",
        "lift_fresh.default",
        "_local_scalar_dense.default",
        "is_nonzero.default",
        "resize_.default",
        "set_.source_Storage",
        "set_.source_Storage_storage_offset",
        "_has_compatible_shallow_copy_type.default",
        "_unsafe_view.default",
        "_record_function_enter_new.default",
        "_record_function_exit._RecordFunction",
        "_record_function_exit.default",
        "as_strided_.default",
        "_nnpack_available.default",
        "can_cast.default",
    }
)


def overload_name(func: torch._ops.OpOverload) -> str:
    """``add.Tensor`` for ``aten::add.Tensor`` (``mm.default`` for overloads without a name)."""
    return f"{func._schema.name.split('::', 1)[1]}.{func._overloadname}"


def _table_name(name: str) -> str:
    return name.removesuffix(".default")


def _copies_onto_itself(name: str, args: tuple[Any, ...]) -> bool:
    """Whether the call is ``copy_`` of a tensor onto the very same elements (the interpreter
    writing a launch's arguments back to their own storage): nothing is computed."""
    if name != "copy_.default":
        return False
    target: torch.Tensor = args[0]
    source: torch.Tensor = args[1]
    return (
        target.data_ptr() == source.data_ptr()
        and target.dtype == source.dtype
        and target.shape == source.shape
        and target.stride() == source.stride()
    )


class NativeOpTrace(TorchDispatchMode):
    """Counts ATen calls by overload: ``gems``, ``native``, ``metadata``, ``host`` (computing
    calls from a gems kernel's host code, which run on ATen) and ``composite`` (composites,
    whose parts are counted)."""

    def __init__(self, entries: Mapping[str, registration.Registration] | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # mypy skips the exclude for super()
        self.entries = (
            {entry.overload: entry for entry in registration.REGISTRATIONS}
            if entries is None
            else dict(entries)
        )
        self.gems: Counter[str] = Counter()
        self.native: Counter[str] = Counter()
        self.metadata: Counter[str] = Counter()
        self.host: Counter[str] = Counter()
        self.composite: Counter[str] = Counter()
        self._composites: dict[torch._ops.OpOverload, torch._C.DispatchKey | None] = {}

    def __torch_dispatch__(
        self,
        func: torch._ops.OpOverload,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        name = overload_name(func)
        composite = None if name in METADATA_OPS else self._composite_key(func)
        if composite is not None:
            # No kernel of its own at the backend (ones_like, zeros, full, ...): run the
            # decomposition under this mode so that the ops it calls are counted instead; if
            # none of them computes, the composite kernel did the work and counts as native.
            before = self._work()
            with self:
                result = func._op_dk(composite, *args, **kwargs)
            (self.composite if self._work() > before else self.native)[name] += 1
            return result
        self._count(name, func, args, kwargs)
        return func(*args, **kwargs)

    def _work(self) -> int:
        """How many computing calls (anything but metadata) the trace has counted so far."""
        return sum(
            counter.total() for counter in (self.gems, self.native, self.host, self.composite)
        )

    def _composite_key(self, func: torch._ops.OpOverload) -> torch._C.DispatchKey | None:
        """The composite key whose kernel runs ``func`` (explicit first), or None when ``func``
        has a kernel at the backend or in gems' table."""
        if host.depth() or func.is_view:
            return None
        if func not in self._composites:
            name = func._schema.name
            if func._overloadname != "default":
                name = f"{name}.{func._overloadname}"
            has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
            keys = [
                key
                for key in ("CompositeExplicitAutograd", "CompositeImplicitAutograd")
                if has_kernel(name, key)
            ]
            own = has_kernel(name, current_vendor().dispatch_key) or (
                _table_name(overload_name(func)) in self.entries
            )
            self._composites[func] = (
                None if own or not keys else getattr(torch._C.DispatchKey, keys[0])
            )
        return self._composites[func]

    def _count(
        self, name: str, func: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        if func.is_view or name in METADATA_OPS or _copies_onto_itself(name, args):
            self.metadata[name] += 1
        elif host.depth():
            self.host[name] += 1
        elif self._runs_on_gems(name, args, kwargs):
            self.gems[name] += 1
        else:
            self.native[name] += 1

    def _runs_on_gems(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        entry = self.entries.get(_table_name(name))
        if entry is None or dispatch.tensor_parameters(entry).has_complex(args):
            return False
        return entry.condition is None or bool(entry.condition(*args, **kwargs))
