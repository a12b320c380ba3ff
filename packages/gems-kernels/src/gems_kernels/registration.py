"""The registration table: every op module's ``REGISTRATIONS``, gathered, and the names that
select from it.

Each module of ``gems_kernels.ops`` declares its own entries (overloads, conditions, in-place and
``out=`` variants); this module only gathers them. Importing an op module registers nothing.

Names select entries in one vocabulary, the same for ``include`` and ``exclude`` (so for
``enable(unused=...)``, ``only_enable`` and ``use_gems``): an overload (``add.Tensor``), an
operator (``add_``) or a base name, which covers the functional, in-place and ``out=`` variants
(``add``). A name that selects nothing is an error on either side. A list may also come from a
file (one name a line or comma-separated, ``#`` comments) or from the environment:
``GEMS_KERNELS_INCLUDE`` and ``GEMS_KERNELS_EXCLUDE`` hold names separated by commas, or the path
of such a file.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from gems_kernels.ops.registering import Registration

__all__ = [
    "EXCLUDE_ENV",
    "INCLUDE_ENV",
    "REGISTRATIONS",
    "Registration",
    "all_registered_ops",
    "known_names",
    "matches",
    "read_names",
    "select",
]

INCLUDE_ENV: Final = "GEMS_KERNELS_INCLUDE"
EXCLUDE_ENV: Final = "GEMS_KERNELS_EXCLUDE"

# Table order: the order of these modules of gems_kernels.ops, then each module's own order.
_MODULES: Final = tuple(
    importlib.import_module(f"gems_kernels.ops.{name}")
    for name in (
        "arithmetic",
        "ternary",
        "foreach",
        "fused_adam",
        "amp",
        "unary_math",
        "comparisons",
        "logical",
        "selection",
        "activations",
        "hard_activations",
        "reductions",
        "arg_reductions",
        "moments",
        "norms",
        "scans",
        "out_variants",
        "logsumexp",
        "softmax",
        "mse_loss",
        "layer_norm",
        "rms_norm",
        "batch_norm",
        "group_norm",
        "cross_entropy",
        "nll_loss",
        "matmul",
        "embedding",
        "view_backward",
        "pooling",
        "upsampling",
        "convolution",
        "copies",
        "ranges",
        "triangular",
        "one_hot",
        "random",
        "indexing",
        "nonzero",
        "advanced_indexing",
        "scatter_gather",
        "dropout",
        "sorting",
        "attention",
        "attention_entry",
    )
)

REGISTRATIONS: Final[tuple[Registration, ...]] = tuple(
    entry for module in _MODULES for entry in module.REGISTRATIONS
)

Names = Iterable[str] | str | os.PathLike[str]
"""Names as an iterable, or a file of them (a ``str`` is a path, never one name)."""


def _selectors(entry: Registration) -> tuple[str, str, str]:
    return entry.overload, entry.op_name, entry.op_name.rstrip("_")


def known_names() -> frozenset[str]:
    """Every name that selects at least one entry: overloads, operators and base names."""
    return frozenset(name for entry in REGISTRATIONS for name in _selectors(entry))


def matches(entry: Registration, names: Iterable[str]) -> bool:
    """Whether ``names`` selects ``entry``: by overload (``add.Tensor``), by operator (``add_``)
    or by base name, which covers the in-place and out variants too (``add``)."""
    selectors = _selectors(entry)
    return any(name in selectors for name in names)


def _split(text: str) -> list[str]:
    """Names separated by commas or line breaks; ``#`` starts a comment."""
    lines = (line.split("#", 1)[0] for line in text.splitlines())
    return [name.strip() for line in lines for name in line.split(",") if name.strip()]


def read_names(names: Names, field: str) -> list[str]:
    """``names`` as a list: an iterable as it is, a ``str`` or path as the file it names."""
    if isinstance(names, (str, os.PathLike)):
        path = Path(names)
        if not path.is_file():
            raise ValueError(f"{field}: expected a list of op names or a file of them, "
                             f"got {str(names)!r}, which is not a file")  # fmt: skip
        return _split(path.read_text())
    listed = list(names)
    wrong = [name for name in listed if not isinstance(name, str)]
    if wrong:
        raise TypeError(f"{field}: expected op names (str), got {wrong!r}")
    return listed


def _from_env(variable: str) -> list[str] | None:
    """The names in ``$variable``: comma-separated, or the path of a file of names."""
    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    if Path(value).is_file():
        return read_names(value, variable)
    if os.sep in value or value.endswith(".txt"):
        raise ValueError(f"{variable}: {value!r} looks like a path but is not a file")
    return _split(value)


def _check(names: list[str], field: str) -> None:
    unknown = sorted(set(names) - known_names())
    if unknown:
        raise ValueError(
            f"{field}: no registered overload or operator named {', '.join(map(repr, unknown))} "
            "(expected names such as 'add', 'add_', 'add.Tensor'; see all_registered_ops())"
        )


def select(
    include: Names | None = None,
    exclude: Names | None = None,
    include_field: str = "include",
    exclude_field: str = "exclude",
) -> list[Registration]:
    """Table entries named in ``include`` (all when None and ``$GEMS_KERNELS_INCLUDE`` is unset)
    and not named in ``exclude`` nor in ``$GEMS_KERNELS_EXCLUDE``. Unknown names raise
    ``ValueError`` naming the field (``include_field``/``exclude_field``, or the variable)."""
    chosen = read_names(include, include_field) if include is not None else _from_env(INCLUDE_ENV)
    field = include_field if include is not None else INCLUDE_ENV
    if chosen is not None:
        _check(chosen, field)
    dropped = read_names(exclude, exclude_field) if exclude is not None else []
    _check(dropped, exclude_field)
    from_env = _from_env(EXCLUDE_ENV) or []
    _check(from_env, EXCLUDE_ENV)
    dropped += from_env
    return [
        entry
        for entry in REGISTRATIONS
        if (chosen is None or matches(entry, chosen)) and not matches(entry, dropped)
    ]


def all_registered_ops() -> tuple[str, ...]:
    """Every ATen overload in the registration table, in table order."""
    return tuple(entry.overload for entry in REGISTRATIONS)
