"""``packages_to_install`` on the local backend: what the job's Python already has is used as is.

At submit, ``plan_packages`` reads each requirement with ``packaging`` and compares it with the
distributions the job's interpreter imports (``importlib.metadata``):

- satisfied (name present, version within the specifier, marker true or not for this
  environment): not installed again; a job whose requirements are all satisfied runs no pip;
- present with a version outside the specifier: a conflict, refused before the job starts with
  both versions, unless the backend opted in to ``isolated_packages``: then pip resolves the
  conflicting and the missing requirements against the environment with torch held at the
  environment's version (``--dry-run --report``), and exactly the distributions it would add or
  change, never torch (``PROTECTED``), are ``pip install --target --no-deps``-ed apart and put
  first on the ranks' path, as an explicit choice; everything else still comes from the
  environment, torch always (a requirement of another torch is refused even then);
- anything else (absent, with extras, a URL or path pip alone can read): installed by
  ``install_missing`` into ``<root>/.packages/<key>`` with ``pip install --prefix``, which sees the
  environment's distributions as installed, under a constraints file pinning every one of them,
  so pip can add what is missing but never replace, upgrade or shadow what the environment has.
  The prefix's site directories go *after* the existing ``PYTHONPATH``.

Each installed set is kept (keyed by requirements, index URLs and the environment's pins) and
reused by the next job; ``cache_entries``/``prune_cache`` show and remove them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from trainer_sdk.backends.local.jobdir import make_private_dir, open_private, write_json
from trainer_sdk.errors import InvalidTrainJobError

if TYPE_CHECKING:
    from trainer_api import FieldError

__all__ = [
    "CACHE_DIR",
    "CacheEntry",
    "PackageInstallError",
    "PackagePlan",
    "cache_entries",
    "environment_versions",
    "install_missing",
    "plan_packages",
    "prune_cache",
]

CACHE_DIR: Final = ".packages"
"""The cache's directory under the local backend's root."""
PROTECTED: Final = frozenset({"torch"})
"""Distributions a job always imports from its environment: never installed apart, and a
requirement of another version is refused even with ``isolated_packages``."""
PIP_TIMEOUT_SECONDS: Final = 3600.0
_ERROR_LINES: Final = 20
_VERSIONS_SCRIPT: Final = (
    "import importlib.metadata as m, json\n"
    "print(json.dumps([[d.metadata['Name'], d.version] for d in m.distributions()]))\n"
)


class PackageInstallError(RuntimeError):
    """pip could not install the missing requirements; the message carries pip's error."""


