"""Release every package of the monorepo at one version, as wheels and sdists that install alone.

    hatch run release:release 0.2.0     # bump VERSION and the exact pins, then build and verify
    hatch run release:release --check   # build and verify the current VERSION, change nothing

Verification: no distribution name is taken on the package index by another project; every
package takes its version from ../../VERSION; every requirement on a sibling package pins exactly
that version, in pyproject.toml and in the built wheel's metadata; every sdist and wheel ships the
repository's LICENSE; `twine check` passes; each README has an install line, a quickstart and no
link that only works inside the repository. Then each wheel, installed alone into a fresh venv
(plus the extras its README's install line names; siblings from the freshly built wheels in dist/,
third-party dependencies from the index, torch held at TORCH_PIN), installs exactly its sibling
closure from dist/, imports from the venv, answers `--version` on each console command, and runs
its README's quickstart from a directory outside the repository. The report ends with each
package's installed size and dependency count.

Besides wheels and sdists, dist/ receives `NAME-constraints.txt` (every distribution the package
installed alone, pinned: the controller image installs with it) and, for a package with kustomize
manifests, one self-contained install file per overlay (`NAME-OVERLAY.yaml`, rendered with
`kubectl kustomize` and validated against the Kubernetes OpenAPI schemas).

The top half of this file is pure (text and metadata in, rewritten text or problems out); the bottom
half is the thin driver that reads files, runs `build`, `twine`, `pip` and `kubectl`, and prints.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import configparser
import email.parser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
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


INDEX_URL: Final = "https://pypi.org/simple"
# pip's words when an index has no project of the name (any other failure is not an answer).
_NO_SUCH_PROJECT: Final = "No matching distribution found"
QUICKSTART_TIMEOUT_SECONDS: Final = 600
QUICKSTART_LANGUAGES: Final = {"python": "python", "py": "python", "bash": "bash", "sh": "bash"}
_FENCE: Final = re.compile(
    r"^```(?P<language>[\w-]*)[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL
)
_PIP_INSTALL: Final = re.compile(r"^\s*(?:\$\s+)?pip install (?P<arguments>.+)$", re.MULTILINE)
# A Markdown link or image whose target is neither absolute nor an anchor on the same page.
_RELATIVE_LINK: Final = re.compile(r"\]\((?!https?://|mailto:|#)(?P<target>[^)\s]+)\)")
_INLINE_CODE: Final = re.compile(r"`[^`\n]*`")
# Core metadata every published distribution carries, with what sets it in pyproject.toml.
REQUIRED_METADATA: Final = {
    "License-Expression": "project.license",
    "License-File": "project.license-files",
    "Author": "project.authors",
    "Classifier": "project.classifiers",
    "Project-URL": "[project.urls]",
    "Summary": "project.description",
}
MANIFESTS_FILE: Final = "{name}-{target}.yaml"
CONSTRAINTS_FILE: Final = "{name}-constraints.txt"


class ReleaseError(Exception):
    """A release cannot go on: bad arguments, a failed build, or failed checks."""


@dataclass(frozen=True)
class Quickstart:
    """The code a README tells a new user to run first."""

    language: str  # "python" or "bash"
    code: str


# The classifier that package indexes refuse to accept: marks a package as never published.
PRIVATE_CLASSIFIER: Final = "Private :: Do Not Upload"


@dataclass(frozen=True)
class Project:
    """What the release needs to know about one package's pyproject.toml."""

    name: str  # canonical distribution name, e.g. "trainer-api"
    directory: Path
    requirements: tuple[Requirement, ...]  # runtime and optional dependencies
    version_source: str | None  # tool.hatch.version.path when the version is dynamic
    quickstart_env: Mapping[str, str] = field(default_factory=dict)  # tool.release.quickstart-env


