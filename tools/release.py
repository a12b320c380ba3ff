"""Release every package of the monorepo at one version, as wheels and sdists that install alone.

    hatch run release:release 0.2.0     # bump VERSION and the exact pins, then build and verify
    hatch run release:release --check   # build and verify the current VERSION, change nothing

Verification: every package takes its version from ../../VERSION; every requirement on a sibling
package pins exactly that version, in pyproject.toml and in the built wheel's metadata; `twine
check` passes; and each wheel, installed alone into a fresh venv (siblings from the freshly built
wheels in dist/, third-party dependencies from the index, torch held at TORCH_PIN), installs
exactly its sibling closure from dist/ and imports from the venv.

The top half of this file is pure (text and metadata in, rewritten text or problems out); the bottom
half is the thin driver that reads files, runs `build`, `twine` and `pip`, and prints.
"""

from __future__ import annotations

import argparse
import email.parser
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

ROOT: Final = Path(__file__).resolve().parents[1]
VERSION_SOURCE: Final = "../../VERSION"
TORCH_PIN: Final = "torch==2.13.0"
# Unset for every command: the Python variables would let a fresh venv see more than was installed
# into it; TRITON_INTERPRET (set by the test environment) would make importing Triton need numpy,
# which only the CPU interpreter uses. The check is then the same from any shell.
UNSET_VARIABLES: Final = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "TRITON_INTERPRET",
)
_PRINT_MODULE_FILES: Final = (
    "import importlib, sys\nfor name in sys.argv[1:]: print(importlib.import_module(name).__file__)"
)
# A quoted requirement string that pins a distribution exactly: "name[extras] == version".
_QUOTED_PIN: Final = re.compile(
    r"""(?P<quote>["'])(?P<head>(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*)"""
    r"""(?P<version>[^\s"';,]+)"""
)


class ReleaseError(Exception):
    """A release cannot go on: bad arguments, a failed build, or failed checks."""


# The classifier that package indexes refuse to accept: marks a package as never published.
PRIVATE_CLASSIFIER: Final = "Private :: Do Not Upload"


@dataclass(frozen=True)
class Project:
    """What the release needs to know about one package's pyproject.toml."""

    name: str  # canonical distribution name, e.g. "trainer-api"
    directory: Path
    requirements: tuple[Requirement, ...]  # runtime and optional dependencies
    version_source: str | None  # tool.hatch.version.path when the version is dynamic


# ---------------------------------------------------------------------------------------------
# Pure core
# ---------------------------------------------------------------------------------------------


def check_new_version(new: str, current: str) -> str:
    """The new version when it is a normalised PEP 440 version above `current`, else raise."""
    try:
        parsed = Version(new)
    except InvalidVersion:
        raise ReleaseError(f"NEW_VERSION: {new!r} is not a PEP 440 version") from None
    if str(parsed) != new:
        raise ReleaseError(f"NEW_VERSION: write {new!r} in its normal form {str(parsed)!r}")
    if parsed <= Version(current):
        raise ReleaseError(f"NEW_VERSION: {new} must be greater than the current version {current}")
    return new


def rewrite_pins(text: str, names: Collection[str], version: str) -> str:
    """`text` with each quoted exact pin `name==X` of a distribution in `names` set to `version`."""
    canonical = {canonicalize_name(name) for name in names}

    def replace(match: re.Match[str]) -> str:
        if canonicalize_name(match["name"]) not in canonical:
            return match[0]
        return f"{match['quote']}{match['head']}{version}"

    return _QUOTED_PIN.sub(replace, text)


def parse_project(pyproject: Mapping[str, Any], directory: Path) -> Project:
    """The release view of a parsed pyproject.toml; raises ReleaseError on a bad requirement."""
    project = pyproject.get("project", {})
    lines = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        lines.extend(extra)
    requirements = []
    for line in lines:
        try:
            requirements.append(Requirement(line))
        except InvalidRequirement as error:
            raise ReleaseError(
                f"{directory}/pyproject.toml: dependency {line!r}: {error}"
            ) from None
    dynamic = "version" in project.get("dynamic", [])
    source = pyproject.get("tool", {}).get("hatch", {}).get("version", {}).get("path")
    return Project(
        name=canonicalize_name(project.get("name", "")),
        directory=directory,
        requirements=tuple(requirements),
        version_source=source if dynamic else None,
    )


def pin_problems(
    owner: str, requirements: Iterable[Requirement], names: Collection[str], version: str
) -> list[str]:
    """One message per requirement on a package in `names` that is not exactly `==version`."""
    problems = []
    for requirement in requirements:
        if canonicalize_name(requirement.name) not in names:
            continue
        specifiers = list(requirement.specifier)
        exact = (
            requirement.url is None
            and len(specifiers) == 1
            and specifiers[0].operator == "=="
            and specifiers[0].version == version
        )
        if not exact:
            problems.append(
                f"{owner}: requirement {str(requirement)!r} must pin exactly =={version}"
            )
    return problems


