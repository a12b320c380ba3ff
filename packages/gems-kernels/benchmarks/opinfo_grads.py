"""PyTorch's OpInfo samples on the ops gems serves: gradients on gems against ATen's, judged
against float64.

An OpInfo of ``op_db`` counts as served when its first float32 sample calls a gems kernel under
``use_gems()``, forward or backward. For each served OpInfo with float32 gradients, every sample
(or the first ``--samples``) runs forward and backward on ATen and under ``use_gems()`` with the
same cotangents; gradients that ``torch.testing.assert_close`` (float32 defaults) finds apart are
measured against the float64 run of the same sample, each side's largest error relative to the
float64 gradient's largest magnitude. An op fails when gems raises where ATen does not, or when
gems' error is over 1e-5 and over ATen's (exit status 1). Random ops (dropout, sampling) and
samples that call a random kernel on gems (attention with dropout) are left out: gems' draws
are not ATen's by design; so are samples ATen refuses (``linalg.eig``'s gauge check).

    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/opinfo_grads.py --samples 4
    TRITON_INTERPRET=1 python packages/gems-kernels/benchmarks/opinfo_grads.py --ops matrix_exp cov
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import gems_kernels
import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_map

__all__ = ["Mismatch", "OpResult", "check", "gradients", "main", "served"]

RANDOM: Final = ("dropout", "rand", "bernoulli", "normal", "multinomial", "uniform", "empty")
"""OpInfo names left out, and (underscores stripped) the prefixes of random kernels' names."""
FP32_TARGET: Final = 1e-5


@dataclass(frozen=True)
class Mismatch:
    """One gradient of one sample that gems and ATen disagree on (float32 tolerances)."""

    sample: int
    gradient: int
    gems_error: float
    """Against float64, relative to the float64 gradient's largest magnitude."""
    aten_error: float

    @property
    def fails(self) -> bool:
        """gems over the float32 target and further from float64 than ATen."""
        return self.gems_error > FP32_TARGET and self.gems_error > self.aten_error