@dataclass(frozen=True)
class Image:
    """A container image built from the release (`packages/*/images/<name>/`): its Dockerfile
    installs `requirements` with `dist/<name>-constraints.txt`; `smoke` is the bash the release
    check runs in a fresh venv holding only those requirements."""

    name: str
    directory: Path
    requirements: tuple[str, ...]
    smoke: str


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
        quickstart_env=dict(pyproject.get("tool", {}).get("release", {}).get("quickstart-env", {})),
    )


def parse_image(document: Mapping[str, Any], directory: Path) -> Image:
    """An image's `image.toml` (`requirements`, `smoke`); ReleaseError names what is missing."""
    requirements, smoke = document.get("requirements"), document.get("smoke")
    if not isinstance(requirements, list) or not requirements or not isinstance(smoke, str):
        raise ReleaseError(
            f"{directory}/image.toml: expected requirements (a list of requirement strings) "
            "and smoke (bash)"
        )
    for line in requirements:
        try:
            Requirement(line)
        except InvalidRequirement as error:
            raise ReleaseError(f"{directory}/image.toml: requirement {line!r}: {error}") from None
    return Image(directory.name, directory, tuple(requirements), smoke)


# An image reference of this project: registry/name:tag.
_IMAGE_REFERENCE: Final = re.compile(
    r"ghcr\.io/trainer-platform/(?P<name>[a-z0-9._-]+):(?P<tag>[\w.-]+)"
)


def rewrite_image_references(text: str, names: Collection[str], version: str) -> str:
    """`text` with every tagged reference to one of the images `names` tagged `version`."""

    def replace(match: re.Match[str]) -> str:
        return match[0] if match["name"] not in names else match[0][: -len(match["tag"])] + version

    return _IMAGE_REFERENCE.sub(replace, text)


def image_reference_problems(
    label: str, text: str, names: Collection[str], version: str
) -> list[str]:
    """A tagged reference to an image this repository builds must carry the release's tag."""
    return [
        f"{label}: image {match[0]} is not tagged {version}"
        for match in _IMAGE_REFERENCE.finditer(text)
        if match["name"] in names and match["tag"] != version
    ]


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
    problems += [
        f"{expected_name}: metadata has no {field_name} (set {where} in pyproject.toml)"
        for field_name, where in REQUIRED_METADATA.items()
        if not message.get_all(field_name)
    ]
    requirements = [Requirement(line) for line in message.get_all("Requires-Dist", [])]
    return problems + pin_problems(f"{expected_name} (built)", requirements, names, version)


def shipped_problems(
    archive: str, files: Mapping[str, bytes | None], license_text: bytes, modules: Iterable[str]
) -> list[str]:
    """Problems in what one wheel or sdist ships: `files` maps each path in it to its content
    (None when not read). It must hold the repository's LICENSE text and, for each of `modules`,
    a py.typed marker."""
    licences = [path for path in files if path.rsplit("/", 1)[-1] == "LICENSE"]
    problems = []
    if not licences:
        problems.append(f"{archive}: ships no LICENSE")
    problems += [
        f"{archive}: {path} is not the repository's LICENSE"
        for path in licences
        if files[path] != license_text
    ]
    problems += [
        f"{archive}: ships no {module}/py.typed (the package has type hints)"
        for module in modules
        if not any(path.endswith(f"{module}/py.typed") for path in files)
    ]
    return problems


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


def name_problems(names: Iterable[str], taken: Callable[[str], bool]) -> list[str]:
    """One message per distribution name that `taken` (a package index lookup) says exists."""
    return [
        f"{name}: the name is taken on the package index by another project (pip download "
        f"--no-deps {name} finds it); `pip install {name}` would not install this package"
        for name in sorted(names)
        if taken(name)
    ]


def _sections(text: str) -> dict[str, str]:
    """Level-2 headings of a Markdown text (lower case) to their bodies; "" for the top."""
    sections: dict[str, str] = {}
    heading = ""
    for part in re.split(r"^(## .*)$", text, flags=re.MULTILINE):
        if part.startswith("## "):
            heading = part[3:].strip().lower()
        else:
            sections[heading] = sections.get(heading, "") + part
    return sections


