"""The Flux scripts run with bash, their paths moved under tmp_path and a stand-in ``flux``.

Flux itself cannot be installed here, so a shell script named ``flux`` in the copied view
records each call. That checks what the scripts do around Flux: the installer copies the view
and writes the broker configuration, and the entrypoint prepares the certificate, resources and
env, then runs the right broker command on the lead and follower nodes (arguments intact).
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from runtime_cases import FIXED_SETTINGS, by_kind, make_job, make_runtime, render_of, replicated_job

FAKE_FLUX = """#!/bin/sh
printf '%s\\037' "$@" >> "$FLUX_CALLS"
printf '\\n' >> "$FLUX_CALLS"
if [ "$1" = R ]; then echo '{"version": 1}'; exit 0; fi
exit "${FLUX_STATUS:-0}"
"""
TIMEOUT_SECONDS = 30


def _scripts(**trainer: Any) -> dict[str, str]:
    runtime = make_runtime({"flux": {}}, [replicated_job("node", "trainer")])
    objects = render_of(make_job(runtime="custom", **trainer), runtime, None, FIXED_SETTINGS)
    data: dict[str, str] = by_kind(objects, "ConfigMap")[-1]["data"]
    return data


def _localized(script: str, root: Path, software: str) -> Path:
    """``script`` with the pod paths moved under ``root``, written there."""
    for old, new in (
        ("/opt/views/._view", f"{root}/views"),
        ("/mnt/flux", f"{root}/install"),
        ("/opt/software", f"{root}/{software}"),
        ("cp /curve/", f"cp {root}/curve/"),
    ):
        script = script.replace(old, new)
    path = root / f"{software}.sh"
    path.write_text(script)
    return path


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script), *args],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


@pytest.fixture
def pod(tmp_path: Path) -> Path:
    """A pod after its installer ran: the view image's files copied into the shared volume."""
    bin_dir = tmp_path / "views" / "abc123" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "flux").write_text(FAKE_FLUX)
    (bin_dir / "flux").chmod(0o755)
    (tmp_path / "views" / "abc123" / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (tmp_path / "image-software" / "flux-core").mkdir(parents=True)
    (tmp_path / "image-software" / "flux-core" / "marker").write_text("spack tree")
    (tmp_path / "trainer-software").mkdir()
    (tmp_path / "curve").mkdir()
    (tmp_path / "curve" / "curve.cert").write_text("certificate")
    init = _localized(_scripts(numNodes=2)["init.sh"], tmp_path, "image-software")
    result = _run(init)
    assert result.returncode == 0, result.stderr
    return tmp_path


def _calls(root: Path) -> list[list[str]]:
    text = (root / "calls").read_text()
    return [line.split("\x1f")[:-1] for line in text.splitlines()]


def test_installer_copies_the_view_and_writes_the_broker_config(pod: Path) -> None:
    install = pod / "install"
    assert (install / "view" / "bin" / "flux").read_text() == FAKE_FLUX
    assert (install / "software" / "flux-core" / "marker").read_text() == "spack tree"
    toml = (install / "config" / "etc" / "flux" / "config" / "broker.toml").read_text()
    assert 'hosts = [{ host = "alpha-node-0-[0-1]" }]' in toml
    for directory in ("etc/flux/system/cron.d", "etc/curve", "run/flux", "var/lib/flux"):
        assert (install / "config" / directory).is_dir()


def test_installer_fails_clearly_without_a_view(tmp_path: Path) -> None:
    (tmp_path / "views").mkdir()
    (tmp_path / "image-software").mkdir()
    result = _run(_localized(_scripts()["init.sh"], tmp_path, "image-software"))
    assert result.returncode == 1
    assert "FLUX_VIEW_IMAGE must name a flux-view image" in result.stderr


@pytest.mark.parametrize(
    ("hostname", "args", "broker_tail"),
    [
        pytest.param(
            "alpha-node-0-0",
            ["python3", "-c", "print('a b')"],
            ["flux", "run", "-N", "2", "-n", "2", "python3", "-c", "print('a b')"],
            id="lead-runs-the-command",
        ),
        pytest.param("alpha-node-0-0", [], ["-Sbroker.rc2_none"], id="lead-interactive"),
        pytest.param(
            "alpha-node-0-1", ["python3", "train.py"], ["-Slog-stderr-mode=local"], id="follower"
        ),
    ],
)
def test_entrypoint_starts_the_right_broker(
    pod: Path, hostname: str, args: list[str], broker_tail: list[str]
) -> None:
    entrypoint = _localized(_scripts(numNodes=2)["entrypoint.sh"], pod, "trainer-software")
    result = _run(entrypoint, *args, HOSTNAME=hostname, FLUX_CALLS=str(pod / "calls"))
    assert result.returncode == 0, result.stderr
    config = pod / "install" / "config"
    encode, broker = _calls(pod)
    assert encode == ["R", "encode", "--hosts=alpha-node-0-[0-1]", "--cores=0"]
    assert broker[:2] == ["broker", f"--config-path={config}/etc/flux/config"]
    assert broker[-len(broker_tail) :] == broker_tail
    assert f"-Slocal-uri=local://{config}/run/flux/local" in broker
    assert (config / "etc" / "flux" / "system" / "R").read_text() == '{"version": 1}\n'
    cert = config / "etc" / "curve" / "curve.cert"
    assert cert.read_text() == "certificate"
    assert stat.S_IMODE(cert.stat().st_mode) == 0o400
    assert (pod / "trainer-software" / "flux-core" / "marker").exists()
    view_env = (pod / "install" / "flux-view.sh").read_text()
    assert f'export fluxsocket="local://{config}/run/flux/local"' in view_env
    assert f"{pod}/install/view/lib/python3.11/site-packages" in view_env


def test_lead_exits_with_the_status_of_its_broker(pod: Path) -> None:
    entrypoint = _localized(_scripts(numNodes=2)["entrypoint.sh"], pod, "trainer-software")
    result = _run(
        entrypoint,
        "false",
        HOSTNAME="alpha-node-0-0",
        FLUX_CALLS=str(pod / "calls"),
        FLUX_STATUS="3",
    )
    assert result.returncode == 3
