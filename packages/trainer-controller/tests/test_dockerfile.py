"""The image recipe: multi-stage, non-root, from the release's wheels with the release's pinned
constraints, a base image given as a build argument, and the wheels it installs provide its
entrypoint.

No image can be built here, so this builds the wheels of the controller and its sibling packages
(offline, without dependencies) and checks what they declare.
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

import release

PACKAGE: Final = Path(__file__).resolve().parents[1]
REPO: Final = PACKAGE.parents[1]
DOCKERFILE: Final = (PACKAGE / "Dockerfile").read_text()


def test_dockerfile_is_multi_stage_and_non_root() -> None:
    assert len(re.findall(r"^FROM ", DOCKERFILE, re.MULTILINE)) >= 2
    user = re.findall(r"^USER (\S+)", DOCKERFILE, re.MULTILINE)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert "--no-index" in DOCKERFILE  # the final stage installs only the wheels built in the first


def test_base_image_is_a_build_argument_of_every_stage() -> None:
    assert re.search(r"^ARG BASE_IMAGE=\S+$", DOCKERFILE, re.MULTILINE)
    bases = re.findall(r"^FROM (\S+)", DOCKERFILE, re.MULTILINE)
    assert bases and set(bases) == {"${BASE_IMAGE}"}


def test_installs_the_release_wheels_with_the_release_constraints() -> None:
    constraints = release.CONSTRAINTS_FILE.format(name="trainer-controller")
    assert "--find-links /dist" in DOCKERFILE and "COPY dist/ /dist/" in DOCKERFILE
    assert f"--constraint /dist/{constraints}" in DOCKERFILE


@pytest.mark.slow
def test_wheels_it_installs_provide_the_entrypoint(tmp_path: Path) -> None:
    packages = [
        release.read_projects(REPO)[name].directory.name
        for name in release.dependency_closure(release.read_projects(REPO), ["trainer-controller"])
    ]
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