@dataclass
class OpResult:
    """One OpInfo's samples."""

    name: str
    samples: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Samples where gems raised and ATen did not."""
    skipped: int = 0
    """Samples ATen refuses, and samples that draw random numbers."""

    @property
    def fails(self) -> bool:
        return bool(self.errors) or any(m.fails for m in self.mismatches)


def _copy(sample: Any, dtype: torch.dtype) -> tuple[Any, Any, Any]:
    """The sample's input, args and kwargs as fresh leaves in ``dtype`` (floating tensors)."""

    def convert(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            return value.detach().to(dtype).requires_grad_(value.requires_grad)
        return value

    return convert(sample.input), tree_map(convert, sample.args), tree_map(convert, sample.kwargs)


def _context(gems: bool) -> contextlib.AbstractContextManager[Any]:
    return gems_kernels.use_gems() if gems else contextlib.nullcontext()


def served(op: Any, sample: Any) -> bool:
    """Whether ``sample`` of ``op`` calls a gems kernel, forward or backward (an op that raises
    on gems counts)."""
    with gems_kernels.use_gems(record=True) as session:
        try:
            gradients(op, sample, torch.float32, False, 0)  # on gems: inside use_gems()
        except Exception:  # raising under gems still means gems was reached
            return True
    assert session.recorder is not None
    return bool(session.recorder.seen)


def gradients(
    op: Any, sample: Any, dtype: torch.dtype, gems: bool, seed: int
) -> list[torch.Tensor | None] | None:
    """The gradients of ``sample``'s leaves in ``dtype`` for cotangents drawn by numpy from
    ``seed`` (gems serves ``torch.randn`` with a stream of its own); None when no output or no
    input takes a gradient."""
    inputs, args, kwargs = _copy(sample, dtype)
    with _context(gems):
        outputs = [
            t
            for t in tree_flatten(op(inputs, *args, **kwargs))[0]
            if isinstance(t, torch.Tensor) and t.requires_grad
        ]
        leaves = [
            t
            for t in tree_flatten((inputs, args, kwargs))[0]
            if isinstance(t, torch.Tensor) and t.requires_grad
        ]
        if not outputs or not leaves:
            return None
        rng = np.random.default_rng(seed)
        cotangents = [torch.from_numpy(rng.standard_normal(o.shape)).to(o.dtype) for o in outputs]
        grads = torch.autograd.grad(outputs, leaves, cotangents, allow_unused=True)
    return [None if g is None else g.detach() for g in grads]


def _error(got: torch.Tensor, reference: torch.Tensor) -> float:
    if not reference.numel():
        return 0.0
    scale = float(reference.abs().max()) or 1.0
    return float((got.double() - reference).abs().max()) / scale


def check(op: Any, samples: Sequence[Any]) -> OpResult:
    """Every sample's gradients on gems against ATen's, and against float64 where apart."""
    result = OpResult(f"{op.name}.{op.variant_test_name}".rstrip("."), len(samples))
    for index, sample in enumerate(samples):
        try:
            aten = gradients(op, sample, torch.float32, False, index)
        except RuntimeError:  # ATen refuses the sample itself (linalg.eig's gauge check)
            result.skipped += 1
            continue
        if aten is None:
            continue
        try:
            with gems_kernels.use_gems(record=True) as session:
                on_gems = gradients(op, sample, torch.float32, False, index)  # on gems: inside
        except Exception as error:  # reported as this sample's failure
            result.errors.append(f"sample {index}: {type(error).__name__}: {error}"[:160])
            continue
        assert on_gems is not None and session.recorder is not None
        if any(name.lstrip("_").startswith(RANDOM) for name in session.recorder.seen):
            result.skipped += 1  # dropout inside (attention): gems' draws are not ATen's
            continue
        reference: list[torch.Tensor | None] | None = None
        for position, (expected, actual) in enumerate(zip(aten, on_gems, strict=True)):
            if expected is None or actual is None:
                continue
            try:
                torch.testing.assert_close(actual, expected, equal_nan=True)
            except AssertionError:
                if reference is None:
                    reference = gradients(op, sample, torch.float64, False, index)
                exact = reference[position] if reference else None
                assert exact is not None, "float64 has no gradient where float32 has one"
                result.mismatches.append(
                    Mismatch(index, position, _error(actual, exact), _error(expected, exact))
                )
    return result


def run(names: Sequence[str] | None, samples: int) -> Iterator[OpResult]:
    """:func:`check` on every served OpInfo (of ``names`` when given) with float32 gradients."""
    from torch.testing._internal.common_methods_invocations import op_db

    for op in op_db:
        if (names and op.name not in names) or any(word in op.name for word in RANDOM):
            continue
        if not op.supports_autograd or torch.float32 not in op.supported_backward_dtypes("cpu"):
            continue
        torch.manual_seed(0)
        drawn = list(op.sample_inputs("cpu", torch.float32, requires_grad=True))
        if drawn and served(op, drawn[0]):
            yield check(op, drawn[:samples] if samples else drawn)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", nargs="+", help="OpInfo names (all served ones by default)")
    parser.add_argument("--samples", type=int, default=0, help="the first N samples (0: all)")
    args = parser.parse_args(argv)
    started, results = time.perf_counter(), []
    for result in run(args.ops, args.samples):
        results.append(result)
        for mismatch in result.mismatches:
            print(f"{result.name}: {mismatch}", flush=True)
        for error in result.errors:
            print(f"{result.name}: gems raised, {error}", flush=True)
    failed = [r.name for r in results if r.fails]
    close = sum(not r.mismatches and not r.errors for r in results)
    seconds = time.perf_counter() - started
    print(f"{len(results)} served OpInfos with float32 gradients, "
          f"{sum(r.samples for r in results)} samples ({sum(r.skipped for r in results)} "
          f"refused by ATen or random): {close} close to ATen, "
          f"{len(results) - close - len(failed)} apart but as close to float64, "
          f"failed: {', '.join(failed) or 'none'} ({seconds:.0f} s)")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