def quickstart_of(readme: str) -> Quickstart | None:
    """The first python or bash block of the README's "Quickstart" section."""
    body = next((b for h, b in _sections(readme).items() if h.startswith("quickstart")), "")
    for match in _FENCE.finditer(body):
        if match["language"] in QUICKSTART_LANGUAGES:
            return Quickstart(QUICKSTART_LANGUAGES[match["language"]], match["body"])
    return None


def install_requirement(name: str, readme: str) -> Requirement | None:
    """The requirement on `name` in the README's first `pip install` line inside a code block."""
    for fence in _FENCE.finditer(readme):
        for line in _PIP_INSTALL.finditer(fence["body"]):
            for argument in shlex.split(line["arguments"], comments=True):
                try:
                    requirement = Requirement(argument)
                except InvalidRequirement:
                    continue
                if canonicalize_name(requirement.name) == name:
                    return requirement
    return None


def readme_problems(name: str, readme: str) -> list[str]:
    """An install line, a quickstart, and no link that works only inside the repository."""
    problems = [
        f"{name}: README.md links to {match['target']!r}, which does not exist off the "
        "repository (on the package index); use an absolute URL"
        for match in _RELATIVE_LINK.finditer(_INLINE_CODE.sub("", _FENCE.sub("", readme)))
    ]
    if install_requirement(name, readme) is None:
        problems.append(f"{name}: README.md has no `pip install {name}` line in a code block")
    if quickstart_of(readme) is None:
        problems.append(
            f"{name}: README.md has no '## Quickstart' section with a python or bash block"
        )
    return problems


def console_scripts(entry_points: str) -> list[str]:
    """The console command names of a wheel's entry_points.txt, sorted."""
    parser = configparser.ConfigParser()
    parser.read_string(entry_points)
    if not parser.has_section("console_scripts"):
        return []
    return sorted(parser["console_scripts"])


def version_problem(command: str, output: str, version: str) -> str | None:
    """A problem when `command --version` did not print a line ending in `version`."""
    lines = output.strip().splitlines()
    if lines and lines[-1].split()[-1:] == [version]:
        return None
    return f"{command} --version printed {output.strip()!r}, expected a line ending in {version}"


def constraints_text(report: Mapping[str, Any]) -> str:
    """`name==version` of everything a `pip install --report` installed, sorted by name."""
    pins = sorted(
        (canonicalize_name(item["metadata"]["name"]), item["metadata"]["version"])
        for item in report.get("install", [])
    )
    return "".join(f"{name}=={version}\n" for name, version in pins)


@dataclass(frozen=True)
class Footprint:
    """What installing one package alone costs a user."""

    name: str
    installed_bytes: int  # the fresh venv's site-packages after the install
    dependencies: int  # distributions installed besides the package itself


def footprint_table(footprints: Iterable[Footprint]) -> str:
    """The footprints as an aligned text table, largest first."""
    rows = sorted(footprints, key=lambda row: (-row.installed_bytes, row.name))
    lines = [f"{'package':<24} {'installed':>11} {'dependencies':>12}"]
    lines += [
        f"{row.name:<24} {row.installed_bytes / 2**20:>8.2f} MB {row.dependencies:>12}"
        for row in rows
    ]
    return "\n".join(lines)


def manifest_problems(
    label: str, documents: Sequence[object], image: str, version: str, with_crds: bool
) -> list[str]:
    """Problems in one rendered install file: objects without identity, missing CRDs, and a
    controller image (a container image named `image`) not tagged with `version`."""
    problems = []
    kinds = set()
    for index, document in enumerate(documents):
        if not isinstance(document, dict) or not all(
            document.get(key) for key in ("apiVersion", "kind")
        ) or not (document.get("metadata") or {}).get("name"):  # fmt: skip
            problems.append(f"{label}: document {index} has no apiVersion, kind and metadata.name")
            continue
        kinds.add(document["kind"])
        for found in _container_images(document):
            name, _, tag = found.rpartition(":")
            if name.rsplit("/", 1)[-1] == image and tag != version:
                problems.append(f"{label}: image {found} is not tagged {version}")
    if with_crds and "CustomResourceDefinition" not in kinds:
        problems.append(
            f"{label}: has no CustomResourceDefinition (an install file ships its CRDs)"
        )
    return problems


