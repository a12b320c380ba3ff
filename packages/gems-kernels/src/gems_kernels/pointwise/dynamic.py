"""``@pointwise_dynamic``: turn a ``@triton.jit`` element function into a tensor operator.

The decorated function sees loaded values (already cast to the computation dtype where its
promotion rule says so) and returns one value per output. The operator takes tensors or numbers at
tensor positions, broadcasts them, promotes types as ``torch._prims_common`` does, allocates or
checks outputs (``out0=``, ``out1=``, ...; an input passed as output makes the op in-place) and
launches a kernel generated for the collapsed rank of the operands.
"""

from __future__ import annotations

import importlib.util
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast, overload

import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

from gems_kernels import caches
from gems_kernels.backends import current_vendor, launch_config, tuning
from gems_kernels.pointwise.codegen import KernelSpec, render_kernel

__all__ = [
    "PointwiseOp",
    "Promotion",
    "needs_int64_indexing",
    "pointwise_dynamic",
    "supports_dtype",
]

_INT32_MAX: Final = 2**31 - 1
_TRITON_DTYPES: Final[dict[torch.dtype, str]] = {
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.float32: "tl.float32",
    torch.float64: "tl.float64",
    torch.int8: "tl.int8",
    torch.int16: "tl.int16",
    torch.int32: "tl.int32",
    torch.int64: "tl.int64",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
}
_KERNELS: dict[tuple[int, KernelSpec], Any] = {}
# Plans remembered per operator; the oldest is dropped beyond this many.
_MAX_PLANS: Final = 256
# One output's promotion rule: the argument positions and the promotion kind.
_Rule = tuple[tuple[int, ...], str]
# What an operator returns: a tensor, or a tuple of them for several outputs.
_R = TypeVar("_R")


def supports_dtype(dtype: torch.dtype) -> bool:
    """Whether generated kernels load and store ``dtype`` (complex and the float8s: no)."""
    return dtype in _TRITON_DTYPES


@dataclass(frozen=True)
class Promotion:
    """How one output's dtype follows from some arguments (``kind`` names a promotion kind)."""

    args: tuple[int, ...]
    kind: str = "DEFAULT"

    def dtypes(self, arguments: Sequence[Any]) -> tuple[torch.dtype, torch.dtype]:
        """(computation dtype, result dtype) for these arguments."""
        kind = ELEMENTWISE_TYPE_PROMOTION_KIND[self.kind]
        return elementwise_dtypes(*(arguments[i] for i in self.args), type_promotion_kind=kind)


