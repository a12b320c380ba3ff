"""Triton source for a pointwise kernel of a given rank and operand layout.

The generated kernel walks the flat index space of the (collapsed) output shape, turns each flat
index into per-dimension indices and from those into each operand's offset through its strides.
That covers broadcasting (stride 0), transposed, sliced and expanded operands alike.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KernelSpec", "render_kernel"]


@dataclass(frozen=True)
class KernelSpec:
    """What one generated kernel is specialised for."""

    rank: int
    # Per argument of the scalar function: "tensor", "scalar" (a number taken as is), "param"
    # (a non-broadcast argument, passed through unchanged) or "float64" (a Python float passed
    # as its int64 bit pattern, because Triton would pass it as float32).
    kinds: tuple[str, ...]
    # Per argument: cast to the computation dtype after loading.
    casts: tuple[bool, ...]
    num_outputs: int
    compute_dtype: str
    index64: bool
    # Per output: its element type (``tl.bfloat16``, ...).
    out_dtypes: tuple[str, ...] = ()
    # Convert to bfloat16 through :func:`~gems_kernels.pointwise.rounding.to_bfloat16` (the
    # interpreter's own casts truncate, and reinterpret integers).
    exact_bfloat16: bool = False


def render_kernel(spec: KernelSpec) -> str:
    """Python source of a module defining ``_pointwise_kernel`` for ``spec``.

    The module expects ``_scalar_fn`` (the ``@triton.jit`` element function) in its globals.
    """
    dims = range(spec.rank)
    params: list[str] = []
    for position, kind in enumerate(spec.kinds):
        params.append(f"in{position}")
        if kind == "tensor":
            params.extend(f"in{position}_stride{d}" for d in dims)
    for output in range(spec.num_outputs):
        params.append(f"out{output}")
        params.extend(f"out{output}_stride{d}" for d in dims)
    params.extend(f"shape{d}" for d in dims)
    params.extend(["numel", "BLOCK: tl.constexpr"])

    lines = [
        "import triton",
        "import triton.language as tl",
        "from gems_kernels.pointwise.rounding import convert as _convert",
        "from gems_kernels.pointwise.rounding import to_float64 as _to_float64",
        "",
        "",
        "@triton.jit",
        f"def _pointwise_kernel({', '.join(params)}):",
        "    pid = tl.program_id(0)",
    ]
    if spec.index64:
        lines.append("    offsets = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)")
    else:
        lines.append("    offsets = pid * BLOCK + tl.arange(0, BLOCK)")
    lines.extend(["    mask = offsets < numel", "    remainder = offsets"])
    for d in reversed(dims):
        if d == 0:
            lines.append("    index0 = remainder")
        else:
            lines.append(f"    index{d} = remainder % shape{d}")
            lines.append(f"    remainder = remainder // shape{d}")

    def offset(name: str) -> str:
        return " + ".join(f"index{d} * {name}_stride{d}" for d in dims)

    values: list[str] = []
    for position, kind in enumerate(spec.kinds):
        name = f"in{position}"
        if kind == "tensor":
            # Masked-off lanes read 1, a value every op takes without a floating-point error
            # (0 would make x / y and log(x) raise NumPy warnings under the interpreter).
            value = f"tl.load({name} + ({offset(name)}), mask=mask, other=1)"
            if spec.casts[position]:
                value = _cast(value, spec.compute_dtype, spec.exact_bfloat16)
        elif kind == "float64":
            value = f"_to_float64(tl.full([BLOCK], {name}, tl.int64))"
        elif kind == "scalar" and spec.casts[position]:
            value = f"tl.full([BLOCK], {name}, {spec.compute_dtype})"
        else:
            value = name
        lines.append(f"    value{position} = {value}")
        values.append(f"value{position}")
    results = ", ".join(f"result{o}" for o in range(spec.num_outputs))
    lines.append(f"    {results} = _scalar_fn({', '.join(values)})")
    for output in range(spec.num_outputs):
        result = f"result{output}"
        if spec.exact_bfloat16 and spec.out_dtypes[output] == "tl.bfloat16":
            result = f"_convert({result}, tl.bfloat16)"
        lines.append(f"    tl.store(out{output} + ({offset(f'out{output}')}), {result}, mask=mask)")
    return "\n".join(lines) + "\n"


def _cast(value: str, dtype: str, exact_bfloat16: bool) -> str:
    """Source converting ``value`` to ``dtype``."""
    if exact_bfloat16:
        return f"_convert({value}, {dtype})"
    return f"{value}.to({dtype})"