def _container_images(document: Mapping[str, Any]) -> list[str]:
    template = (document.get("spec") or {}).get("template") or {}
    pod = template.get("spec") or {}
    containers = [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]
    return [container["image"] for container in containers if container.get("image")]


def rewrite_image_tags(text: str, version: str) -> str:
    """A kustomization's text with every `newTag:` set to `version`."""
    return re.sub(r"^(\s*newTag:\s*)\S+", rf"\g<1>{version}", text, flags=re.MULTILINE)


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


def read_images(root: Path) -> dict[str, Image]:
    """Every image the repository builds (`packages/*/images/*/image.toml`), by name."""
    images = {}
    for path in sorted(root.glob("packages/*/images/*/image.toml")):
        image = parse_image(tomllib.loads(path.read_text()), path.parent)
        images[image.name] = image
    return images


RUNTIME_FILES: Final = "packages/trainer-runtime/src/trainer_runtime/runtimes/*.yaml"
"""The built-in runtimes, which name the images at the release tag."""


def read_version(root: Path) -> str:
    """The one version of every package, from root/VERSION."""
    return (root / "VERSION").read_text().strip()


def bump(root: Path, new: str) -> None:
    """Set VERSION to `new`, every exact sibling pin in packages/*/pyproject.toml, every image
    tag (`newTag:`) in the packages' kustomizations and the tag of every image of this
    repository that a built-in runtime names to match."""
    check_new_version(new, read_version(root))
    names = read_projects(root).keys()
    images = read_images(root).keys()
    rewrites: list[tuple[str, Callable[[str], str]]] = [
        ("packages/*/pyproject.toml", lambda text: rewrite_pins(text, names, new)),
        ("packages/*/manifests/**/kustomization.yaml", lambda text: rewrite_image_tags(text, new)),
        (RUNTIME_FILES, lambda text: rewrite_image_references(text, images, new)),
    ]
    for pattern, rewrite in rewrites:
        for path in sorted(root.glob(pattern)):
            text = path.read_text()
            rewritten = rewrite(text)
            if rewritten != text:
                path.write_text(rewritten)
    (root / "VERSION").write_text(new + "\n")


def run(
    command: Sequence[str | Path],
    *,
    cwd: Path | None = None,
    what: str,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    tail_lines: int = 40,
) -> str:
    """Run a command and return its standard output; on failure raise with the output's tail."""
    try:
        result = subprocess.run(
            [str(part) for part in command],
            cwd=cwd,
            env={**isolated_environment(os.environ), **(env or {})},
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as error:
        raise ReleaseError(f"{what} did not finish within {timeout:.0f} s") from error
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-tail_lines:])
        raise ReleaseError(f"{what} failed (exit {result.returncode}):\n{tail}")
    return result.stdout


def taken_on_index(name: str) -> bool:
    """Whether the package index has a project called `name`: `pip download --no-deps` of it,
    from the index alone (no pip configuration, no local wheels), succeeds."""
    with tempfile.TemporaryDirectory(prefix="release-name-") as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                   "--index-url", INDEX_URL, "--dest", scratch, name]  # fmt: skip
        environ = {
            **isolated_environment(os.environ),
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_FIND_LINKS": "",
            "PIP_CONSTRAINT": "",
        }
        result = subprocess.run(command, env=environ, capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return True
    if _NO_SUCH_PROJECT in result.stderr:
        return False
    raise ReleaseError(f"cannot ask {INDEX_URL} whether {name!r} is taken:\n{result.stderr}")


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
    project: Project,
    wheel: Path,
    sdist: Path,
    names: Collection[str],
    version: str,
    license_text: bytes,
) -> list[str]:
    """Problems in the names, versions, metadata and shipped files of one package's wheel and
    sdist."""
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
        modules = top_level_packages(archive.namelist())
        wheel_files = {
            path: archive.read(path) if path.endswith("/LICENSE") else None
            for path in archive.namelist()
        }
    problems += shipped_problems(wheel.name, wheel_files, license_text, modules)
    with tarfile.open(sdist) as archive:
        sdist_files = {
            member.name: _read_member(archive, member) if member.name.endswith("/LICENSE") else None
            for member in archive.getmembers()
        }
    return problems + shipped_problems(sdist.name, sdist_files, license_text, modules)