def project_problems(projects: Mapping[str, Project], version: str) -> list[str]:
    """Version-source and pin problems of every project, in name order."""
    problems = []
    for name in sorted(projects):
        project = projects[name]
        if project.version_source != VERSION_SOURCE:
            problems.append(
                f"{name}: project.version must be dynamic with tool.hatch.version.path = "
                f"{VERSION_SOURCE!r}"
            )
        problems += pin_problems(name, project.requirements, projects.keys(), version)
    return problems


def sibling_requirements(project: Project, names: Collection[str]) -> list[str]:
    """Canonical names of the packages in `names` that `project` requires directly, sorted."""
    required = {canonicalize_name(requirement.name) for requirement in project.requirements}
    return sorted(required & set(names))


def dependency_closure(projects: Mapping[str, Project], roots: Iterable[str]) -> list[str]:
    """`roots` and every sibling they require, directly or not, sorted by name."""
    seen: set[str] = set()
    pending: list[str] = [canonicalize_name(root) for root in roots]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        if name not in projects:
            raise ReleaseError(f"--package: no package named {name!r}; known: {sorted(projects)}")
        seen.add(name)
        pending += sibling_requirements(projects[name], projects.keys())
    return sorted(seen)


def metadata_problems(
    metadata: str, expected_name: str, names: Collection[str], version: str
) -> list[str]:
    """Problems in a built distribution's core metadata (its METADATA or PKG-INFO text)."""
    message = email.parser.HeaderParser().parsestr(metadata)
    problems = []
    if canonicalize_name(message.get("Name", "")) != expected_name:
        problems.append(f"{expected_name}: metadata names {message.get('Name')!r}")
    if message.get("Version") != version:
        problems.append(
            f"{expected_name}: metadata version {message.get('Version')!r} != {version}"
        )
    requirements = [Requirement(line) for line in message.get_all("Requires-Dist", [])]
    return problems + pin_problems(f"{expected_name} (built)", requirements, names, version)


def top_level_packages(wheel_files: Iterable[str]) -> list[str]:
    """Import names a wheel installs: its top-level directories holding an __init__.py."""
    return sorted(
        {
            path.split("/")[0]
            for path in wheel_files
            if path.count("/") == 1 and path.endswith("/__init__.py")
        }
    )


def install_problems(
    report: Mapping[str, Any], expected: Collection[str], names: Collection[str], dist_url: str
) -> list[str]:
    """Problems in a `pip install --report`: the repo packages (`names`) it installed must be
    exactly `expected`, each from a wheel under `dist_url`."""
    installed = {
        canonicalize_name(item["metadata"]["name"]): item["download_info"]["url"]
        for item in report.get("install", [])
    }
    siblings = {name: url for name, url in installed.items() if name in names}
    problems = [
        f"installed {name} from {url}, not from {dist_url}"
        for name, url in sorted(siblings.items())
        if not url.startswith(dist_url)
    ]
    if set(siblings) != set(expected):
        problems.append(f"installed repo packages {sorted(siblings)}, expected {sorted(expected)}")
    return problems


def isolated_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without UNSET_VARIABLES."""
    return {key: value for key, value in environ.items() if key not in UNSET_VARIABLES}


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------


def read_projects(root: Path) -> dict[str, Project]:
    """Every published package under root/packages, by canonical name (a package classified
    ``Private :: Do Not Upload``, such as the test-support kube-standin, is not released)."""
    projects = {}
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        parsed = tomllib.loads(pyproject.read_text())
        if PRIVATE_CLASSIFIER in parsed.get("project", {}).get("classifiers", []):
            continue
        project = parse_project(parsed, pyproject.parent)
        projects[project.name] = project
    if not projects:
        raise ReleaseError(f"no packages/*/pyproject.toml under {root}")
    return projects


def read_version(root: Path) -> str:
    """The one version of every package, from root/VERSION."""
    return (root / "VERSION").read_text().strip()


def bump(root: Path, new: str) -> None:
    """Set VERSION to `new` and every exact sibling pin in packages/*/pyproject.toml to match."""
    check_new_version(new, read_version(root))
    names = read_projects(root).keys()
    for pyproject in sorted(root.glob("packages/*/pyproject.toml")):
        text = pyproject.read_text()
        rewritten = rewrite_pins(text, names, new)
        if rewritten != text:
            pyproject.write_text(rewritten)
    (root / "VERSION").write_text(new + "\n")


def run(command: Sequence[str | Path], *, cwd: Path | None = None, what: str) -> str:
    """Run a command and return its standard output; on failure raise with the output's tail."""
    result = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=isolated_environment(os.environ),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        raise ReleaseError(f"{what} failed (exit {result.returncode}):\n{tail}")
    return result.stdout


def build(project: Project, dist: Path) -> tuple[Path, Path]:
    """Build the sdist, then the wheel from it, into `dist`; return (wheel, sdist).

    The build backend (hatchling) comes from this environment, not a fresh one per build."""
    before = set(dist.iterdir())
    run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, project.directory],
        what=f"build {project.name}",
    )
    wheels = [path for path in set(dist.iterdir()) - before if path.suffix == ".whl"]
    sdists = [path for path in set(dist.iterdir()) - before if path.name.endswith(".tar.gz")]
    if len(wheels) != 1 or len(sdists) != 1:
        raise ReleaseError(f"build {project.name}: expected one wheel and one sdist in {dist}")
    return wheels[0], sdists[0]