@dataclass(frozen=True)
class PackagePlan:
    """What a job's ``packages_to_install`` needs, against the job's Python environment."""

    requirements: tuple[str, ...] = ()
    satisfied: tuple[tuple[str, str], ...] = ()
    """(requirement, version the environment has)."""
    missing: tuple[str, ...] = ()
    isolated: bool = False
    pins: tuple[str, ...] = field(default=(), repr=False)
    """``name==version`` of every distribution the environment has: pip's constraints."""

    def to_document(self) -> dict[str, Any]:
        """The plan as the job's ``plan.json`` keeps it for the supervisor."""
        return {
            "requirements": list(self.requirements),
            "satisfied": [list(pair) for pair in self.satisfied],
            "missing": list(self.missing),
            "isolated": self.isolated,
            "pins": list(self.pins),
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> PackagePlan:
        """The plan ``to_document`` wrote."""
        return cls(
            requirements=tuple(document["requirements"]),
            satisfied=tuple((str(r), str(v)) for r, v in document["satisfied"]),
            missing=tuple(document["missing"]),
            isolated=bool(document["isolated"]),
            pins=tuple(document["pins"]),
        )


def environment_versions(python: str) -> dict[str, str]:
    """Canonical distribution name -> version, for what ``python`` imports with this process's
    environment (the ranks inherit it). The first of a name on the path wins, as for imports."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        pairs = [(dist.metadata["Name"], dist.version) for dist in metadata.distributions()]
    else:
        result = subprocess.run(
            [python, "-c", _VERSIONS_SCRIPT],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"could not list the distributions of {python}: {result.stderr.strip()}"
            )
        pairs = json.loads(result.stdout)
    versions: dict[str, str] = {}
    for name, version in pairs:
        if name:
            versions.setdefault(canonicalize_name(name), version)
    return versions


def plan_packages(requirements: Sequence[str], python: str, isolated: bool = False) -> PackagePlan:
    """Split ``requirements`` into satisfied and missing; raise InvalidTrainJobError naming each
    entry that is not a PEP 508 requirement (an option, a path: never handed to pip), and each
    requirement the environment has at another version unless ``isolated`` (then those and the
    missing ones are installed apart)."""
    if not requirements:
        return PackagePlan()
    versions = environment_versions(python)
    satisfied: list[tuple[str, str]] = []
    missing: list[str] = []
    conflicting: list[str] = []
    conflicts: list[FieldError] = []
    invalid: list[FieldError] = []
    protected: list[FieldError] = []
    for index, text in enumerate(requirements):
        try:
            requirement = Requirement(text)
        except InvalidRequirement:  # an option or a path: never handed to pip
            invalid.append(_not_a_requirement(index, text))
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            satisfied.append((text, "not for this environment"))
            continue
        version = versions.get(canonicalize_name(requirement.name))
        if version is None or requirement.url or requirement.extras:
            missing.append(text)
        elif requirement.specifier.contains(version, prereleases=True):
            satisfied.append((text, version))
        elif canonicalize_name(requirement.name) in PROTECTED:
            protected.append(_conflict(index, text, requirement.name, version, python, True))
        else:
            conflicting.append(text)
            conflicts.append(_conflict(index, text, requirement.name, version, python))
    if invalid or protected or (conflicts and not isolated):
        raise InvalidTrainJobError(invalid + protected + ([] if isolated else conflicts))
    return PackagePlan(
        requirements=tuple(requirements),
        satisfied=tuple(satisfied),
        missing=tuple(conflicting + missing),
        isolated=bool(conflicting),
        pins=tuple(_pins(versions)),
    )


def _conflict(
    index: int, text: str, name: str, version: str, python: str, protected: bool = False
) -> FieldError:
    # Imported here: the supervisor imports this module to install, and the API models cost
    # it a third of a second at every job's start.
    from trainer_api import FieldError

    where = f"{text!r} conflicts with {name} {version} in the job's environment ({python}); "
    if protected:
        return FieldError(
            f"packages_to_install[{index}]",
            where + f"{name} is always the environment's, also with isolated_packages; run "
            "the job in an environment that has the version it needs (LocalBackendConfig("
            "python=...))",
        )
    return FieldError(
        f"packages_to_install[{index}]",
        where + "use a requirement that version satisfies, or opt in to an isolated install "
        "with LocalBackendConfig(isolated_packages=True) (the ranks then import the requested "
        "version instead of the environment's; torch stays the environment's)",
    )


def _not_a_requirement(index: int, text: str) -> FieldError:
    from trainer_api import FieldError

    from trainer_sdk.manifests.requirements import requirement_problem

    return FieldError(f"packages_to_install[{index}]", requirement_problem(text) or text)


def _pins(versions: dict[str, str]) -> Iterable[str]:
    for name, version in sorted(versions.items()):
        try:
            Version(version)
        except InvalidVersion:
            continue
        yield f"{name}=={version}"


def install_missing(
    cache_root: Path,
    python: str,
    plan: PackagePlan,
    index_urls: Sequence[str],
    logs: Sequence[Path],
    on_event: Callable[[str, str], None],
) -> list[Path]:
    """Install ``plan.missing`` once per set (pip's output to every log in ``logs``, events
    through ``on_event(reason, message)``); returns the directories to put on the path."""
    for requirement, version in plan.satisfied:
        on_event("PackageFromEnvironment", f"{requirement}: {version}, not installed again")
    if not plan.missing:
        return []
    key_source = [sorted(plan.missing), list(index_urls), plan.isolated, python, list(plan.pins)]
    key = hashlib.sha256(json.dumps(key_source).encode()).hexdigest()[:16]
    target = cache_root / key
    if not (target / "manifest.json").is_file():
        on_event("InstallingPackages", f"installing {' '.join(plan.missing)} into {target}")
        _run_pip(cache_root, target, python, plan, index_urls, logs, on_event)
    else:
        on_event("PackagesReused", f"{' '.join(plan.missing)}: installed in {target}")
        os.utime(target / "manifest.json")
    return [target] if plan.isolated else _site_directories(target)


def _run_pip(
    cache_root: Path,
    target: Path,
    python: str,
    plan: PackagePlan,
    index_urls: Sequence[str],
    logs: Sequence[Path],
    on_event: Callable[[str, str], None],
) -> None:
    make_private_dir(cache_root)
    staging = cache_root / f".{target.name}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar"]
    pip += ["off", "--no-warn-script-location", "--no-input"]
    if index_urls:
        pip += ["--index-url", index_urls[0]]
        pip += [arg for url in index_urls[1:] for arg in ("--extra-index-url", url)]
    with tempfile.TemporaryDirectory(dir=cache_root) as scratch:
        constraints = Path(scratch) / "constraints.txt"
        if plan.isolated:
            constraints.write_text("".join(f"{pin}\n" for pin in _protected_pins(plan.pins)))
            artifacts = _resolve_apart(pip, constraints, Path(scratch), plan, logs)
            command = [*pip, "--target", str(staging), "--no-deps", *artifacts]
        else:
            constraints.write_text("".join(f"{pin}\n" for pin in plan.pins))
            command = [*pip, "--prefix", str(staging), "--constraint", str(constraints)]
            command += ["--", *plan.missing]
        output = _stream(command, logs, f"[trainer-sdk] pip install {' '.join(plan.missing)}")
    if output.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise _install_error(plan, output)
    installed = [
        name
        for line in output.lines
        if line.startswith("Successfully installed ")
        for name in line.split()[2:]
    ]
    for name in installed:
        on_event("PackageInstalled", name)
    write_json(
        staging / "manifest.json",
        {"requirements": list(plan.missing), "installed": installed, "created": time.time()},
    )
    try:
        staging.rename(target)
    except OSError:  # another job installed the same set meanwhile
        shutil.rmtree(staging, ignore_errors=True)


def _install_error(plan: PackagePlan, output: _Output) -> PackageInstallError:
    errors = [line for line in output.lines if line.startswith("ERROR")] or output.lines
    return PackageInstallError(
        f"pip could not install {' '.join(plan.missing)} (exit code {output.returncode}): "
        + " ".join(errors[-_ERROR_LINES:])
    )


def _protected_pins(pins: Sequence[str]) -> list[str]:
    """The environment's own pins of ``PROTECTED`` distributions."""
    return [pin for pin in pins if canonicalize_name(pin.split("==")[0]) in PROTECTED]


def _resolve_apart(
    pip: Sequence[str], constraints: Path, scratch: Path, plan: PackagePlan, logs: Sequence[Path]
) -> list[str]:
    """What an isolated set needs, as pip resolves it against the environment with torch held at
    the environment's version: the artifacts of every distribution to install apart, never a
    protected one (those are the environment's, which the ranks keep importing)."""
    report = scratch / "report.json"
    command = [*pip, "--dry-run", "--quiet", "--report", str(report)]
    command += ["--constraint", str(constraints), "--", *plan.missing]
    output = _stream(
        command,
        logs,
        f"[trainer-sdk] pip resolves {' '.join(plan.missing)} (torch stays the environment's)",
    )
    if output.returncode != 0:
        raise _install_error(plan, output)
    return [
        str(item["download_info"]["url"])
        for item in json.loads(report.read_text()).get("install", [])
        if canonicalize_name(item["metadata"]["name"]) not in PROTECTED
    ]


@dataclass
class _Output:
    returncode: int
    lines: list[str]


def _stream(command: list[str], logs: Sequence[Path], header: str) -> _Output:
    """Run ``command``, copying each line of its output to every log as it comes."""
    streams = [open_private(log) for log in logs]
    lines: list[str] = []
    try:
        for stream in streams:
            stream.write(f"{header}\n".encode())
            stream.flush()
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        ) as process:
            assert process.stdout is not None
            for raw in process.stdout:
                lines.append(raw.decode(errors="replace").rstrip())
                for stream in streams:
                    stream.write(raw)
                    stream.flush()
            returncode = process.wait(timeout=PIP_TIMEOUT_SECONDS)
    finally:
        for stream in streams:
            stream.close()
    return _Output(returncode, lines)