def _read_member(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes | None:
    stream = archive.extractfile(member)
    return stream.read() if stream is not None else None


def render_manifests(project: Project, dist: Path, version: str) -> list[str]:
    """One self-contained install file per kustomize target of the package (each overlay, and
    any other top-level kustomization but `base`) into `dist`, rendered with `kubectl kustomize`
    and validated; return the problems."""
    manifests = project.directory / "manifests"
    # target -> (its directory, whether it must ship CRDs): an overlay installs the whole
    # controller, CRDs included; another top-level kustomization (runtimes, CRDs) is a part.
    targets = {
        path.parent.name: (path.parent, False)
        for path in sorted(manifests.glob("*/kustomization.yaml"))
        if path.parent.name not in ("base", "overlays")
    } | {
        path.parent.name: (path.parent, True)
        for path in sorted(manifests.glob("overlays/*/kustomization.yaml"))
    }
    if not targets:
        return []
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return [f"{project.name}: kubectl is not on PATH; it renders the install manifests"]
    problems = []
    for target, (directory, with_crds) in targets.items():
        text = run([kubectl, "kustomize", directory], what=f"kubectl kustomize {directory}")
        output = dist / MANIFESTS_FILE.format(name=project.name, target=target)
        output.write_text(text)
        documents = [document for document in yaml.safe_load_all(text) if document]
        problems += manifest_problems(
            output.name, documents, project.name, version, with_crds=with_crds
        )
        problems += schema_problems(output.name, documents)
    return problems


def schema_problems(label: str, documents: Iterable[Any]) -> list[str]:
    """Each built-in Kubernetes object checked against the newest OpenAPI schema that
    kubernetes-validate holds (strict: an unknown field is a problem); custom resources skipped."""
    import kubernetes_validate  # type: ignore[import-untyped]  # the release env has it

    version = kubernetes_validate.latest_version()
    problems = []
    for document in documents:
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            continue  # a custom resource (its CRD is in the same file)
        except kubernetes_validate.ValidationError as error:
            name = f"{document.get('kind')}/{document.get('metadata', {}).get('name')}"
            problems.append(f"{label}: {name} on Kubernetes {version}: {error.message}")
    return problems


@dataclass(frozen=True)
class Installed:
    """One package installed alone: what went wrong, what it cost, and its pinned closure."""

    problems: list[str]
    footprint: Footprint
    constraints: str


def install_alone(
    project: Project,
    wheel: Path,
    dist: Path,
    expected: Collection[str],
    names: Collection[str],
    version: str,
    scratch: Path,
) -> Installed:
    """Install `wheel` (with the extras its README's install line names) into a fresh venv in
    the empty directory `scratch`; there import it, run each console command's --version and the
    README's quickstart."""
    readme = (project.directory / "README.md").read_text()
    requirement = install_requirement(project.name, readme)
    extras = (
        f"[{','.join(sorted(requirement.extras))}]" if requirement and requirement.extras else ""
    )
    venv, report_file, constraints = (
        scratch / "venv",
        scratch / "report.json",
        scratch / "constraints.txt",
    )
    constraints.write_text(TORCH_PIN + "\n")
    # The fresh venv has no pip of its own: this interpreter's pip installs into it.
    run(
        [sys.executable, "-m", "venv", "--without-pip", venv],
        what=f"create a venv for {project.name}",
    )
    python = venv / "bin" / "python"
    run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--quiet",
         "--no-compile", "--find-links", dist, "--constraint", constraints,
         "--report", report_file, f"{wheel}{extras}"],
        what=f"pip install {wheel.name}{extras} alone",
    )  # fmt: skip
    report = json.loads(report_file.read_text())
    problems = install_problems(report, expected, names, dist.resolve().as_uri())
    with zipfile.ZipFile(wheel) as archive:
        modules = top_level_packages(archive.namelist())
        entry_points = "".join(
            archive.read(name).decode()
            for name in archive.namelist()
            if name.endswith(".dist-info/entry_points.txt")
        )
    if not modules:
        problems.append(f"{wheel.name}: installs no importable package")
    else:
        problems += _imported_from(python, modules, venv, scratch)
    for command in console_scripts(entry_points):
        output = run([venv / "bin" / command, "--version"], cwd=scratch,
                     what=f"{command} --version in the fresh venv")  # fmt: skip
        problem = version_problem(command, output, version)
        problems += [problem] if problem else []
    problems += _run_quickstart(project, readme, venv, scratch)
    site = next(venv.glob("lib/python*/site-packages"))
    size = sum(path.stat().st_size for path in site.rglob("*") if path.is_file())
    footprint = Footprint(project.name, size, len(report.get("install", [])) - 1)
    return Installed(problems, footprint, constraints_text(report))


