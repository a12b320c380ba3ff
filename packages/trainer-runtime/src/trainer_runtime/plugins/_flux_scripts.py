"""The files of a Flux TrainJob's ConfigMap: broker configuration, installer and entrypoint.

Layout inside the pods (the same in the installer init container and the trainer container):

- ``/mnt/flux`` (emptyDir ``flux-install``): ``view/`` is the Flux install copied from the
  flux-view image, ``software/`` the spack tree it links into, ``config/`` the broker's
  configuration, state and run directories, ``flux-view.sh`` the env for a shell in the pod;
- ``/opt/software`` (emptyDir ``spack-install``): where the spack tree must sit in the trainer
  container for the view's links to resolve;
- ``/etc/flux-config`` (the ConfigMap): ``init.sh`` and ``entrypoint.sh``;
- ``/curve`` (the Secret): ``curve.cert``, copied to where the brokers read it.

Every value put into a script is shell-quoted or validated by the plugin first.
"""

from __future__ import annotations

import json
import shlex
from typing import Final

__all__ = [
    "CONFIG_MOUNT",
    "CURVE_FILE",
    "CURVE_MOUNT",
    "ENTRYPOINT",
    "INIT",
    "INSTALL_MOUNT",
    "SOFTWARE_MOUNT",
    "broker_config",
    "entrypoint_script",
    "index_range",
    "init_script",
]

INSTALL_MOUNT: Final = "/mnt/flux"
SOFTWARE_MOUNT: Final = "/opt/software"
CONFIG_MOUNT: Final = "/etc/flux-config"
CURVE_MOUNT: Final = "/curve"
CURVE_FILE: Final = "curve.cert"
INIT: Final = "init.sh"
ENTRYPOINT: Final = "entrypoint.sh"
BROKER_PORT: Final = 8050
_CONFIG_DIR: Final = f"{INSTALL_MOUNT}/config"


def index_range(count: int) -> str:
    """``0`` for one item, else ``0-<count-1>`` (Flux's idset and hostlist range syntax)."""
    return "0" if count == 1 else f"0-{count - 1}"


def broker_config(hostlist: str, subdomain: str, network_device: str, queue_policy: str) -> str:
    """``broker.toml``: bootstrap from the host list over TCP with the shared CURVE certificate.

    Brokers bind on ``network_device`` and reach each other as ``<pod>.<subdomain>`` (the
    JobSet's headless service, resolved through the pod's DNS search path).
    """

    def toml(value: str) -> str:
        return json.dumps(value)  # a TOML basic string for these ASCII values

    return "\n".join(
        [
            "[access]",
            "allow-guest-user = true",
            "allow-root-owner = true",
            "",
            "[resource]",
            f"path = {toml(f'{_CONFIG_DIR}/etc/flux/system/R')}",
            "",
            "[bootstrap]",
            f"curve_cert = {toml(f'{_CONFIG_DIR}/etc/curve/{CURVE_FILE}')}",
            f"default_port = {BROKER_PORT}",
            f"default_bind = {toml(f'tcp://{network_device}:%p')}",
            f"default_connect = {toml(f'tcp://%h.{subdomain}:%p')}",
            f"hosts = [{{ host = {toml(hostlist)} }}]",
            "",
            "[sched-fluxion-qmanager]",
            f"queue-policy = {toml(queue_policy)}",
            "",
        ]
    )


