"""Start one pod's command in a private mount (and UTS) namespace where its volumes are at their
mount paths (Linux; run as a script: ``python -I -S mountns.py SPEC -- COMMAND...``).

The standard library only, so that it starts fast and with any interpreter flags. ``SPEC`` is the
JSON that ``isolation.PodSandbox.to_json`` writes. Without root the namespaces come from a user
namespace that maps this user to itself (the command runs as the same user, with no capability
once it executes).

A mount path that does not exist here gets its mount point without touching the host: its deepest
existing ancestor is replaced, in this namespace only, by a tmpfs holding bind mounts of that
ancestor's entries (for ``/``, a new root the process changes into), and the missing directories
are made in that tmpfs. Nothing is created outside the pod's scratch directory and its volumes.
Mount paths are absolute without ``..`` (checked at submit, and again here).

A volume mounted with a ``subPath`` is opened inside the volume one component at a time
(``open_beneath``): a symbolic link is followed only when it is relative and stays in the volume,
so a link planted in a shared volume cannot bind a host directory into the pod; the bind is made
from that open descriptor, so the path cannot be swapped in between.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import stat
import sys
from collections.abc import Sequence

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWUSER = 0x10000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_UNBINDABLE = 1 << 17
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
FAILED_EXIT_CODE = 127
_MAX_LINKS = 40  # as the kernel's path walk

_libc = ctypes.CDLL(None, use_errno=True)


class SandboxError(OSError):
    """A namespace or mount the kernel refused; the message names the path."""


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise SandboxError(error, f"{what}: {os.strerror(error)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            None,
        ),
        f"mount {source or fstype} on {target}",
    )


def _enter_namespaces() -> None:
    """A private mount and UTS namespace; through a user namespace when not root."""
    flags = CLONE_NEWNS | CLONE_NEWUTS
    if os.geteuid() == 0 and _libc.unshare(flags) == 0:
        return
    uid, gid = os.geteuid(), os.getegid()
    _check(_libc.unshare(flags | CLONE_NEWUSER), "unshare a user, mount and UTS namespace")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as file:
            file.write(text)


def open_beneath(root: str, relative: str, create: bool = False) -> int:
    """An ``O_PATH`` descriptor of ``root/relative``, resolved without leaving ``root``: each
    component opened without following links, a relative link's target walked the same way (an
    absolute one, or one climbing out, is refused); missing directories made when ``create``.
    SandboxError naming the path otherwise."""
    flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
    where = f"subPath {relative!r} of {root}"
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    levels = [os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)]
    links = 0
    try:
        while parts:
            name = parts.pop(0)
            if name == "..":
                if len(levels) == 1:
                    raise SandboxError(1, f"{where}: climbs outside the volume")
                os.close(levels.pop())
                continue
            try:
                descriptor = os.open(name, flags, dir_fd=levels[-1])
            except FileNotFoundError:
                if not create:
                    raise SandboxError(2, f"{where}: no such file or directory") from None
                os.mkdir(name, 0o777, dir_fd=levels[-1])  # not through a link: O_NOFOLLOW above
                descriptor = os.open(name, flags, dir_fd=levels[-1])
            if not stat.S_ISLNK(os.fstat(descriptor).st_mode):
                levels.append(descriptor)
                continue
            os.close(descriptor)
            target = os.readlink(name, dir_fd=levels[-1])
            links += 1
            if target.startswith("/") or links > _MAX_LINKS:
                raise SandboxError(
                    1, f"{where}: {name} is a symbolic link to {target!r}, outside the volume"
                )
            parts[:0] = [part for part in target.split("/") if part not in ("", ".")]
        return levels.pop()
    finally:
        for descriptor in levels:
            os.close(descriptor)


def _replicate(source: str, target: str) -> None:
    """Give ``target`` (an empty tmpfs) an entry for each entry of ``source``, bound to it."""
    for entry in os.scandir(source):
        if entry.path == target:
            continue
        place = os.path.join(target, entry.name)
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), place)
            continue
        if entry.is_dir():
            os.mkdir(place)
        else:
            open(place, "wb").close()
        _mount(entry.path, place, None, MS_BIND | MS_REC)


class _Tree:
    """The namespace's file system as the pod will see it, changed mount by mount."""

    def __init__(self, scratch: str) -> None:
        self.scratch = scratch
        # Where a new entry stays in this namespace: tmpfs copies and the directories made in
        # them (not below: their entries are the host's), and volumes (all of them).
        self.private: set[str] = set()
        self.volumes: list[str] = []
        self.copies = 0

    def _owned(self, path: str) -> bool:
        return path in self.private or any(
            path == top or path.startswith(top.rstrip("/") + "/") for top in self.volumes
        )

    def _copy_of(self, directory: str) -> None:
        """Replace ``directory`` in this namespace by a tmpfs binding each of its entries."""
        self.copies += 1
        staging = os.path.join(self.scratch, f"copy-{self.copies}")
        os.makedirs(staging, exist_ok=True)
        _mount("tmpfs", staging, "tmpfs", 0)
        _mount(None, staging, None, MS_UNBINDABLE)  # left out of the recursive binds below
        os.chmod(staging, os.stat(directory).st_mode & 0o7777)
        _replicate(directory, staging)
        _mount(None, staging, None, MS_PRIVATE)  # bindable again: volumes may lie inside
        if directory == "/":
            os.chdir(staging)
            os.chroot(".")
        else:
            _mount(staging, directory, None, MS_MOVE)
        self.private.add(directory)

    def _mount_point(self, path: str, is_dir: bool) -> None:
        """Make ``path`` exist, in tmpfs copies or volumes only."""
        if not path.startswith("/") or ".." in path.split("/"):
            raise SandboxError(22, f"mount path {path!r}: not absolute, or with '..'")
        ancestor = os.path.dirname(path)
        while not os.path.exists(ancestor):
            ancestor = os.path.dirname(ancestor)
        if not self._owned(ancestor):
            self._copy_of(ancestor)
        directory = path if is_dir else os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        while directory != ancestor:
            self.private.add(directory)
            directory = os.path.dirname(directory)
        if not is_dir:
            open(path, "wb").close()

    def bind(self, source: str, path: str, read_only: bool) -> None:
        """``source`` (a directory or file of the host) at ``path``."""
        if not os.path.exists(source):
            raise SandboxError(2, f"volume source {source} for {path}: no such file or directory")
        if not os.path.exists(path):
            self._mount_point(path, os.path.isdir(source))
        _mount(source, path, None, MS_BIND | MS_REC)
        if read_only:
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
        self.volumes.append(path)


