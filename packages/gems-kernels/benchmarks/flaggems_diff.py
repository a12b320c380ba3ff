"""The ATen overloads FlagGems registers and gems does not, read from FlagGems' own op list (the
``("overload", function)`` pairs its ``enable()`` hands to its registrar, in
``src/flag_gems/__init__.py``), with, for each, what ATen has at that name, which overloads of
the same operator gems registers, and which zoo models' training steps call it (``zoo_ops.json``,
written by ``zoo.py --readme``).

    git -C FLAGGEMS_CHECKOUT show HEAD:src/flag_gems/__init__.py > /tmp/flag_gems_init.py
    python packages/gems-kernels/benchmarks/flaggems_diff.py /tmp/flag_gems_init.py --readme

Only the list is read (parsed with ``ast``, never imported or run): FlagGems needs a GPU driver
to import.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import gems_kernels
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import readme_tables
import zoo

__all__ = ["Missing", "flaggems_overloads", "format_missing", "main", "missing_overloads"]


def flaggems_overloads(source: str) -> list[str]:
    """The overload names of the ``("name", function)`` pairs in ``enable()`` of FlagGems'
    ``__init__.py`` source, in order, without repeats; ``ValueError`` when there are none."""
    tree = ast.parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "enable"]
    names: dict[str, None] = {}
    for function in functions:
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Tuple)
                and len(node.elts) == 2
                and isinstance(node.elts[0], ast.Constant)
                and isinstance(node.elts[0].value, str)
                and isinstance(node.elts[1], (ast.Name, ast.Attribute))
            ):
                names[node.elts[0].value] = None
    if not names:
        raise ValueError('source: no ("overload", function) pairs found in an enable() function')
    return list(names)


def _aten_kind(overload: str) -> str:
    """What ATen has at ``overload`` on the CPU: a backend kernel, a composite (implicit: it
    decomposes above autograd; explicit: at the backend key, as ``zeros_like`` into
    ``empty_like`` and ``fill_``), so that gems' kernels of its parts serve it, or nothing of
    that name in this torch."""
    op_name, _, overload_name = overload.partition(".")
    packet = getattr(torch.ops.aten, op_name, None)
    if packet is None or (overload_name or "default") not in packet.overloads():
        return f"not in torch {torch.__version__.split('+')[0]}"
    qualified = f"aten::{overload}"
    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    if has_kernel(qualified, "CPU"):
        return "kernel"
    if has_kernel(qualified, "CompositeImplicitAutograd"):
        return "composite, implicit"
    if has_kernel(qualified, "CompositeExplicitAutograd"):
        return "composite, explicit"
    return "kernel"


@dataclass(frozen=True)
class Missing:
    """One overload FlagGems registers and gems does not."""

    overload: str
    aten: str
    gems_siblings: tuple[str, ...]
    """The overloads of the same operator that gems registers."""
    zoo_models: tuple[str, ...]
    """The zoo models whose training step calls the overload."""


def _plain(name: str) -> str:
    return name.removesuffix(".default")


def missing_overloads(
    flaggems: Sequence[str], gems: Sequence[str], zoo_ops: Mapping[str, Sequence[str]]
) -> list[Missing]:
    """FlagGems' overloads that are not in ``gems``, sorted by name."""
    registered = {_plain(name) for name in gems}
    callers: dict[str, list[str]] = {}
    for model, names in zoo_ops.items():
        for name in names:
            callers.setdefault(_plain(name), []).append(model)
    result = []
    for name in sorted({_plain(n) for n in flaggems} - registered):
        op_name = name.split(".", 1)[0]
        siblings = sorted(g for g in registered if g.split(".", 1)[0] == op_name)
        result.append(Missing(name, _aten_kind(name), tuple(siblings),
                              tuple(callers.get(name, ()))))  # fmt: skip
    return result


def format_missing(rows: Sequence[Missing]) -> Iterator[str]:
    """A Markdown table of ``rows``."""
    yield "| FlagGems overload | ATen | gems registers of that op | zoo models calling it |"
    yield "| --- | --- | --- | --- |"
    for r in rows:
        siblings = ", ".join(f"`{s}`" for s in r.gems_siblings) or "-"
        yield f"| `{r.overload}` | {r.aten} | {siblings} | {', '.join(r.zoo_models) or 'none'} |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="FlagGems' src/flag_gems/__init__.py")
    parser.add_argument("--zoo-ops", type=Path, default=zoo.OPS_JSON)
    parser.add_argument("--readme", action="store_true", help=f"write the table into {zoo.README}")
    args = parser.parse_args(argv)
    flaggems = flaggems_overloads(args.source.read_text())
    zoo_ops = json.loads(args.zoo_ops.read_text())
    rows = missing_overloads(flaggems, gems_kernels.all_registered_ops(), zoo_ops)
    called = [r for r in rows if r.zoo_models]
    needed = [r.overload for r in called if not r.aten.startswith("composite")]
    table = [
        *format_missing(rows),
        "",
        f"{len(rows)} of FlagGems' {len(flaggems)} overloads are not registered by gems. Zoo "
        f"steps call {len(called)} of them, {len(called) - len(needed)} composites whose parts "
        f"run on gems kernels; {len(needed)} need a kernel of their own"
        + (f": {', '.join(needed)}." if needed else "."),
    ]
    print("\n".join(table))
    if args.readme:
        readme_tables.replace_section(zoo.README, "flaggems", table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
