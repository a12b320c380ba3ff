"""Vendor detection from the environment, without touching a GPU driver."""

from __future__ import annotations

import subprocess
import sys

import pytest
from gems_kernels.backends import VENDORS, UnknownVendorError, detect_vendor, launch_config


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({"GEMS_VENDOR": "amd"}, "amd", id="explicit"),
        pytest.param({"GEMS_VENDOR": " NVIDIA "}, "nvidia", id="case-and-space"),
        pytest.param({"TRITON_INTERPRET": "1"}, "cpu", id="interpreter"),
        pytest.param(
            {"GEMS_VENDOR": "intel", "TRITON_INTERPRET": "1"}, "intel", id="explicit-wins"
        ),
        pytest.param({}, "cpu", id="cpu-build-of-torch"),
    ],
)
def test_detect_vendor(environ: dict[str, str], expected: str) -> None:
    assert detect_vendor(environ).name == expected


def test_unknown_vendor_names_the_variable() -> None:
    with pytest.raises(UnknownVendorError, match="GEMS_VENDOR: expected one of"):
        detect_vendor({"GEMS_VENDOR": "abacus"})


def test_cpu_registers_at_the_cpu_keys() -> None:
    assert (VENDORS["cpu"].dispatch_key, VENDORS["cpu"].autograd_key) == ("CPU", "AutogradCPU")
    assert VENDORS["amd"].dispatch_key == "CUDA"


def test_every_vendor_has_every_kernel_family() -> None:
    families = {"pointwise", "reduction", "row"}
    for name in VENDORS:
        assert all(launch_config(name, family).block_size > 0 for family in families)
    with pytest.raises(KeyError, match="family='nope'"):
        launch_config("cpu", "nope")


def test_import_does_not_initialise_cuda() -> None:
    code = (
        "import torch, gems_kernels; "
        "assert not torch.cuda.is_initialized(); print(gems_kernels.vendor_name)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "", "TRITON_INTERPRET": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cpu"
