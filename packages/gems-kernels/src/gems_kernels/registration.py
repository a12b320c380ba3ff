"""The registration table: which ATen overload runs which gems implementation, and when.

This is the only place that ties implementations to the dispatcher; importing an op module
registers nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import torch

from gems_kernels.ops import (
    activations,
    advanced_indexing,
    amp,
    arg_reductions,
    arithmetic,
    attention_entry,
    batch_norm,
    comparisons,
    convolution,
    copies,
    foreach,
    fused_adam,
    hard_activations,
    logical,
    logsumexp,
    matmul,
    moments,
    mse_loss,
    nonzero,
    norms,
    one_hot,
    out_variants,
    pooling,
    random,
    reductions,
    scans,
    scatter_gather,
    selection,
    ternary,
    unary_math,
    upsampling,
    view_backward,
)
from gems_kernels.ops.attention import is_supported_attention, scaled_dot_product_attention
from gems_kernels.ops.copies import cat, constant_pad_nd, fill_, repeat, stack, zero_
from gems_kernels.ops.cross_entropy import cross_entropy_loss, is_plain_cross_entropy
from gems_kernels.ops.dropout import native_dropout, native_dropout_backward
from gems_kernels.ops.embedding import (
    embedding,
    embedding_dense_backward,
    is_unscaled_backward,
)
from gems_kernels.ops.group_norm import group_norm_backward, group_norm_forward
from gems_kernels.ops.indexing import index_add, index_select
from gems_kernels.ops.layer_norm import layer_norm_backward, layer_norm_forward
from gems_kernels.ops.logical import is_integral
from gems_kernels.ops.matmul import addmm, bmm, is_matmul_dtype, mm, mv
from gems_kernels.ops.nll_loss import is_class_scores, nll_loss_backward, nll_loss_forward
from gems_kernels.ops.ranges import arange_out
from gems_kernels.ops.rms_norm import rms_norm
from gems_kernels.ops.softmax import (
    log_softmax,
    log_softmax_backward,
    softmax,
    softmax_backward,
)
from gems_kernels.ops.sorting import (
    sort,
    sort_fits,
    sort_stable,
    sort_stable_fits,
    topk,
    topk_fits,
)
from gems_kernels.ops.triangular import tril, triu
from gems_kernels.ops.variants import Variants

__all__ = ["REGISTRATIONS", "Registration", "all_registered_ops", "matches", "select"]


@dataclass(frozen=True)
class Registration:
    """One ATen overload, its implementation and the condition under which it applies.

    ``autograd`` entries register at the vendor's autograd key because the overload is a
    composite that ATen would otherwise decompose before reaching the backend key; their
    implementation records its own backward.
    """

    overload: str
    impl: Callable[..., Any]
    condition: Callable[..., bool] | None = None
    autograd: bool = False

    @property
    def op_name(self) -> str:
        """The overload's operator name without the overload suffix."""
        return self.overload.split(".", 1)[0]

    @property
    def overload_name(self) -> str:
        """The overload suffix; ``default`` when the name has none."""
        return self.overload.split(".", 1)[1] if "." in self.overload else "default"


def _entries(impl: Callable[..., Any], *overloads: str, **options: Any) -> list[Registration]:
    return [Registration(overload, impl, **options) for overload in overloads]


def _pointwise(name: str, family: Variants, **options: Any) -> list[Registration]:
    """``name``, ``name_`` and ``name.out`` for a pointwise op with positional arguments."""
    return [
        Registration(name, family.functional, **options),
        Registration(f"{name}_", family.inplace, **options),
        Registration(f"{name}.out", family.out, **options),
    ]


def _binary(name: str, family: Variants, **options: Any) -> list[Registration]:
    """The Tensor and Scalar overloads of a binary pointwise op, functional and in-place."""
    return [
        *_entries(family.functional, f"{name}.Tensor", f"{name}.Scalar", **options),
        *_entries(family.inplace, f"{name}_.Tensor", f"{name}_.Scalar", **options),
        Registration(f"{name}.Tensor_out", family.out, **options),
    ]


def _bitwise(name: str, family: Variants) -> list[Registration]:
    """Bitwise ops: integer and bool operands only."""
    return [
        *_entries(family.functional, f"{name}.Tensor", f"{name}.Scalar", condition=is_integral),
        *_entries(family.inplace, f"{name}_.Tensor", f"{name}_.Scalar", condition=is_integral),
    ]