def _sources(mounts: list[list[object]]) -> list[tuple[str, str, bool]]:
    """(mount path, source, read-only) of each mount, shallowest first; a ``subPath`` mount's
    source is a descriptor opened inside its volume (``/proc/self/fd/N``), before any mount."""
    sources = []
    for path, volume, sub_path, read_only in mounts:
        source = str(volume)
        if sub_path:
            source = f"/proc/self/fd/{open_beneath(source, str(sub_path))}"
        sources.append((str(path), source, bool(read_only)))
    return sorted(sources, key=lambda mount: mount[0].count("/"))


def enter(spec: dict[str, object]) -> None:
    """Enter the pod's namespaces with its mounts (``spec``: see ``isolation.PodSandbox``)."""
    _enter_namespaces()
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    tree = _Tree(str(spec["scratch"]))
    mounts = spec.get("mounts") or []
    assert isinstance(mounts, list)
    for path, source, read_only in _sources(mounts):
        tree.bind(source, path, read_only)
    if hostname := spec.get("hostname"):
        socket.sethostname(str(hostname))
    working_dir = spec.get("workingDir")
    if working_dir and os.path.isdir(str(working_dir)):
        os.chdir(str(working_dir))
    elif spec.get("cwd"):
        os.chdir(str(spec["cwd"]))  # the pod's directory, also after a new root


def main(argv: Sequence[str]) -> int:
    """``SPEC -- COMMAND...``: enter, then execute the command (returns only on failure)."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: mountns.py SPEC -- COMMAND...", file=sys.stderr)
        return 2
    try:
        enter(json.loads(argv[0]))
    except OSError as error:
        print(
            f"[trainer-sdk] the pod's mount namespace could not be set up: {error}", file=sys.stderr
        )
        return FAILED_EXIT_CODE
    try:
        os.execvp(argv[2], list(argv[2:]))
    except OSError as error:
        print(f"[trainer-sdk] {argv[2]}: {error}", file=sys.stderr)
    return FAILED_EXIT_CODE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