def _site_directories(prefix: Path) -> list[Path]:
    """The site directories pip created under ``prefix`` (purelib and platlib, whatever the
    platform's scheme names them)."""
    return sorted(
        path
        for pattern in ("lib*/python*/site-packages", "lib*/python*/dist-packages")
        for path in prefix.glob(pattern)
        if path.is_dir()
    ) or sorted(p for p in prefix.glob("local/lib*/python*/*-packages") if p.is_dir())


@dataclass(frozen=True)
class CacheEntry:
    """One installed requirement set."""

    path: Path
    requirements: tuple[str, ...]
    size_bytes: int
    last_used: float


def cache_entries(root: Path) -> list[CacheEntry]:
    """The installed sets under the local backend's ``root``, most recently used first."""
    entries = []
    for path in sorted((root / CACHE_DIR).glob("[!.]*")):
        manifest = path / "manifest.json"
        if not manifest.is_file():
            continue
        document = json.loads(manifest.read_text())
        entries.append(
            CacheEntry(
                path=path,
                requirements=tuple(document.get("requirements") or ()),
                size_bytes=_size(path),
                last_used=manifest.stat().st_mtime,
            )
        )
    return sorted(entries, key=lambda entry: entry.last_used, reverse=True)


def prune_cache(root: Path, older_than_seconds: float = 0.0) -> list[CacheEntry]:
    """Remove the installed sets not used for ``older_than_seconds`` (all by default) and
    leftovers of interrupted installs (whose pip no longer runs); returns the sets removed.
    A running job keeps the files it already imported; a later job installs its set again."""
    now = time.time()
    removed = [
        entry for entry in cache_entries(root) if now - entry.last_used >= older_than_seconds
    ]
    for entry in removed:
        shutil.rmtree(entry.path, ignore_errors=True)
    for leftover in (root / CACHE_DIR).glob(".*.*"):
        if not _alive(leftover.suffix[1:]):
            shutil.rmtree(leftover, ignore_errors=True)
    return removed


def _alive(pid: str) -> bool:
    """Whether the install that named its staging directory after ``pid`` still runs."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _size(path: Path) -> int:
    return sum(
        item.stat().st_size for item in path.rglob("*") if item.is_file() and not item.is_symlink()
    )
