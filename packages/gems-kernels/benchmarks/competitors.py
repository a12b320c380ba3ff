"""The libraries gems-kernels is compared against, one adapter each, and their offline install.

Each :class:`Competitor` names a pinned distribution, its import name and a factory that, given
the imported module, says how the library runs a benchmark case (an :class:`harness.Entry`, or
None where it lacks the op). :func:`load` imports each one and returns the harness's
:class:`harness.Rival` list; a library that does not import becomes a rival whose columns show
"-" and whose note says why. :func:`install_wheels` installs wheels fetched beforehand by
``fetch_competitors.sh`` on a machine without network access.

Argument layouts differ, and every conversion happens outside the timed call:

- liger-kernel's rope takes q, k as (batch, heads, seq, head_dim) and cos, sin as
  (1, seq, head_dim) with both halves repeated; it rotates q and k in place. The cases hold
  q, k as (batch, seq, heads, head_dim) and cos, sin as (seq, 1, head_dim / 2), so q and k are
  passed as transposed views (liger transposes them back to contiguous storage, no copy) and
  the outputs are transposed back for the comparison.
- FlagGems' ``apply_rotary_pos_emb`` takes cos, sin as (seq, head_dim / 2): a view.
- liger's SwiGLU on one tensor holding gate and up is ``LigerFusedGateUpSiLUMulFunction``; its
  GeGLU (``LigerGELUMulFunction``) has only the tanh approximation, which the gelu_and_mul
  cases use.
- liger's cross-entropy writes the gradient into its input; every library runs on its own
  copies of the inputs, so it cannot change what the others are timed on.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from cases import _forward_backward as training_step
from harness import Case, Entry, Rival

__all__ = [
    "COMPETITORS",
    "Competitor",
    "flag_gems_functions",
    "install_wheels",
    "installable",
    "load",
    "rope_from_liger",
    "rope_to_flag_gems",
    "rope_to_liger",
]


@dataclass(frozen=True)
class Competitor:
    """A library to compare against: how to import it and how it runs each case."""

    name: str
    module: str
    requirement: str
    entries: Callable[[ModuleType], Callable[[Case], Entry | None]]


def rope_to_liger(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """(batch, seq, heads, dim) q, k and (seq, 1, dim/2) cos, sin in liger's rope layout."""

    def repeated(angles: torch.Tensor) -> torch.Tensor:
        flat = angles.reshape(angles.shape[0], -1)
        return torch.cat([flat, flat], dim=-1).unsqueeze(0).contiguous()

    return q.transpose(1, 2), k.transpose(1, 2), repeated(cos), repeated(sin)


