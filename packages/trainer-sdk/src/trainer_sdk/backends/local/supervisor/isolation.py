"""Whether pods run in private namespaces here, and how a pod's command is put into them.

On Linux each pod's processes run in a private mount and UTS namespace (``mountns.py``): every
volume is bind-mounted at its real mount path, ``/etc/hosts`` is the job's own file naming every
pod host name, and the host name is the pod's. So commands, ``func_args``, code and config files
see the cluster's paths and names unchanged. The network stays the host's (see the README: the
pods reach the host's progress endpoint, data cache and package index on loopback).

Where the kernel refuses (macOS, a container without ``unshare``), ``available()`` says so and the
pod plan falls back to rewriting mount paths and pod host names in commands and env. The backend
asks at submit and the job's plan keeps the answer: its supervisor probes nothing.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trainer_sdk.backends.local.volumes import Mount

__all__ = ["DISABLE_ENV", "PodSandbox", "available", "hosts_file", "kernel_allows", "wrap"]

DISABLE_ENV = "TRAINER_SDK_LOCAL_NAMESPACES"
"""Set to ``0`` to run pods without namespaces (the rewriting fallback), as on macOS."""
_SCRIPT = Path(__file__).parents[1] / "pod" / "mountns.py"
_PROBE_TIMEOUT_SECONDS = 30.0
_HOSTS = Path("/etc/hosts")


@dataclass(frozen=True)
class PodSandbox:
    """What ``mountns.py`` sets up for one pod before executing its command."""

    mounts: tuple[Mount, ...]
    scratch: Path  # the pod's, for tmpfs copies of missing mount points' parents
    cwd: Path  # the pod's directory: where relative paths resolve without a workingDir
    hostname: str = ""
    hosts: Path | None = None  # the job's hosts file, bound on /etc/hosts
    working_dir: str | None = None

    def to_json(self) -> str:
        """The spec ``mountns.py`` reads."""
        mounts = [[m.path, m.local, m.sub_path, m.read_only] for m in self.mounts]
        if self.hosts is not None and _HOSTS.exists():
            mounts.append([str(_HOSTS), str(self.hosts), "", True])
        return json.dumps(
            {
                "mounts": mounts,
                "scratch": str(self.scratch),
                "cwd": str(self.cwd),
                "hostname": self.hostname,
                "workingDir": self.working_dir,
            }
        )


def wrap(command: Sequence[str], sandbox: PodSandbox) -> list[str]:
    """``command`` started inside ``sandbox``."""
    return [sys.executable, "-I", "-S", str(_SCRIPT), sandbox.to_json(), "--", *command]


def hosts_file(addresses: Mapping[str, str], subdomain: str, namespace: str) -> str:
    """This machine's ``/etc/hosts`` and a line per pod: its name, ``<name>.<subdomain>`` and the
    cluster's longer forms, at its loopback address."""
    try:
        text = _HOSTS.read_text()
    except OSError:
        text = ""
    lines = [text.rstrip("\n"), "# the job's pods (trainer-sdk local backend)"]
    for name, address in addresses.items():
        fqdn = f"{name}.{subdomain}.{namespace}.svc"
        lines.append(f"{address}\t{name} {name}.{subdomain} {fqdn} {fqdn}.cluster.local")
    return "\n".join(lines).lstrip("\n") + "\n"


def available() -> bool:
    """Whether pods can run in private namespaces here: not turned off by
    ``TRAINER_SDK_LOCAL_NAMESPACES=0`` (read at each call: the backend decides at each submit)
    and allowed by the kernel (``kernel_allows``)."""
    return os.environ.get(DISABLE_ENV) != "0" and kernel_allows()


@functools.cache
def kernel_allows() -> bool:
    """Whether this kernel gives a process private namespaces (probed once per process: a
    namespace with a tmpfs mount, as each pod needs; two interpreter starts)."""
    if not sys.platform.startswith("linux"):
        return False
    with tempfile.TemporaryDirectory(prefix="trainer-sdk-probe-") as scratch:
        # A mount point under a missing directory: a tmpfs copy of its parent, then a bind.
        volume, parent, pod = (Path(scratch, name) for name in ("volume", "parent", "pod"))
        for directory in (volume, parent, pod):
            directory.mkdir()
        probe = Mount(str(parent / "missing" / "mount-point"), str(volume), False)
        sandbox = PodSandbox(mounts=(probe,), scratch=pod, cwd=pod)
        try:
            result = subprocess.run(
                wrap([sys.executable, "-I", "-S", "-c", ""], sandbox),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return result.returncode == 0
