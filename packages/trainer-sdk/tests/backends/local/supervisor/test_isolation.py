"""Pods in private namespaces: detection, the job's hosts file, and mounts that leave the host
untouched."""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from trainer_sdk.backends.local.supervisor import isolation
from trainer_sdk.backends.local.volumes import Mount


@pytest.fixture
def fresh_detection() -> Iterator[None]:
    isolation.kernel_allows.cache_clear()
    yield
    isolation.kernel_allows.cache_clear()


def kernel_allows_namespaces() -> bool:
    """util-linux's own answer: a mount and UTS namespace (through a user namespace if not root)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    user = [] if Path("/proc/self").stat().st_uid == 0 else ["--user", "--map-current-user"]
    return (
        subprocess.run(["unshare", *user, "--mount", "--uts", "true"], check=False).returncode == 0
    )


def test_detection_agrees_with_unshare_and_can_be_turned_off(
    fresh_detection: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isolation.available() == kernel_allows_namespaces()
    monkeypatch.setenv(isolation.DISABLE_ENV, "0")  # read at each call: each submit decides
    assert not isolation.available()
    assert isolation.kernel_allows() == kernel_allows_namespaces()


def test_the_hosts_file_names_every_pod_in_every_cluster_form() -> None:
    text = isolation.hosts_file({"j-node-0-0": "127.0.0.1", "j-node-0-1": "127.0.0.2"}, "j", "ns")
    assert text.endswith(
        "127.0.0.2\tj-node-0-1 j-node-0-1.j j-node-0-1.j.ns.svc j-node-0-1.j.ns.svc.cluster.local\n"
    )
    assert "localhost" in text  # this machine's own entries stay


needs_namespaces = pytest.mark.skipif(
    not kernel_allows_namespaces(), reason="this kernel refuses private mount namespaces"
)


@needs_namespaces
def test_mounts_at_missing_paths_read_only_ones_and_the_host_name(tmp_path: Path) -> None:
    """A mount path under a missing top-level directory, one under an existing directory, and a
    read-only one: the command sees each volume there, the host sees none of them."""
    top = f"/trainer-sdk-test-{uuid.uuid4().hex}"
    volume, config, scratch = tmp_path / "volume", tmp_path / "config", tmp_path / "scratch"
    for directory in (volume, config, scratch):
        directory.mkdir()
    (config / "settings").write_text("from the config volume\n")
    sandbox = isolation.PodSandbox(
        mounts=(
            Mount(f"{top}/ckpt", str(volume), True),
            Mount(str(tmp_path / "absent" / "config"), str(config), True, read_only=True),
        ),
        scratch=scratch,
        cwd=tmp_path,
        hostname="job-node-0-1",
    )
    script = (
        f"echo saved > {top}/ckpt/step; cat {tmp_path}/absent/config/settings; hostname; "
        f"touch {tmp_path}/absent/config/new 2>/dev/null || echo read-only"
    )
    result = subprocess.run(
        isolation.wrap(["sh", "-c", script], sandbox), capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["from the config volume", "job-node-0-1", "read-only"]
    assert (volume / "step").read_text() == "saved\n"
    assert not Path(top).exists() and not (tmp_path / "absent").exists()


@needs_namespaces
def test_a_missing_volume_source_fails_the_pod_naming_it(tmp_path: Path) -> None:
    sandbox = isolation.PodSandbox(
        mounts=(Mount("/data", str(tmp_path / "gone"), False),), scratch=tmp_path, cwd=tmp_path
    )
    result = subprocess.run(
        isolation.wrap(["true"], sandbox), capture_output=True, text=True, check=False
    )
    assert result.returncode == 127
    assert f"volume source {tmp_path}/gone for /data" in result.stderr


def sandboxed(
    tmp_path: Path, *mounts: Mount, script: str = "true"
) -> subprocess.CompletedProcess[str]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    sandbox = isolation.PodSandbox(mounts=mounts, scratch=scratch, cwd=tmp_path)
    return subprocess.run(
        isolation.wrap(["sh", "-c", script], sandbox),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,  # a mount path whose parents never end would loop forever
    )


@needs_namespaces
@pytest.mark.parametrize(
    "mount_path",
    [
        pytest.param("data", id="relative"),
        pytest.param("{tmp}/missing/../made", id="backsteps-through-a-missing-directory"),
    ],
)
def test_a_mount_path_that_is_relative_or_climbs_is_refused(
    tmp_path: Path, mount_path: str
) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    result = sandboxed(tmp_path, Mount(mount_path.format(tmp=tmp_path), str(volume), True))
    assert result.returncode == 127
    assert "not absolute, or with '..'" in result.stderr
    assert not (tmp_path / "made").exists() and not (tmp_path / "missing").exists()


def planted_volume(tmp_path: Path) -> tuple[Path, Path]:
    """A volume holding links planted by someone else (out of it, absolute and relative; within
    it), and a host directory outside that must never be reached."""
    volume, outside = tmp_path / "volume", tmp_path / "host-secret"
    (volume / "inside" / "data").mkdir(parents=True)
    outside.mkdir()
    (outside / "key").write_text("secret\n")
    (volume / "absolute").symlink_to(outside)
    (volume / "climbs").symlink_to("../host-secret")
    (volume / "nested").symlink_to("inside/../../host-secret")
    (volume / "within").symlink_to("inside/data")
    return volume, outside


@needs_namespaces
@pytest.mark.parametrize("sub_path", ["absolute", "climbs", "nested", "absolute/key"])
def test_a_sub_path_link_out_of_the_volume_is_not_followed(tmp_path: Path, sub_path: str) -> None:
    volume, outside = planted_volume(tmp_path)
    mount = Mount("/data", str(volume), True, sub_path=sub_path)
    result = sandboxed(tmp_path, mount, script="cat /data/key; touch /data/planted")
    assert result.returncode == 127, result.stdout
    assert "outside the volume" in result.stderr
    assert "secret" not in result.stdout
    assert sorted(p.name for p in outside.iterdir()) == ["key"]


@needs_namespaces
def test_a_sub_path_link_within_the_volume_is_followed(tmp_path: Path) -> None:
    volume, _ = planted_volume(tmp_path)
    mount = Mount("/data", str(volume), True, sub_path="within")
    result = sandboxed(tmp_path, mount, script="echo hello > /data/greeting")
    assert result.returncode == 0, result.stderr
    assert (volume / "inside" / "data" / "greeting").read_text() == "hello\n"