def rope_to_flag_gems(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """The cases' rope inputs with cos, sin as FlagGems' (seq, dim/2) views."""
    return q, k, cos.reshape(cos.shape[0], -1), sin.reshape(sin.shape[0], -1)


def rope_from_liger(rotated: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """liger's (batch, heads, seq, dim) outputs back in the cases' (batch, seq, heads, dim)."""
    return tuple(t.transpose(1, 2) for t in rotated[:2])


def _forward_and_step(forward: Mapping[str, Callable[..., Any]]) -> dict[str, Entry]:
    """An entry per op from its forward function, and one per ``<op>_fwd_bwd`` training step."""
    entries = {op: Entry(call=fn) for op, fn in forward.items()}
    entries |= {f"{op}_fwd_bwd": Entry(call=training_step(fn)) for op, fn in forward.items()}
    return entries


def _by_op(entries: Mapping[str, Entry]) -> Callable[[Case], Entry | None]:
    return lambda case: entries.get(case.op)


def _liger_entries(liger: ModuleType) -> Callable[[Case], Entry | None]:
    ops = importlib.import_module(f"{liger.__name__}.ops")
    forward: dict[str, Callable[..., Any]] = {
        # in_place=False: the timed step reuses its upstream gradient, which in_place overwrites.
        "rms_norm": lambda x, w: ops.LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False),
        "layer_norm": lambda x, w, b: ops.LigerLayerNormFunction.apply(x, w, b, 1e-5),
        "cross_entropy": lambda x, t: ops.LigerCrossEntropyFunction.apply(x, t, None)[0],
        "softmax": ops.LigerSoftmaxFunction.apply,
        "silu_and_mul": ops.LigerFusedGateUpSiLUMulFunction.apply,
        "gelu_and_mul": ops.LigerGELUMulFunction.apply,
    }
    entries = _forward_and_step(forward)
    entries["rotary_embedding"] = Entry(
        call=ops.LigerRopeFunction.apply, convert=rope_to_liger, restore=rope_from_liger
    )
    return _by_op(entries)


def flag_gems_functions(config: Iterable[tuple[Any, ...]], overloads: Sequence[str]) -> list[str]:
    """The FlagGems function names (what its ``use_gems(include=...)`` takes) registered for
    the ATen ops named in ``overloads``: ``add`` covers ``add.Tensor``, ``add_`` and the other
    overloads, as gems' own ``use_gems(include=...)`` does."""

    def op(name: str) -> str:
        return name.split(".")[0].rstrip("_")

    wanted = {op(name) for name in overloads}
    names = [item[1].__name__ for item in config if op(item[0]) in wanted]
    return list(dict.fromkeys(names))


@contextlib.contextmanager
def _flag_gems_registered(flag_gems: ModuleType, functions: list[str]) -> Iterator[None]:
    """FlagGems' ``use_gems(include=functions)``, its registrations dropped on exit whatever the
    torch version: 5.0.2 calls ``Library._destroy()`` only when ``torch.__version__ >= "2.5"``
    as strings, which "2.11" is not, and otherwise leaves it to garbage collection; a
    registration left behind would time later ATen baselines on FlagGems' kernels."""
    session = flag_gems.use_gems(include=functions)
    library = getattr(session, "lib", None)
    try:
        with session:
            yield
    finally:
        if library is not None:
            library._destroy()


def _flag_gems_entries(flag_gems: ModuleType) -> Callable[[Case], Entry | None]:
    def rotary(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> Any:
        return flag_gems.apply_rotary_pos_emb(q, k, cos, sin)

    direct = _forward_and_step(
        {
            "cross_entropy": flag_gems.cross_entropy_loss,
            "silu_and_mul": lambda x: flag_gems.silu_and_mul(*x.chunk(2, dim=-1)),
            "gelu_and_mul": lambda a, b: flag_gems.gelu_and_mul(a, b, "tanh"),
        }
    )
    direct["rotary_embedding"] = Entry(call=rotary, convert=rope_to_flag_gems)
    config = getattr(flag_gems, "_FULL_CONFIG", ())

    def entry(case: Case) -> Entry | None:
        if case.op in direct:
            return direct[case.op]
        functions = flag_gems_functions(config, case.overloads) if case.gems is None else []
        if not functions:
            return None
        return Entry(call=case.aten, context=lambda: _flag_gems_registered(flag_gems, functions))

    return entry


COMPETITORS = (
    Competitor("flag_gems", "flag_gems", "flag-gems==5.0.2", _flag_gems_entries),
    Competitor("liger", "liger_kernel", "liger-kernel==0.8.5", _liger_entries),
)


def _version_note(module: ModuleType, competitor: Competitor) -> str:
    """The imported version, and the pinned one where they differ."""
    version = getattr(module, "__version__", None)
    if version is None:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            version = importlib.metadata.version(competitor.requirement.split("==")[0])
    pinned = competitor.requirement.split("==")[-1]
    return str(version) if version == pinned else f"{version} (pinned: {competitor.requirement})"


def load(
    names: Sequence[str] | None = None,
    competitors: Sequence[Competitor] = COMPETITORS,
    importer: Callable[[str], ModuleType] = importlib.import_module,
) -> list[Rival]:
    """A rival per competitor named in ``names`` (all when None): importable ones with their
    entries, the others with a note saying why their columns are empty."""
    known = {c.name for c in competitors}
    unknown = sorted(set(names or ()) - known)
    if unknown:
        raise ValueError(f"competitors: unknown {unknown}; expected some of {sorted(known)}")
    rivals = []
    for competitor in competitors:
        if names is not None and competitor.name not in names:
            continue
        try:
            module = importer(competitor.module)
            entries = competitor.entries(module)
        except Exception as error:  # ImportError, or a library that refuses this machine
            note = f"not installed or not usable here ({competitor.requirement}): {error!r}"
            rivals.append(Rival(competitor.name, note))
            continue
        rivals.append(Rival(competitor.name, _version_note(module, competitor), entries))
    return rivals


def install_wheels(wheels: Path, target: Path | None = None) -> str:
    """Install the wheels in ``wheels`` with ``pip --no-deps --no-index`` into ``target`` (a
    fresh temporary directory by default) and put it first on ``sys.path``. Never raises: the
    returned line says what happened, and the comparison runs with whatever imports."""
    found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    if not found:
        return f"no competitor wheels in {wheels} (run fetch_competitors.sh to compare)"
    found, foreign = installable(found)
    skipped = f"; skipped {', '.join(w.name for w in foreign)} (not for this Python)" * bool(
        foreign
    )
    target = target or Path(tempfile.mkdtemp(prefix="bench-wheels-"))
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
               "--no-compile", "--disable-pip-version-check", "--target", str(target),
               *map(str, found)]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"could not install competitor wheels from {wheels}: {error!r}{skipped}"
    if done.returncode != 0:
        failure = done.stderr.strip()[-400:]
        return f"could not install competitor wheels from {wheels}: {failure}{skipped}"
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    return f"installed {', '.join(w.name for w in found)} into {target}{skipped}"


def installable(wheels: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """``wheels`` split into one per distribution that this interpreter can install, and the
    rest (a wheel for another Python, or a second one of a distribution, makes pip refuse all)."""
    from packaging.tags import sys_tags
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    supported = set(sys_tags())
    chosen: dict[str, Path] = {}
    rest = []
    for wheel in wheels:
        try:
            name, _, _, tags = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            rest.append(wheel)
            continue
        if tags & supported and name not in chosen:
            chosen[name] = wheel
        else:
            rest.append(wheel)
    return list(chosen.values()), rest