def _load_kernel(spec: KernelSpec, scalar_fn: Any) -> Any:
    """The generated kernel for ``spec``, written once under the cache dir and imported."""
    memo = (id(scalar_fn), spec)
    kernel = _KERNELS.get(memo)
    if kernel is not None:
        return kernel
    source = render_kernel(spec)
    key = caches.cache_key(source)
    path = caches.cache_dir() / "pointwise" / f"kernel_{key}.py"
    if not path.exists() or path.read_text() != source:
        caches.atomic_write(path, source)
    module_spec = importlib.util.spec_from_file_location(f"gems_kernels_generated_{key}", path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load generated kernel from {path}")
    module = importlib.util.module_from_spec(module_spec)
    module.__dict__["_scalar_fn"] = scalar_fn
    module_spec.loader.exec_module(module)
    kernel = module._pointwise_kernel
    _KERNELS[memo] = kernel
    return kernel


def _broadcast_strides(tensor: torch.Tensor, shape: Sequence[int]) -> list[int]:
    """Strides of ``tensor`` viewed at the broadcast ``shape`` (0 where it is broadcast)."""
    pad = len(shape) - tensor.dim()
    strides = [0] * pad
    for size, stride, target in zip(tensor.shape, tensor.stride(), shape[pad:], strict=True):
        strides.append(stride if size == target else 0)
    return strides


def _collapse(shape: Sequence[int], strides: list[list[int]]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 dims and merge neighbours that every operand walks contiguously."""
    sizes: list[int] = []
    merged: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if sizes and all(
            s[-1] == operand[d] * size for s, operand in zip(merged, strides, strict=True)
        ):
            sizes[-1] *= size
            for s, operand in zip(merged, strides, strict=True):
                s[-1] = operand[d]
            continue
        sizes.append(size)
        for s, operand in zip(merged, strides, strict=True):
            s.append(operand[d])
    if not sizes:
        return [1], [[0] for _ in strides]
    return sizes, merged


def needs_int64_indexing(
    numel: int, sizes: Sequence[int], strides: Sequence[Sequence[int]]
) -> bool:
    """Whether the flat index or any operand's largest offset exceeds int32."""
    extent = max(
        (sum((size - 1) * stride for size, stride in zip(sizes, s, strict=True)) for s in strides),
        default=0,
    )
    return max(numel, extent) > _INT32_MAX


class PointwiseOp(Generic[_R]):
    """A tensor operator generated from a scalar ``@triton.jit`` function.

    It returns ``_R``: one tensor for one output, else a tuple with a tensor per output.
    """

    def __init__(
        self,
        scalar_fn: Any,
        is_tensor: Sequence[bool],
        promotions: Sequence[Promotion],
        any_output_dtype: bool = False,
    ) -> None:
        self.scalar_fn = scalar_fn
        self.any_output_dtype = any_output_dtype
        self.is_tensor = tuple(is_tensor)
        self.promotions = tuple(promotions)
        self.num_outputs = len(self.promotions)
        self._plans: dict[tuple[Any, ...], _Plan] = {}
        self.__name__ = getattr(scalar_fn, "__name__", "pointwise")
        self.__doc__ = getattr(scalar_fn, "__doc__", None)

    def __call__(self, *args: Any, **outputs: torch.Tensor | None) -> _R:
        key = _signature(args, outputs)
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            return self._plan_and_run(key, args, outputs)
        # The fast path: same layouts and dtypes as a previous call, so only allocation and
        # the launch remain.
        results: list[torch.Tensor] = []
        for index, (mode, dtype) in enumerate(plan.allocations):
            if mode == "given":
                given = outputs[f"out{index}"]
                assert given is not None  # the signature recorded a tensor here
                results.append(given)
            elif mode == "like":
                results.append(torch.empty_like(args[plan.like_position], dtype=dtype))
            else:
                results.append(torch.empty(plan.shape, dtype=dtype, device=plan.device))
        if plan.numel:
            plan.launch(args, results)
        return self._result(results)

    def _result(self, results: list[torch.Tensor]) -> _R:
        # _R is what pointwise_dynamic's overloads derived from the number of outputs.
        return cast(_R, results[0] if self.num_outputs == 1 else tuple(results))

    def _plan_and_run(
        self, key: tuple[Any, ...] | None, args: tuple[Any, ...], outputs: dict[str, Any]
    ) -> _R:
        if len(args) != len(self.is_tensor):
            raise TypeError(
                f"{self.__name__}: expected {len(self.is_tensor)} arguments, got {len(args)}"
            )
        unknown = set(outputs) - {f"out{i}" for i in range(self.num_outputs)}
        if unknown:
            raise TypeError(f"{self.__name__}: unexpected keyword arguments {sorted(unknown)}")
        positions = [
            i
            for i, (a, t) in enumerate(zip(args, self.is_tensor, strict=True))
            if t and isinstance(a, torch.Tensor)
        ]
        if not positions:
            # Numbers only (``torch.add(2.5, 1.5)``): ATen computes on 0-d tensors.
            return self(
                *(
                    torch.tensor(a) if t and isinstance(a, (bool, int, float)) else a
                    for a, t in zip(args, self.is_tensor, strict=True)
                ),
                **outputs,
            )
        tensors = [args[i] for i in positions]
        dtypes = [promotion.dtypes(args) for promotion in self.promotions]
        compute_dtype = dtypes[0][0]
        shape = list(torch.broadcast_shapes(*(t.shape for t in tensors)))
        # In-place and fill-like calls: inputs broadcast into a given output's shape.
        for given in outputs.values():
            if given is not None and given.numel():
                try:
                    if list(torch.broadcast_shapes(given.shape, shape)) == list(given.shape):
                        shape = list(given.shape)
                except RuntimeError:
                    pass  # not broadcastable: the output is resized below, as ATen does
        device = tensors[0].device
        results = []
        allocations: list[tuple[str, torch.dtype]] = []
        resized = False
        for index, (_, result_dtype) in enumerate(dtypes):
            given = outputs.get(f"out{index}")
            if given is None:
                like = tensors[0]
                if list(like.shape) == shape:
                    # Keeps a dense input's memory layout (e.g. transposed), like ATen.
                    given = torch.empty_like(like, dtype=result_dtype)
                    allocations.append(("like", result_dtype))
                else:
                    given = torch.empty(shape, dtype=result_dtype, device=device)
                    allocations.append(("empty", result_dtype))
            else:
                if not self.any_output_dtype and not torch.can_cast(result_dtype, given.dtype):
                    raise RuntimeError(
                        f"{self.__name__}: result type {result_dtype} can't be cast to the "
                        f"desired output type {given.dtype} (out{index})"
                    )
                if list(given.shape) != shape:
                    given.resize_(shape)
                    resized = True
                allocations.append(("given", given.dtype))
            results.append(given)
        numel = math.prod(shape)
        plan = _Plan(
            allocations=allocations,
            like_position=positions[0],
            shape=shape,
            device=device,
            numel=numel,
            launch=self._launcher(args, results, shape, numel, compute_dtype),
        )
        if numel:
            plan.launch(args, results)
        if key is not None and not resized:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.pop(next(iter(self._plans)))
            self._plans[key] = plan
        return self._result(results)

    def _launcher(
        self,
        args: Sequence[Any],
        results: list[torch.Tensor],
        shape: list[int],
        numel: int,
        compute_dtype: torch.dtype,
    ) -> Callable[[Sequence[Any], list[torch.Tensor]], None]:
        """A function launching the kernel for arguments laid out like ``args``/``results``."""
        kinds = []
        operands: list[torch.Tensor] = []
        for arg, tensor in zip(args, self.is_tensor, strict=True):
            if tensor and isinstance(arg, torch.Tensor):
                kinds.append("tensor")
                operands.append(arg)
            elif compute_dtype == torch.float64 and type(arg) is float:
                kinds.append("float64")
            else:
                kinds.append("scalar" if tensor else "param")
        strides = [_broadcast_strides(t, shape) for t in (*operands, *results)]
        sizes, strides = _collapse(shape, strides)
        casted = set(self.promotions[0].args)
        spec = KernelSpec(
            rank=len(sizes),
            kinds=tuple(kinds),
            casts=tuple(i in casted for i in range(len(args))),
            num_outputs=self.num_outputs,
            compute_dtype=_TRITON_DTYPES[compute_dtype],
            index64=needs_int64_indexing(numel, sizes, strides),
            out_dtypes=tuple(_TRITON_DTYPES[r.dtype] for r in results),
            exact_bfloat16=current_vendor().name == "cpu",
        )
        if not numel:
            return _no_launch
        kernel = _load_kernel(spec, self.scalar_fn)
        config = launch_config(current_vendor().name, "pointwise")
        block = min(config.block_size, tuning.next_power_of_2(max(numel, 1)))
        return _compile_launch(
            kernel, kinds, strides, [*sizes, numel], (tuning.cdiv(numel, block),),
            block, config.num_warps,
        )  # fmt: skip


def _no_launch(call_args: Sequence[Any], call_results: list[torch.Tensor]) -> None:
    """The launch of a plan without elements."""


def _compile_launch(
    kernel: Any,
    kinds: Sequence[str],
    strides: Sequence[Sequence[int]],
    tail: Sequence[int],
    grid: tuple[int, ...],
    block: int,
    num_warps: int,
) -> Callable[[Sequence[Any], list[torch.Tensor]], None]:
    """A launch function with every stride, size and option of the plan written in as a
    constant: at steady state a call only indexes its arguments."""
    parameters: list[str] = []
    stride_iter = iter(strides)
    for position, kind in enumerate(kinds):
        parameters.append(f"_bits(a[{position}])" if kind == "float64" else f"a[{position}]")
        if kind == "tensor":
            parameters.extend(str(int(s)) for s in next(stride_iter))
    for output, output_strides in enumerate(stride_iter):
        parameters.append(f"r[{output}]")
        parameters.extend(str(int(s)) for s in output_strides)
    parameters.extend(str(int(v)) for v in tail)
    source = (
        "def launch(a, r):\n"
        f"    _kernel.run({', '.join(parameters)}, BLOCK={block}, num_warps={num_warps}, "
        "grid=_grid, warmup=False)\n"
    )
    namespace: dict[str, Any] = {"_kernel": kernel, "_grid": grid, "_bits": _float64_bits}
    exec(compile(source, "<gems pointwise launch>", "exec"), namespace)
    launch: Callable[[Sequence[Any], list[torch.Tensor]], None] = namespace["launch"]
    return launch


def _float64_bits(value: float) -> int:
    """The IEEE bit pattern of ``value`` as a signed int64."""
    return int(struct.unpack("<q", struct.pack("<d", value))[0])


@dataclass(frozen=True)
class _Plan:
    """What a call with a given argument signature needs besides the arguments themselves."""

    allocations: list[tuple[str, torch.dtype]]
    like_position: int
    shape: list[int]
    device: torch.device
    numel: int
    launch: Callable[[Sequence[Any], list[torch.Tensor]], None]


_NUMBER_TYPES: Final = (type(None), bool, int, float)


def _signature(args: tuple[Any, ...], outputs: dict[str, Any]) -> tuple[Any, ...] | None:
    """A hashable summary of everything a plan depends on: tensor layouts, dtypes and devices,
    scalar types and the given outputs. None when an argument cannot be summarised."""
    key: list[Any] = []
    for arg in args:
        if isinstance(arg, torch.Tensor):
            key.append((arg.shape, arg.stride(), arg.dtype, arg.device))
        elif type(arg) in _NUMBER_TYPES:
            key.append(type(arg))
        else:
            return None
    for name in sorted(outputs) if outputs else ():
        given = outputs[name]
        if isinstance(given, torch.Tensor):
            key.append((name, given.shape, given.stride(), given.dtype, given.device))
        elif given is None:
            key.append((name, None))
        else:
            return None
    return tuple(key)


# Overlap: the second overload also takes a tuple of two rules; the first, checked first, wins.
@overload
def pointwise_dynamic(  # type: ignore[overload-overlap]
    *, is_tensor: Sequence[bool], promotions: tuple[_Rule, _Rule], casting: str = ...
) -> Callable[[Any], PointwiseOp[tuple[torch.Tensor, torch.Tensor]]]: ...


@overload
def pointwise_dynamic(
    *, is_tensor: Sequence[bool], promotions: Sequence[_Rule] = ..., casting: str = ...
) -> Callable[[Any], PointwiseOp[torch.Tensor]]: ...


def pointwise_dynamic(
    *,
    is_tensor: Sequence[bool],
    promotions: Sequence[_Rule] = (((0,), "DEFAULT"),),
    casting: str = "same_kind",
) -> Callable[[Any], PointwiseOp[Any]]:
    """Decorate a ``@triton.jit`` element function into a :class:`PointwiseOp`.

    ``is_tensor`` marks the arguments that may be tensors (broadcast together; numbers are also
    accepted there); ``promotions`` gives, per output, the argument positions and the promotion
    kind (``DEFAULT``, ``INT_TO_FLOAT``, ``ALWAYS_BOOL``, ``COMPLEX_TO_FLOAT``, ``NO_OPMATH``,
    ``BOOL_TO_LONG``). Loaded values of the first output's arguments are cast to its computation
    dtype. For type checkers, give a two-output operator's rules as a tuple of two: its result then
    types as a pair of tensors; other rules type it as returning one tensor. ``casting``: a given
    output must be a dtype the result casts to in kind (``same_kind``, ATen's rule for ``out=``)
    or may be any dtype (``unsafe``, a copy's rule: float to int truncates).
    """
    if casting not in ("same_kind", "unsafe"):
        raise ValueError(f"casting: expected 'same_kind' or 'unsafe', got {casting!r}")
    rules = [Promotion(tuple(positions), kind) for positions, kind in promotions]
    if not rules:
        raise ValueError("promotions: expected at least one output rule")
    for rule in rules:
        if rule.kind not in ELEMENTWISE_TYPE_PROMOTION_KIND.__members__:
            raise ValueError(f"promotions: unknown promotion kind {rule.kind!r}")
        if any(not 0 <= i < len(is_tensor) for i in rule.args):
            raise ValueError(f"promotions: argument index out of range in {rule.args}")

    def decorate(scalar_fn: Any) -> PointwiseOp[Any]:
        return PointwiseOp(scalar_fn, is_tensor, rules, any_output_dtype=casting == "unsafe")

    return decorate