def init_script(broker_toml: str) -> str:
    """``init.sh``, run by the installer init container from the flux-view image."""
    return f"""#!/bin/bash
# Flux installer of a TrainJob (written by trainer-controller): copies this flux-view image's
# Flux install into the shared volume and writes the broker configuration.
set -eu
install={INSTALL_MOUNT}
config="${{install}}/config"
mkdir -p "${{config}}/etc/flux/config" "${{config}}/etc/flux/system/cron.d" \\
  "${{config}}/etc/curve" "${{config}}/run/flux" "${{config}}/var/lib/flux" \\
  "${{install}}/view" "${{install}}/software"
cat > "${{config}}/etc/flux/config/broker.toml" <<'BROKER_TOML'
{broker_toml}BROKER_TOML

# /opt/view links to spack's view in /opt/views/._view/<hash>, whose files link into
# /opt/software: copy both, keeping the links.
views=(/opt/views/._view/*)
if [ ! -d "${{views[0]}}" ]; then
  echo "no spack view in /opt/views/._view: FLUX_VIEW_IMAGE must name a flux-view image" >&2
  exit 1
fi
cp -R "${{views[0]}}/." "${{install}}/view/"
cp -R {SOFTWARE_MOUNT}/. "${{install}}/software/"
echo "Flux installed in ${{install}} for $(cat /proc/sys/kernel/hostname)"
"""


def entrypoint_script(
    lead_host: str, hostlist: str, resources: list[str], run_flags: list[str]
) -> str:
    """``entrypoint.sh``, which wraps the trainer's command (its arguments, ``"$@"``).

    Every pod starts a Flux broker. The broker of ``lead_host`` runs ``flux run RUN_FLAGS
    "$@"`` over all nodes and exits with its status (the others then leave cleanly); without a
    command it runs no initial program and stays up for interactive use. ``resources`` are the
    ``flux R encode`` options describing one node.
    """
    encode = shlex.join(["flux", "R", "encode", f"--hosts={hostlist}", *resources])
    run = shlex.join(["flux", "run", *run_flags])
    return f"""#!/bin/bash
# Flux entrypoint of a TrainJob's trainer container (written by trainer-controller).
set -u
install={INSTALL_MOUNT}
config="${{install}}/config"
view="${{install}}/view"

# The view's links point into spack's tree, which must sit where it was built.
cp -R "${{install}}/software/." {SOFTWARE_MOUNT}/

# Flux after the image's own tools, so that the image's python and MPI come first.
export PATH="${{PATH}}:${{view}}/bin"
python_libs=("${{view}}"/lib/python3*)
export PYTHONPATH="${{PYTHONPATH:+${{PYTHONPATH}}:}}${{python_libs[0]}}/site-packages"
export FLUX_RC_EXTRA="${{view}}/etc/flux/rc1.d"
socket="local://${{config}}/run/flux/local"

# For a shell in the pod: . {INSTALL_MOUNT}/flux-view.sh && flux proxy "$fluxsocket"
cat > "${{install}}/flux-view.sh" <<FLUX_VIEW
export PATH="${{PATH}}"
export PYTHONPATH="${{PYTHONPATH}}"
export LD_LIBRARY_PATH="${{LD_LIBRARY_PATH:-}}:${{view}}/lib"
export fluxsocket="${{socket}}"
FLUX_VIEW

# The brokers refuse a certificate that others may read.
cert="${{config}}/etc/curve/{CURVE_FILE}"
rm -f "${{cert}}"
cp {CURVE_MOUNT}/{CURVE_FILE} "${{cert}}"
chmod 0400 "${{cert}}"

# What every node offers the scheduler.
{encode} > "${{config}}/etc/flux/system/R"

broker=(flux broker "--config-path=${{config}}/etc/flux/config"
  "-Scron.directory=${{config}}/etc/flux/system/cron.d" -Stbon.fanout=256
  "-Srundir=${{config}}/run/flux" "-Sstatedir=${{config}}/var/lib/flux"
  "-Slocal-uri=${{socket}}" -Slog-stderr-level=0 -Slog-stderr-mode=local)

if [ "${{HOSTNAME}}" != {shlex.quote(lead_host)} ]; then
  # A follower joins the lead broker; it retries until the instance lets it go cleanly.
  until "${{broker[@]}}"; do
    echo "flux broker on ${{HOSTNAME}} exited with status $?; retrying in 15s" >&2
    sleep 15
  done
elif [ "$#" -eq 0 ]; then
  echo "No command: the Flux instance stays up until 'flux shutdown'."
  exec "${{broker[@]}}" -Sbroker.rc2_none
else
  exec "${{broker[@]}}" {run} "$@"
fi
"""
