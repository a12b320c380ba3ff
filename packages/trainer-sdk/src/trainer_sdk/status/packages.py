"""Where a job's ``packages_to_install`` stand, read from its events and its step log (issue 30):
the local backend records ``PackageFromEnvironment``, ``InstallingPackages``, ``PackagesReused``
and ``PackageInstalled`` events and streams pip's output (one ``Collecting NAME`` line per
package) into every step's log while the install runs.

``trainer list`` shows ``Installing packages (2/5)`` in place of Created while pip runs, and
``trainer get NAME`` an ``install-packages`` step with the install's state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trainer_sdk import types

__all__ = ["INSTALLING", "INSTALL_STEP", "PackageStatus", "package_status"]

INSTALL_STEP = "install-packages"
INSTALLING = "Installing"
# The requirements pip is asked for, as the InstallingPackages and PackagesReused events name them
_REQUESTED = re.compile(r"^(?:installing (?P<new>.+) into|(?P<cached>.+): installed in) \S+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
_STATES = {  # an event's reason -> the state it leaves the install in
    "PackageFromEnvironment": "FromEnvironment",
    "InstallingPackages": INSTALLING,
    "PackagesReused": "Reused",
    "PackageInstalled": "Installed",
}


def _canonical(requirement: str) -> str:
    """PEP 503's normalised project name of a requirement (``Tiny_Pkg>=1`` -> ``tiny-pkg``)."""
    found = _NAME.match(requirement.strip())
    return re.sub(r"[-_.]+", "-", found.group(0)).lower() if found else requirement


@dataclass(frozen=True)
class PackageStatus:
    """``state``: FromEnvironment (nothing to install), Installing, Reused, Installed or
    Failed; ``requested``: what pip was asked for; ``collected``: how many of those pip's log
    shows it has collected so far."""

    state: str
    requested: tuple[str, ...] = ()
    collected: int = 0

    def __str__(self) -> str:
        if self.state == INSTALLING:
            return f"Installing packages ({self.collected}/{len(self.requested)})"
        return self.state


def package_status(
    events: Sequence[types.Event], log: Iterable[str] = (), failed: bool = False
) -> PackageStatus | None:
    """The install's state after ``events`` (None: the job installs nothing); while it is
    Installing, ``log`` (the step's lines) counts what pip has collected. ``failed``: the job
    failed with PackageInstallFailed."""
    state: str | None = None
    requested: tuple[str, ...] = ()
    for event in sorted(events, key=lambda event: event.event_time):
        if event.reason not in _STATES:
            continue
        state = _STATES[event.reason]
        if match := _REQUESTED.match(event.message):
            requested = tuple((match["new"] or match["cached"]).split())
    if state is None:
        return None
    if failed and state == INSTALLING:
        return PackageStatus("Failed", requested)
    if state != INSTALLING:
        return PackageStatus(state, requested, len(requested))
    wanted = {_canonical(requirement) for requirement in requested}
    collected = {
        _canonical(line.split()[1])
        for line in log
        if line.startswith("Collecting ") and len(line.split()) > 1
    }
    return PackageStatus(state, requested, len(wanted & collected))
