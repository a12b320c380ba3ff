"""Tensor operators implemented with Triton kernels (``gems_kernels.ops.add``)."""

from gems_kernels.ops import comparisons, logical, unary_math
from gems_kernels.ops.activations import (
    gelu,
    gelu_backward,
    leaky_relu,
    leaky_relu_backward,
    relu,
    sigmoid_backward,
    silu,
    silu_backward,
    tanh_backward,
    threshold_backward,
)
from gems_kernels.ops.advanced_indexing import index, index_put_
from gems_kernels.ops.arg_reductions import argmax, argmin, max_dim, min_dim
from gems_kernels.ops.arithmetic import (
    add,
    div,
    div_mode,
    maximum,
    minimum,
    mul,
    pow_scalar,
    pow_tensor,
    remainder,
    sub,
)
from gems_kernels.ops.attention import scaled_dot_product_attention
from gems_kernels.ops.copies import cat, constant_pad_nd, fill_, repeat, stack, zero_
from gems_kernels.ops.cross_entropy import cross_entropy_loss
from gems_kernels.ops.dropout import native_dropout, native_dropout_backward
from gems_kernels.ops.embedding import embedding, embedding_dense_backward
from gems_kernels.ops.group_norm import group_norm_backward, group_norm_forward
from gems_kernels.ops.indexing import index_add, index_select
from gems_kernels.ops.layer_norm import layer_norm_backward, layer_norm_forward
from gems_kernels.ops.matmul import addmm, bmm, mm, mv
from gems_kernels.ops.moments import std, var, var_mean
from gems_kernels.ops.nll_loss import nll_loss_backward, nll_loss_forward
from gems_kernels.ops.norms import linalg_vector_norm
from gems_kernels.ops.ranges import arange_out
from gems_kernels.ops.reductions import (
    all_dims,
    amax,
    amin,
    any_dims,
    max_all,
    mean,
    mean_dim,
    min_all,
    prod,
    prod_dim,
    sum,
    sum_dim,
)
from gems_kernels.ops.rms_norm import rms_norm
from gems_kernels.ops.scans import cumsum
from gems_kernels.ops.scatter_gather import (
    gather,
    scatter_add,
    scatter_add_,
    scatter_reduce,
    scatter_reduce_,
    scatter_src,
    scatter_value,
)
from gems_kernels.ops.selection import clamp, masked_fill, where
from gems_kernels.ops.softmax import log_softmax, log_softmax_backward, softmax, softmax_backward
from gems_kernels.ops.sorting import sort, topk
from gems_kernels.ops.triangular import tril, triu

abs = unary_math.ABS.functional
neg = unary_math.NEG.functional
floor = unary_math.FLOOR.functional
ceil = unary_math.CEIL.functional
exp = unary_math.EXP.functional
exp2 = unary_math.EXP2.functional
log = unary_math.LOG.functional
log2 = unary_math.LOG2.functional
log1p = unary_math.LOG1P.functional
sqrt = unary_math.SQRT.functional
rsqrt = unary_math.RSQRT.functional
sin = unary_math.SIN.functional
cos = unary_math.COS.functional
erf = unary_math.ERF.functional
tanh = unary_math.TANH.functional
sigmoid = unary_math.SIGMOID.functional
reciprocal = unary_math.RECIPROCAL.functional
isnan = unary_math.ISNAN.functional
isinf = unary_math.ISINF.functional
isneginf = unary_math.ISNEGINF.functional
isposinf = unary_math.ISPOSINF.functional
isfinite = unary_math.ISFINITE.functional
eq = comparisons.EQ.functional
ne = comparisons.NE.functional
lt = comparisons.LT.functional
le = comparisons.LE.functional
gt = comparisons.GT.functional
ge = comparisons.GE.functional
logical_and = logical.LOGICAL_AND.functional
logical_or = logical.LOGICAL_OR.functional
logical_xor = logical.LOGICAL_XOR.functional
logical_not = logical.LOGICAL_NOT.functional
bitwise_and = logical.BITWISE_AND.functional
bitwise_or = logical.BITWISE_OR.functional
bitwise_xor = logical.BITWISE_XOR.functional
bitwise_not = logical.BITWISE_NOT.functional

__all__ = [
    "abs",
    "add",
    "addmm",
    "all_dims",
    "amax",
    "amin",
    "any_dims",
    "arange_out",
    "argmax",
    "argmin",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "bmm",
    "cat",
    "ceil",
    "clamp",
    "constant_pad_nd",
    "cos",
    "cross_entropy_loss",
    "cumsum",
    "div",
    "div_mode",
    "embedding",
    "embedding_dense_backward",
    "eq",
    "erf",
    "exp",
    "exp2",
    "fill_",
    "floor",
    "gather",
    "ge",
    "gelu",
    "gelu_backward",
    "group_norm_backward",
    "group_norm_forward",
    "gt",
    "index",
    "index_add",
    "index_put_",
    "index_select",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "layer_norm_backward",
    "layer_norm_forward",
    "le",
    "leaky_relu",
    "leaky_relu_backward",
    "linalg_vector_norm",
    "log",
    "log1p",
    "log2",
    "log_softmax",
    "log_softmax_backward",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "lt",
    "masked_fill",
    "max_all",
    "max_dim",
    "maximum",
    "mean",
    "mean_dim",
    "min_all",
    "min_dim",
    "minimum",
    "mm",
    "mul",
    "mv",
    "native_dropout",
    "native_dropout_backward",
    "ne",
    "neg",
    "nll_loss_backward",
    "nll_loss_forward",
    "pow_scalar",
    "pow_tensor",
    "prod",
    "prod_dim",
    "reciprocal",
    "relu",
    "remainder",
    "repeat",
    "rms_norm",
    "rsqrt",
    "scaled_dot_product_attention",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "scatter_reduce_",
    "scatter_src",
    "scatter_value",
    "sigmoid",
    "sigmoid_backward",
    "silu",
    "silu_backward",
    "sin",
    "softmax",
    "softmax_backward",
    "sort",
    "sqrt",
    "stack",
    "std",
    "sub",
    "sum",
    "sum_dim",
    "tanh",
    "tanh_backward",
    "threshold_backward",
    "topk",
    "tril",
    "triu",
    "var",
    "var_mean",
    "where",
    "zero_",
]