def built_problems(
    project: Project, wheel: Path, sdist: Path, names: Collection[str], version: str
) -> list[str]:
    """Problems in the names, versions and metadata of one package's wheel and sdist."""
    wheel_name, wheel_version, _, _ = parse_wheel_filename(wheel.name)
    sdist_name, sdist_version = parse_sdist_filename(sdist.name)
    problems = [
        f"{path.name}: is {name} {found}, expected {project.name} {version}"
        for path, name, found in (
            (wheel, wheel_name, wheel_version),
            (sdist, sdist_name, sdist_version),
        )
        if name != project.name or str(found) != version
    ]
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        problems += metadata_problems(archive.read(metadata).decode(), project.name, names, version)
    return problems


def install_alone(
    project: Project, wheel: Path, dist: Path, expected: Collection[str], names: Collection[str]
) -> list[str]:
    """Install `wheel` into a fresh venv and import it there; return the problems found."""
    with tempfile.TemporaryDirectory(prefix=f"release-{project.name}-") as scratch:
        venv, report, constraints = (
            Path(scratch, "venv"),
            Path(scratch, "report.json"),
            Path(scratch, "constraints.txt"),
        )
        constraints.write_text(TORCH_PIN + "\n")
        # The fresh venv has no pip of its own: this interpreter's pip installs into it.
        run(
            [sys.executable, "-m", "venv", "--without-pip", venv],
            what=f"create a venv for {project.name}",
        )
        python = venv / "bin" / "python"
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                python,
                "install",
                "--quiet",
                "--no-compile",
                "--find-links",
                dist,
                "--constraint",
                constraints,
                "--report",
                report,
                wheel,
            ],
            what=f"pip install {wheel.name} alone",
        )
        problems = install_problems(
            json.loads(report.read_text()), expected, names, dist.resolve().as_uri()
        )
        with zipfile.ZipFile(wheel) as archive:
            modules = top_level_packages(archive.namelist())
        if not modules:
            return [*problems, f"{wheel.name}: installs no importable package"]
        # The last line per module is its file (an import may print warnings or more before it).
        locations = run(
            [
                python,
                "-c",
                _PRINT_MODULE_FILES,
                *modules,
            ],
            cwd=Path(scratch),
            what=f"import {', '.join(modules)} from the fresh venv",
        ).splitlines()[-len(modules) :]
        problems += [
            f"{location} is not inside the fresh venv {venv}"
            for location in locations
            if not location.startswith(str(venv))
        ]
        return problems


def release(root: Path, dist: Path, selected: Sequence[str]) -> list[str]:
    """Build and verify the selected packages (all when empty) and the siblings they need."""
    version = read_version(root)
    projects = read_projects(root)
    names = projects.keys()
    problems = project_problems(projects, version)
    if problems:
        return problems
    chosen = dependency_closure(projects, selected or projects)
    start = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - start:4.0f}s] {message}", flush=True)

    dist.mkdir(parents=True, exist_ok=True)
    for stale in [*dist.glob("*.whl"), *dist.glob("*.tar.gz")]:
        stale.unlink()
    built = {}
    for name in chosen:
        say(f"build {name} {version}")
        built[name] = build(projects[name], dist)
        problems += built_problems(projects[name], *built[name], names, version)
    run(
        [sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir())],
        what="twine check",
    )
    say(f"twine check: {len(built) * 2} files pass")
    targets = [canonicalize_name(name) for name in selected] or chosen
    for name in targets:
        expected = dependency_closure(projects, [name])
        say(f"install {name} alone (repo packages it pulls in: {', '.join(expected)})")
        problems += install_alone(projects[name], built[name][0], dist, expected, names)
    say("done")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: bump (NEW_VERSION) or --check, then build and verify."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "new_version", nargs="?", metavar="NEW_VERSION", help="the version to release"
    )
    parser.add_argument("--check", action="store_true", help="build and verify without bumping")
    parser.add_argument(
        "--package", action="append", default=[], help="verify only this package (repeatable)"
    )
    parser.add_argument(
        "--dist", type=Path, default=ROOT / "dist", help="output folder (default: dist/)"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check == (args.new_version is not None):
        parser.error("give either NEW_VERSION or --check")
    try:
        if args.new_version is not None:
            bump(args.root, args.new_version)
            print(f"bumped VERSION and sibling pins to {args.new_version}", flush=True)
        problems = release(args.root, args.dist.resolve(), args.package)
    except ReleaseError as error:
        print(f"release: error: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"release: problem: {problem}", file=sys.stderr)
    if problems:
        if args.new_version is not None:
            print(
                f"release: VERSION stays bumped to {args.new_version}; fix, then rerun with --check"
            )
        return 1
    print(f"release: {read_version(args.root)} ok, artefacts in {args.dist}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