def _imported_from(python: Path, modules: Sequence[str], venv: Path, cwd: Path) -> list[str]:
    """Import `modules` with the venv's Python; a problem for each not loaded from the venv."""
    # The last line per module is its file (an import may print warnings or more before it).
    locations = run(
        [python, "-c", _PRINT_MODULE_FILES, *modules],
        cwd=cwd,
        what=f"import {', '.join(modules)} from the fresh venv",
    ).splitlines()[-len(modules) :]
    return [
        f"{location} is not inside the fresh venv {venv}"
        for location in locations
        if not location.startswith(str(venv))
    ]


def _run_quickstart(project: Project, readme: str, venv: Path, scratch: Path) -> list[str]:
    """The README's quickstart, run as written by the venv's Python (or bash with the venv's
    commands first on PATH) in an empty directory with an empty home, outside the repository."""
    quickstart = quickstart_of(readme)
    if quickstart is None:
        return []  # readme_problems reports it
    home = scratch / "home"
    home.mkdir()
    script = home / ("quickstart.py" if quickstart.language == "python" else "quickstart.sh")
    script.write_text(quickstart.code)
    interpreter = venv / "bin" / "python" if quickstart.language == "python" else "bash"
    environ = {
        "HOME": str(home),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(home / "no-kubeconfig"),  # never a cluster of the machine's user
        **project.quickstart_env,
    }
    try:
        run([interpreter, script], cwd=home, env=environ, timeout=QUICKSTART_TIMEOUT_SECONDS,
            what=f"{project.name}'s README quickstart ({quickstart.language})",
            tail_lines=200)  # fmt: skip
    except ReleaseError as error:
        return [str(error)]
    return []


def install_image(image: Image, dist: Path, scratch: Path) -> tuple[list[str], str]:
    """Install the image's requirement set into a fresh venv (siblings from `dist`, torch held at
    TORCH_PIN) and run its smoke command there, in an empty directory outside the repository;
    the problems and the constraints file's text."""
    venv, report_file, constraints = (
        scratch / "venv",
        scratch / "report.json",
        scratch / "constraints.txt",
    )
    constraints.write_text(TORCH_PIN + "\n")
    run([sys.executable, "-m", "venv", "--without-pip", venv], what=f"a venv for {image.name}")
    run(
        [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--quiet",
         "--no-compile", "--find-links", dist, "--constraint", constraints,
         "--report", report_file, *image.requirements],
        what=f"pip install {' '.join(image.requirements)} for the {image.name} image",
    )  # fmt: skip
    home = scratch / "home"
    home.mkdir()
    environ = {
        "HOME": str(home),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",  # the smoke builds what it needs; nothing may be downloaded
    }
    try:
        run(["bash", "-euo", "pipefail", "-c", image.smoke], cwd=home, env=environ,
            timeout=QUICKSTART_TIMEOUT_SECONDS, what=f"the {image.name} image's smoke command",
            tail_lines=200)  # fmt: skip
        problems = []
    except ReleaseError as error:
        problems = [str(error)]
    return problems, constraints_text(json.loads(report_file.read_text()))


