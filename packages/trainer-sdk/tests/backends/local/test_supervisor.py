"""Pieces of the supervisor: interpreter shims and the per-requirement-set package cache."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from trainer_sdk.backends.local.supervisor import install_packages, write_shims


def make_wheel(directory: Path, name: str = "tinypkg", version: str = "1.0") -> Path:
    """A minimal pure-Python wheel, so that pip installs without network or build backend."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "VALUE = 42\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = f"{info}/RECORD"
    lines = []
    for path, text in files.items():
        digest = (
            base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        )
        lines.append(f"{path},sha256={digest},{len(text.encode())}")
    files[record] = "\n".join([*lines, f"{record},,"]) + "\n"
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def test_shims_run_the_given_interpreter(tmp_path: Path) -> None:
    write_shims(tmp_path, sys.executable)
    result = subprocess.run(
        [str(tmp_path / "python"), "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == sys.executable


def test_packages_are_installed_once_per_requirement_set(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path)
    log = tmp_path / "install.log"
    first = install_packages(tmp_path / "cache", sys.executable, [str(wheel)], [], log)
    assert (first / "tinypkg" / "__init__.py").read_text() == "VALUE = 42\n"
    second = install_packages(tmp_path / "cache", sys.executable, [str(wheel)], [], log)
    assert second == first
    assert log.read_text().count("[trainer-sdk] installing") == 1
