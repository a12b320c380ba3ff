"""The registration table resolves against torch.ops.aten and selects by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gems_kernels import registration


def test_every_entry_resolves_to_an_aten_overload() -> None:
    unresolved = [
        entry.overload
        for entry in registration.REGISTRATIONS
        if not hasattr(getattr(torch.ops.aten, entry.op_name, None), entry.overload_name)
    ]
    assert unresolved == []


def test_overloads_are_unique() -> None:
    names = registration.all_registered_ops()
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        pytest.param(["maximum"], None, ["maximum"], id="by-op-name"),
        pytest.param(["add.out"], None, ["add.out"], id="by-overload"),
        pytest.param(
            ["add"],
            ["add_.Scalar", "add.out"],
            ["add.Tensor", "add.Scalar", "add_.Tensor"],
            id="exclude-overload",
        ),
    ],
)
def test_select(include: list[str], exclude: list[str] | None, expected: list[str]) -> None:
    assert [e.overload for e in registration.select(include, exclude)] == expected


def test_backend_entries_have_a_backend_kernel_to_override() -> None:
    """Entries at the backend key must not be composites that ATen decomposes above it (an
    op with its own autograd kernel, such as silu_backward, reaches the backend all the same)."""

    def decomposed_above_backend(overload: str) -> bool:
        table = torch._C._dispatch_dump_table(f"aten::{overload}").splitlines()
        return any(line.startswith("AutogradCPU:") and "[math kernel]" in line for line in table)

    composite = [
        entry.overload
        for entry in registration.REGISTRATIONS
        if not entry.autograd and decomposed_above_backend(entry.overload)
    ]
    assert composite == []


def test_each_op_module_declares_its_own_entries() -> None:
    """registration.py only gathers: every entry comes from an op module's REGISTRATIONS, and
    an entry whose implementation is a module-level function sits in the module defining it
    (the variants that ``ops.variants`` builds for a pointwise op are closures: left out)."""
    import inspect

    assert "Registration(" not in inspect.getsource(registration)
    gathered = [e for module in registration._MODULES for e in module.REGISTRATIONS]
    assert tuple(gathered) == registration.REGISTRATIONS
    misplaced = [
        (entry.overload, module.__name__)
        for module in registration._MODULES
        for entry in module.REGISTRATIONS
        if inspect.isfunction(entry.impl)
        and "<locals>" not in entry.impl.__qualname__
        and entry.impl.__module__ != module.__name__
    ]
    assert misplaced == []


@pytest.mark.parametrize("side", ["include", "exclude"])
def test_unknown_names_are_refused_on_both_sides(side: str) -> None:
    with pytest.raises(ValueError, match=rf"^{side}: .* named 'no_such_op' \(") as raised:
        registration.select(**{side: ["add", "no_such_op"]})
    assert "named 'add'" not in str(raised.value)


def test_enable_names_its_argument() -> None:
    import gems_kernels
    from gems_kernels import dispatch

    with pytest.raises(ValueError, match=r"^unused: .*'mmm'"):
        gems_kernels.enable(unused=["mmm"])
    assert dispatch.enabled_sessions() == ()
    with pytest.raises(ValueError, match=r"^exclude: .*'mmm'"):
        gems_kernels.use_gems(exclude=["mmm"]).__enter__()


def test_names_from_a_file(tmp_path: Path) -> None:
    names = tmp_path / "exclude.txt"
    names.write_text("# this machine's broken kernels\nmm, addmm\n\nrelu_  # in-place only\n")
    selected = {e.overload for e in registration.select(exclude=names)}
    assert {"mm", "addmm", "relu_"}.isdisjoint(selected)
    assert {"bmm", "relu", "add.Tensor"} <= selected
    include = {e.overload for e in registration.select(include=str(names))}
    assert include == {"mm", "mm.out", "addmm", "addmm.out", "addmm_", "relu_"}


def test_a_string_is_a_path_never_one_name() -> None:
    with pytest.raises(ValueError, match=r"^exclude: .*'mm', which is not a file"):
        registration.select(exclude="mm")


def test_names_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(registration.EXCLUDE_ENV, "mm, addmm")
    selected = {e.overload for e in registration.select(exclude=["bmm"])}
    assert {"mm", "addmm", "bmm"}.isdisjoint(selected) and "mv" in selected
    names = tmp_path / "include"
    names.write_text("relu\nmm\n")
    monkeypatch.setenv(registration.INCLUDE_ENV, str(names))
    assert [e.overload for e in registration.select()] == ["relu", "relu_"]
    # An explicit include replaces the variable's; the excluded names still apply.
    assert [e.overload for e in registration.select(include=["mm", "mv"])] == ["mv"]


@pytest.mark.parametrize("variable", [registration.INCLUDE_ENV, registration.EXCLUDE_ENV])
def test_unknown_names_in_the_environment(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(variable, "add,no_such_op")
    with pytest.raises(ValueError, match=rf"^{variable}: .*'no_such_op'"):
        registration.select()
    monkeypatch.setenv(variable, "/no/such/file")
    with pytest.raises(ValueError, match=rf"^{variable}: '/no/such/file' looks like a path"):
        registration.select()