def release(
    root: Path, dist: Path, selected: Sequence[str], taken: Callable[[str], bool] = taken_on_index
) -> list[str]:
    """Build and verify the selected packages (all when empty) and the siblings they need."""
    version = read_version(root)
    projects = read_projects(root)
    names = projects.keys()
    problems = project_problems(projects, version)
    if problems:
        return problems
    chosen = dependency_closure(projects, selected or projects)
    license_file = root / "LICENSE"
    if not license_file.is_file():
        raise ReleaseError(f"{license_file}: missing; every sdist and wheel ships it")
    license_text = license_file.read_bytes()
    start = time.monotonic()

    def say(message: str) -> None:
        print(f"[{time.monotonic() - start:4.0f}s] {message}", flush=True)

    say(f"names free on {INDEX_URL}? {', '.join(chosen)}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:  # one index query each
        answers = dict(zip(chosen, pool.map(taken, chosen), strict=True))
    problems += name_problems(chosen, answers.__getitem__)
    for name in chosen:
        problems += readme_problems(name, (projects[name].directory / "README.md").read_text())
    images = read_images(root)
    for path in sorted(root.glob(RUNTIME_FILES)):
        problems += image_reference_problems(path.name, path.read_text(), images, version)
    dist.mkdir(parents=True, exist_ok=True)
    for stale in [*dist.glob("*.whl"), *dist.glob("*.tar.gz"), *dist.glob("*.yaml"),
                  *dist.glob(CONSTRAINTS_FILE.format(name="*"))]:  # fmt: skip
        stale.unlink()
    built = {}
    for name in chosen:
        say(f"build {name} {version}")
        built[name] = build(projects[name], dist)
        problems += built_problems(projects[name], *built[name], names, version, license_text)
    archives = [path for pair in built.values() for path in pair]
    run([sys.executable, "-m", "twine", "check", "--strict", *sorted(archives)],
        what="twine check")  # fmt: skip
    say(f"twine check: {len(archives)} files pass")
    for name in chosen:
        problems += render_manifests(projects[name], dist, version)
    targets = [canonicalize_name(name) for name in selected] or chosen
    footprints = []
    # A venv with torch is a gigabyte of small files: each is deleted while the next installs.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as cleaner:
        for name in targets:
            expected = dependency_closure(projects, [name])
            say(f"install {name} alone (repo packages it pulls in: {', '.join(expected)})")
            scratch = Path(tempfile.mkdtemp(prefix=f"release-{name}-"))
            try:
                installed = install_alone(
                    projects[name], built[name][0], dist, expected, names, version, scratch
                )
            finally:
                cleaner.submit(shutil.rmtree, scratch, ignore_errors=True)
            problems += installed.problems
            footprints.append(installed.footprint)
            (dist / CONSTRAINTS_FILE.format(name=name)).write_text(installed.constraints)
        for image in images.values():
            needs = {canonicalize_name(Requirement(line).name) for line in image.requirements}
            if not needs <= set(chosen):
                continue
            say(f"image {image.name}: install {' '.join(image.requirements)}, run its smoke")
            scratch = Path(tempfile.mkdtemp(prefix=f"release-image-{image.name}-"))
            try:
                image_problems, constraints = install_image(image, dist, scratch)
            finally:
                cleaner.submit(shutil.rmtree, scratch, ignore_errors=True)
            problems += image_problems
            (dist / CONSTRAINTS_FILE.format(name=image.name)).write_text(constraints)
    say("done")
    print(footprint_table(footprints), flush=True)
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
