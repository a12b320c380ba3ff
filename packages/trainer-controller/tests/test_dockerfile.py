"""The image recipe: multi-stage, non-root, and the wheels it installs provide its entrypoint.

No image can be built here, so this builds the same wheels the Dockerfile builds (offline, without
dependencies) and checks what they declare.
"""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parents[1]
REPO: Final = PACKAGE.parents[1]
DOCKERFILE: Final = (PACKAGE / "Dockerfile").read_text()


def test_dockerfile_is_multi_stage_and_non_root() -> None:
    assert len(re.findall(r"^FROM ", DOCKERFILE, re.MULTILINE)) >= 2
    user = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert "--no-index" in DOCKERFILE  # the final stage installs only the wheels built in the first


@pytest.mark.slow
def test_wheels_it_installs_provide_the_entrypoint(tmp_path: Path) -> None:
    packages = re.findall(
        r"\./packages/([\w-]+)", DOCKERFILE.split("pip wheel", 1)[1].split("\n\n", 1)[0]
    )
    assert "trainer-controller" in packages
    entrypoint = re.search(r'^ENTRYPOINT \["([^"]+)"', DOCKERFILE, re.MULTILINE)
    assert entrypoint is not None
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "--wheel-dir",
            str(tmp_path),
            *(str(REPO / "packages" / name) for name in packages),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    wheels = {
        path.name.split("-")[0].replace("_", "-"): zipfile.ZipFile(path)
        for path in tmp_path.glob("*.whl")
    }
    assert sorted(wheels) == sorted(packages)
    scripts: dict[str, str] = {}
    for wheel in wheels.values():
        for name in wheel.namelist():
            if name.endswith(".dist-info/entry_points.txt"):
                parser = configparser.ConfigParser()
                parser.read_string(wheel.read(name).decode())
                scripts.update(
                    parser["console_scripts"] if parser.has_section("console_scripts") else {}
                )
    target = scripts.get(entrypoint.group(1))
    assert target is not None, (
        f"no wheel declares the console script {entrypoint.group(1)!r}: {scripts}"
    )
    module = target.split(":")[0].replace(".", "/") + ".py"
    assert any(module in wheel.namelist() for wheel in wheels.values()), module
    for wheel in wheels.values():  # every repo package a wheel needs is among the wheels installed
        metadata = next(name for name in wheel.namelist() if name.endswith(".dist-info/METADATA"))
        requires = Parser().parsestr(wheel.read(metadata).decode()).get_all("Requires-Dist") or []
        siblings = {re.split(r"[=<>!~ ;\[]", requirement)[0] for requirement in requires} & {
            path.name for path in (REPO / "packages").iterdir()
        }
        assert siblings <= set(wheels), (wheel.filename, siblings)