_floating = arithmetic.is_floating
_all_floating = foreach.all_floating
_floating_input = reductions.is_floating_input
_advanced_index = advanced_indexing.is_advanced_index
_index_put = advanced_indexing.is_index_put
_gather_shape = scatter_gather.is_gather_shape
_scatter_add = scatter_gather.fits_scatter_add
_scatter_reduce = scatter_gather.fits_scatter_reduce
_hard = hard_activations.is_floating_activation


def _no_bool(self: Any, other: Any = None, *args: Any, **kwargs: Any) -> bool:
    """sub, neg and abs refuse bool operands in ATen: those calls go there for its error."""
    return not any(
        isinstance(x, bool) or (isinstance(x, torch.Tensor) and x.dtype == torch.bool)
        for x in (self, other)
    )


def _float32_target(self: Any, *args: Any, **kwargs: Any) -> bool:
    return bool(self.dtype == torch.float32)


def _grad_of_class_scores(grad: Any, scores: Any, target: Any, *args: Any) -> bool:
    return is_class_scores(scores, target)


REGISTRATIONS: Final[tuple[Registration, ...]] = (
    # Binary arithmetic.
    *_entries(arithmetic.add, "add.Tensor", "add.Scalar"),
    *_entries(arithmetic.add_, "add_.Tensor", "add_.Scalar"),
    Registration("add.out", arithmetic.add_out),
    *_entries(arithmetic.sub, "sub.Tensor", "sub.Scalar", condition=_no_bool),
    *_entries(arithmetic.sub_, "sub_.Tensor", "sub_.Scalar", condition=_no_bool),
    *_entries(arithmetic.mul, "mul.Tensor", "mul.Scalar"),
    *_entries(arithmetic.mul_, "mul_.Tensor", "mul_.Scalar"),
    Registration("mul.out", arithmetic.mul_out),
    *_entries(arithmetic.div, "div.Tensor", "div.Scalar"),
    *_entries(arithmetic.div_, "div_.Tensor", "div_.Scalar"),
    *_entries(arithmetic.div_mode, "div.Tensor_mode", "div.Scalar_mode", condition=_floating),
    *_entries(arithmetic.div_mode_, "div_.Tensor_mode", "div_.Scalar_mode", condition=_floating),
    *_entries(arithmetic.remainder, "remainder.Tensor", "remainder.Scalar", condition=_floating),
    *_entries(arithmetic.remainder_, "remainder_.Tensor", "remainder_.Scalar", condition=_floating),
    *_entries(arithmetic.pow_tensor, "pow.Tensor_Tensor", "pow.Scalar", condition=_floating),
    Registration("pow_.Tensor", arithmetic.pow_tensor_, condition=_floating),
    Registration("pow_.Scalar", arithmetic.pow_tensor_, condition=_floating),
    Registration("pow.Tensor_Scalar", arithmetic.pow_scalar, condition=_floating),
    Registration("maximum", arithmetic.maximum),
    Registration("minimum", arithmetic.minimum),
    # Optimizer arithmetic: three operands, lists of tensors, fused Adam, gradient scaling.
    Registration("addcmul", ternary.addcmul, condition=_all_floating),
    Registration("addcmul_", ternary.addcmul_, condition=_all_floating),
    Registration("addcmul.out", ternary.addcmul_out, condition=_all_floating),
    Registration("addcdiv", ternary.addcdiv, condition=_all_floating),
    Registration("addcdiv_", ternary.addcdiv_, condition=_all_floating),
    Registration("addcdiv.out", ternary.addcdiv_out, condition=_all_floating),
    *_entries(ternary.lerp, "lerp.Scalar", "lerp.Tensor", condition=_all_floating),
    *_entries(ternary.lerp_, "lerp_.Scalar", "lerp_.Tensor", condition=_all_floating),
    *_entries(ternary.lerp_out, "lerp.Scalar_out", "lerp.Tensor_out", condition=_all_floating),
    *(
        Registration(overload, impl, condition=_all_floating)
        for overload, impl in foreach.FOREACH.items()
    ),
    Registration("_fused_adam_", fused_adam.fused_adam_, condition=fused_adam.is_plain_fused_adam),
    Registration(
        "_fused_adamw_", fused_adam.fused_adamw_, condition=fused_adam.is_plain_fused_adam
    ),
    Registration(
        "_amp_foreach_non_finite_check_and_unscale_",
        amp.non_finite_check_and_unscale_,
        condition=amp.is_dense_unscale,
    ),
    Registration("_amp_update_scale_", amp.amp_update_scale_),
    # Unary math.
    *_pointwise("abs", unary_math.ABS, condition=_no_bool),
    *_pointwise("neg", unary_math.NEG, condition=_no_bool),
    *_pointwise("floor", unary_math.FLOOR, condition=_floating),
    *_pointwise("ceil", unary_math.CEIL, condition=_floating),
    *_pointwise("exp", unary_math.EXP),
    *_pointwise("exp2", unary_math.EXP2),
    *_pointwise("log", unary_math.LOG),
    *_pointwise("log2", unary_math.LOG2),
    *_pointwise("log1p", unary_math.LOG1P),
    *_pointwise("sqrt", unary_math.SQRT),
    *_pointwise("rsqrt", unary_math.RSQRT),
    *_pointwise("sin", unary_math.SIN),
    *_pointwise("cos", unary_math.COS),
    *_pointwise("erf", unary_math.ERF),
    *_pointwise("tanh", unary_math.TANH),
    *_pointwise("sigmoid", unary_math.SIGMOID),
    *_pointwise("reciprocal", unary_math.RECIPROCAL),
    Registration("isnan", unary_math.ISNAN.functional),
    Registration("isinf", unary_math.ISINF.functional),
    # isfinite is a composite: at the autograd key it runs as one kernel.
    Registration("isfinite", unary_math.ISFINITE.functional, condition=_floating, autograd=True),
    # Comparisons.
    *_binary("eq", comparisons.EQ),
    *_binary("ne", comparisons.NE),
    *_binary("lt", comparisons.LT),
    *_binary("le", comparisons.LE),
    *_binary("gt", comparisons.GT),
    *_binary("ge", comparisons.GE),
    # Logical and bitwise.
    Registration("logical_and", logical.LOGICAL_AND.functional),
    Registration("logical_or", logical.LOGICAL_OR.functional),
    Registration("logical_xor", logical.LOGICAL_XOR.functional),
    Registration("logical_not", logical.LOGICAL_NOT.functional),
    *_bitwise("bitwise_and", logical.BITWISE_AND),
    *_bitwise("bitwise_or", logical.BITWISE_OR),
    *_bitwise("bitwise_xor", logical.BITWISE_XOR),
    Registration("bitwise_not", logical.BITWISE_NOT.functional, condition=is_integral),
    # Selection.
    Registration("where.self", selection.where),
    Registration("clamp", selection.clamp),
    Registration("clamp_", selection.clamp_),
    Registration("clamp.Tensor", selection.clamp_tensor),
    Registration("clamp.out", selection.clamp_out),
    Registration("clamp_.Tensor", selection.clamp_tensor_),
    Registration("clamp.Tensor_out", selection.clamp_tensor_out),
    *_entries(selection.clamp_min, "clamp_min", "clamp_min.Tensor"),
    *_entries(selection.clamp_min_, "clamp_min_", "clamp_min_.Tensor"),
    *_entries(selection.clamp_min_out, "clamp_min.out", "clamp_min.Tensor_out"),
    *_entries(selection.clamp_max, "clamp_max", "clamp_max.Tensor"),
    *_entries(selection.clamp_max_, "clamp_max_", "clamp_max_.Tensor"),
    *_entries(selection.clamp_max_out, "clamp_max.out", "clamp_max.Tensor_out"),
    Registration("where.self_out", selection.where_out),
    Registration("nan_to_num", selection.nan_to_num, condition=_floating),
    Registration("nan_to_num_", selection.nan_to_num_, condition=_floating),
    Registration("nan_to_num.out", selection.nan_to_num_out, condition=_floating),
    *_entries(selection.masked_fill, "masked_fill.Scalar", "masked_fill.Tensor"),
    *_entries(selection.masked_fill_, "masked_fill_.Scalar", "masked_fill_.Tensor"),
    # Activations and their backward ops.
    Registration("relu", activations.relu),
    Registration("relu_", activations.relu_),
    Registration("gelu", activations.gelu),
    Registration("gelu_", activations.gelu_),
    Registration("gelu_backward", activations.gelu_backward),
    Registration("silu", activations.silu),
    Registration("silu_", activations.silu_),
    Registration("silu_backward", activations.silu_backward),
    Registration("silu.out", activations.silu_out),
    Registration("softplus", activations.softplus, condition=_floating),
    Registration("softplus.out", activations.softplus_out, condition=_floating),
    Registration("softplus_backward", activations.softplus_backward, condition=_floating),
    Registration("sigmoid_backward", activations.sigmoid_backward),
    Registration("tanh_backward", activations.tanh_backward),
    Registration("threshold_backward", activations.threshold_backward),
    Registration("leaky_relu", activations.leaky_relu),
    Registration("leaky_relu_backward", activations.leaky_relu_backward),
    # The hard activations of MobileNet (vision ops).
    *(
        Registration(name, getattr(hard_activations, name), condition=_hard)
        for name in hard_activations.REGISTERED
    ),
    # Reductions.
    Registration("sum", reductions.sum),
    Registration("sum.dim_IntList", reductions.sum_dim),
    Registration("mean", reductions.mean),
    Registration("mean.dim", reductions.mean_dim),
    Registration("prod", reductions.prod),
    Registration("prod.dim_int", reductions.prod_dim),
    Registration("amax", reductions.amax, condition=_floating_input),
    Registration("amin", reductions.amin, condition=_floating_input),
    Registration("max", reductions.max_all, condition=_floating_input),
    Registration("min", reductions.min_all, condition=_floating_input),
    *_entries(reductions.all_dims, "all", "all.dims"),
    Registration("all.dim", reductions.all_dim),
    *_entries(reductions.any_dims, "any", "any.dims"),
    Registration("any.dim", reductions.any_dim),
    Registration("max.dim", arg_reductions.max_dim, condition=arg_reductions.is_floating),
    Registration("min.dim", arg_reductions.min_dim, condition=arg_reductions.is_floating),
    Registration("argmax", arg_reductions.argmax, condition=arg_reductions.is_floating),
    Registration("argmin", arg_reductions.argmin, condition=arg_reductions.is_floating),
    Registration("var_mean.correction", moments.var_mean, condition=_floating_input),
    Registration("var.correction", moments.var, condition=_floating_input),
    Registration("std.correction", moments.std, condition=_floating_input),
    Registration("linalg_vector_norm", norms.linalg_vector_norm, condition=norms.supports_order),
    Registration("cumsum", scans.cumsum),
    Registration("cumsum.out", out_variants.cumsum_out),
    Registration("cumsum_", out_variants.cumsum_),
    Registration("sum.IntList_out", out_variants.sum_out),
    Registration("logsumexp", logsumexp.logsumexp, condition=logsumexp.is_floating_logsumexp),
    Registration(
        "logsumexp.out", logsumexp.logsumexp_out, condition=logsumexp.is_floating_logsumexp
    ),
    # Softmax, normalisation, losses.
    Registration("_softmax", softmax, condition=_floating_input),
    Registration("_log_softmax", log_softmax, condition=_floating_input),
    Registration("_softmax_backward_data", softmax_backward, condition=_floating_input),
    Registration("_log_softmax_backward_data", log_softmax_backward, condition=_floating_input),
    Registration("_softmax.out", out_variants.softmax_out, condition=_floating_input),
    Registration("_log_softmax.out", out_variants.log_softmax_out, condition=_floating_input),
    Registration("mse_loss", mse_loss.mse_loss, condition=_all_floating),
    Registration("mse_loss_backward", mse_loss.mse_loss_backward, condition=_all_floating),
    Registration("native_layer_norm", layer_norm_forward, condition=_floating_input),
    Registration("native_layer_norm_backward", layer_norm_backward, condition=_floating_input),
    Registration("rms_norm", rms_norm, autograd=True, condition=_floating_input),
    Registration(
        "native_batch_norm", batch_norm.batch_norm_forward, condition=batch_norm.is_batch_norm
    ),
    Registration(
        "native_batch_norm_backward",
        batch_norm.batch_norm_backward,
        condition=batch_norm.is_batch_norm_backward,
    ),
    Registration("native_group_norm", group_norm_forward, condition=_floating_input),
    Registration("native_group_norm_backward", group_norm_backward, condition=_floating_input),
    Registration(
        "cross_entropy_loss",
        cross_entropy_loss,
        condition=is_plain_cross_entropy,
        autograd=True,
    ),
    Registration("nll_loss_forward", nll_loss_forward, condition=is_class_scores),
    Registration("nll_loss_backward", nll_loss_backward, condition=_grad_of_class_scores),
    # Matrix products and lookups.
    *_entries(mm, "mm", condition=is_matmul_dtype),
    *_entries(bmm, "bmm", condition=is_matmul_dtype),
    *_entries(addmm, "addmm", condition=is_matmul_dtype),
    *_entries(mv, "mv", condition=is_matmul_dtype),
    Registration("mm.out", matmul.mm_out, condition=is_matmul_dtype),
    Registration("bmm.out", matmul.bmm_out, condition=is_matmul_dtype),
    Registration("addmm.out", matmul.addmm_out, condition=is_matmul_dtype),
    Registration("addmm_", matmul.addmm_, condition=is_matmul_dtype),
    Registration("baddbmm", matmul.baddbmm, condition=is_matmul_dtype),
    Registration("baddbmm_", matmul.baddbmm_, condition=is_matmul_dtype),
    Registration("embedding", embedding),
    # Indexing backwards and scalar_tensor (vision and encoder models).
    Registration(
        "select_backward", view_backward.select_backward, condition=view_backward.is_storable
    ),
    Registration(
        "slice_backward", view_backward.slice_backward, condition=view_backward.is_storable
    ),
    Registration(
        "scalar_tensor",
        view_backward.scalar_tensor,
        condition=view_backward.is_plain_scalar_tensor,
    ),
    # Vision: pooling.
    Registration(
        "max_pool2d_with_indices", pooling.max_pool2d_with_indices, condition=pooling.fits_max_pool
    ),
    Registration(
        "max_pool2d_with_indices_backward",
        pooling.max_pool2d_with_indices_backward,
        condition=pooling.fits_max_pool_backward,
    ),
    Registration("avg_pool2d", pooling.avg_pool2d, condition=pooling.fits_avg_pool),
    Registration(
        "avg_pool2d_backward", pooling.avg_pool2d_backward, condition=pooling.fits_avg_pool_backward
    ),
    Registration(
        "_adaptive_avg_pool2d", pooling.adaptive_avg_pool2d, condition=pooling.fits_adaptive
    ),
    Registration(
        "_adaptive_avg_pool2d_backward",
        pooling.adaptive_avg_pool2d_backward,
        condition=pooling.fits_adaptive_backward,
    ),
    # Vision: upsampling.
    *(
        Registration(name, getattr(upsampling, name), condition=upsampling.fits_upsample)
        for name in ("upsample_nearest2d", "upsample_bilinear2d")
    ),
    *(
        Registration(name, getattr(upsampling, name), condition=upsampling.fits_upsample_backward)
        for name in ("upsample_nearest2d_backward", "upsample_bilinear2d_backward")
    ),
    # Vision: convolution (one entry point above mkldnn/thnn/slow_conv2d on CPU and cuDNN).
    Registration("convolution", convolution.convolution, condition=convolution.is_conv2d),
    Registration(
        "convolution_backward",
        convolution.convolution_backward,
        condition=convolution.is_conv2d_backward,
    ),
    # Copies, fills, indexing, dropout.
    *_entries(fill_, "fill_.Scalar", "fill_.Tensor"),
    Registration("zero_", zero_),
    Registration("cat", cat),
    Registration("cat.out", copies.cat_out),
    Registration("copy_", copies.copy_, condition=copies.is_same_device_copy),
    Registration("_to_copy", copies.to_copy, condition=copies.is_plain_copy),
    Registration("stack", stack),
    Registration("repeat", repeat),
    Registration("constant_pad_nd", constant_pad_nd),
    Registration("arange.start_out", arange_out),
    Registration("triu", triu),
    Registration("tril", tril),
    Registration("triu_", out_variants.triu_),
    Registration("tril_", out_variants.tril_),
    Registration("triu.out", out_variants.triu_out),
    Registration("tril.out", out_variants.tril_out),
    Registration("one_hot", one_hot.one_hot, condition=one_hot.is_int64_index, autograd=True),
    Registration("uniform_", random.uniform_, condition=random.is_dense_float),
    Registration("normal_", random.normal_, condition=random.is_dense_float),
    Registration("bernoulli_.float", random.bernoulli_, condition=random.is_dense_float),
    Registration("index_select", index_select),
    Registration("nonzero", nonzero.nonzero, condition=nonzero.is_nonzero_input),
    Registration("masked_select", nonzero.masked_select, condition=nonzero.is_selectable),
    Registration("index_add", index_add, condition=_float32_target),
    # Advanced indexing, gather and the scatter family.
    Registration("index.Tensor", advanced_indexing.index, condition=_advanced_index),
    Registration("_index_put_impl_", advanced_indexing.index_put_, condition=_index_put),
    Registration("gather", scatter_gather.gather, condition=_gather_shape),
    Registration("scatter.src", scatter_gather.scatter_src, condition=_gather_shape),
    Registration("scatter.value", scatter_gather.scatter_value, condition=_gather_shape),
    Registration("scatter_add", scatter_gather.scatter_add, condition=_scatter_add),
    Registration("scatter_add_", scatter_gather.scatter_add_, condition=_scatter_add),
    Registration("scatter_reduce.two", scatter_gather.scatter_reduce, condition=_scatter_reduce),
    Registration("scatter_reduce_.two", scatter_gather.scatter_reduce_, condition=_scatter_reduce),
    Registration("native_dropout", native_dropout, condition=_floating_input),
    Registration("native_dropout_backward", native_dropout_backward),
    Registration("sort", sort, condition=sort_fits),
    Registration("sort.stable", sort_stable, condition=sort_stable_fits),
    Registration("topk", topk, condition=topk_fits),
    Registration(
        "scaled_dot_product_attention",
        scaled_dot_product_attention,
        condition=is_supported_attention,
        autograd=True,
    ),
    Registration(
        "embedding_dense_backward", embedding_dense_backward, condition=is_unscaled_backward
    ),
    # The SDPA entry points below the composite, reached when called directly or traced.
    Registration(
        "_scaled_dot_product_flash_attention",
        attention_entry.flash_attention,
        condition=attention_entry.fits_flash,
    ),
    Registration(
        "_scaled_dot_product_flash_attention_backward",
        attention_entry.flash_attention_backward,
        condition=attention_entry.fits_flash_backward,
    ),
    Registration(
        "_scaled_dot_product_flash_attention_for_cpu",
        attention_entry.flash_attention_cpu,
        condition=attention_entry.fits_flash_cpu,
    ),
    Registration(
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        attention_entry.flash_attention_cpu_backward,
        condition=attention_entry.fits_flash_cpu_backward,
    ),
    Registration(
        "_scaled_dot_product_efficient_attention",
        attention_entry.efficient_attention,
        condition=attention_entry.fits_efficient,
    ),
    Registration(
        "_scaled_dot_product_efficient_attention_backward",
        attention_entry.efficient_attention_backward,
        condition=attention_entry.fits_efficient_backward,
    ),
)


def matches(entry: Registration, names: Iterable[str]) -> bool:
    """Whether ``names`` selects ``entry``: by overload (``add.Tensor``), by operator (``add_``)
    or by base name, which covers the in-place and out variants too (``add``)."""
    selectors = (entry.overload, entry.op_name, entry.op_name.rstrip("_"))
    return any(name in selectors for name in names)


def select(
    include: Iterable[str] | None = None, exclude: Iterable[str] | None = None
) -> list[Registration]:
    """Table entries named in ``include`` (all when None) and not named in ``exclude``."""
    include = None if include is None else list(include)
    exclude = list(exclude or ())
    known = {
        name
        for entry in REGISTRATIONS
        for name in (entry.overload, entry.op_name, entry.op_name.rstrip("_"))
    }
    unknown = sorted(set(include or ()) - known)
    if unknown:
        raise ValueError(f"include: no registered overload or operator named {unknown}")
    return [
        entry
        for entry in REGISTRATIONS
        if (include is None or matches(entry, include)) and not matches(entry, exclude)
    ]


def all_registered_ops() -> tuple[str, ...]:
    """Every ATen overload in the registration table, in table order."""
    return tuple(entry.overload for entry in REGISTRATIONS)
