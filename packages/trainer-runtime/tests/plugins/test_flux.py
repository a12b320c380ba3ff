"""Flux plugin: node layout, wrapped command, installer and volumes, settings, objects, errors."""

from __future__ import annotations

import shlex
import tomllib
from typing import Any

import pytest
from runtime_cases import (
    FIXED_CURVE_KEYPAIR,
    FIXED_KEYPAIR,
    FIXED_SETTINGS,
    by_kind,
    field_errors,
    make_job,
    make_runtime,
    render_of,
    replicated_job,
)
from trainer_runtime import Observed, Settings

ENTRYPOINT = ["/bin/bash", "/etc/flux-config/entrypoint.sh"]


def _runtime(policy: dict[str, Any] | None = None, **node: Any) -> dict[str, Any]:
    """A Flux runtime whose trainer ``node`` container gets ``node`` fields."""
    job = replicated_job("node", "trainer")
    job["template"]["spec"]["template"]["spec"]["containers"][0].update(node)
    return make_runtime({"numNodes": 1, "flux": policy or {}}, [job])


def _objects(
    job: dict[str, Any], runtime: dict[str, Any], observed: Observed | None = None
) -> list[dict[str, Any]]:
    return render_of(job, runtime, observed, FIXED_SETTINGS)


def _scripts(objects: list[dict[str, Any]]) -> dict[str, str]:
    (config_map,) = [
        o
        for o in by_kind(objects, "ConfigMap")
        if o["metadata"]["name"].endswith("-flux-entrypoint")
    ]
    data: dict[str, str] = config_map["data"]
    return data


def _line_after(script: str, marker: str) -> list[str]:
    """The words of the script line that contains ``marker``, from ``marker`` on."""
    (line,) = [line for line in script.splitlines() if marker in line]
    return shlex.split(line[line.index(marker) :])


def _broker_toml(objects: list[dict[str, Any]]) -> dict[str, Any]:
    init = _scripts(objects)["init.sh"]
    body = init.split("<<'BROKER_TOML'\n", 1)[1].split("BROKER_TOML\n", 1)[0]
    return tomllib.loads(body)


def _pod_spec(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (jobset,) = by_kind(objects, "JobSet")
    pod: dict[str, Any] = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"][
        "spec"
    ]
    return pod


@pytest.mark.parametrize(
    ("policy", "trainer", "run", "resources"),
    [
        pytest.param(
            {},
            {"numNodes": 2},
            ["-N", "2", "-n", "2"],
            ["--cores=0"],
            id="one-proc-per-node-by-default",
        ),
        pytest.param(
            {"numProcPerNode": 2},
            {"numNodes": 2, "numProcPerNode": 4},
            ["-N", "2", "-n", "8"],
            ["--cores=0-3"],
            id="trainjob-procs-override-policy",
        ),
        pytest.param(
            {"numProcPerNode": 3},
            {},
            ["-N", "1", "-n", "3"],
            ["--cores=0-2"],
            id="policy-procs-and-runtime-node-count",
        ),
        pytest.param(
            {},
            {
                "numNodes": 3,
                "numProcPerNode": 2,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": "4"}},
            },
            ["-N", "3", "-n", "6", "-g", "2"],
            ["--cores=0-1", "--gpu=0-3"],
            id="node-gpus-split-between-its-tasks",
        ),
        pytest.param(
            {},
            {
                "numNodes": 2,
                "numProcPerNode": 4,
                "resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}},
            },
            ["-N", "2", "-n", "8"],
            ["--cores=0-3", "--gpu=0"],
            id="fewer-gpus-than-tasks-are-shared",
        ),
    ],
)
def test_nodes_tasks_and_resources(
    policy: dict[str, Any], trainer: dict[str, Any], run: list[str], resources: list[str]
) -> None:
    objects = _objects(make_job(runtime="custom", command=["lmp"], **trainer), _runtime(policy))
    entrypoint = _scripts(objects)["entrypoint.sh"]
    assert _line_after(entrypoint, "flux run") == ["flux", "run", *run, "$@"]
    nodes = int(run[1])
    hosts = f"alpha-node-0-[{'0' if nodes == 1 else f'0-{nodes - 1}'}]"
    assert _line_after(entrypoint, "flux R encode")[:-2] == [
        "flux",
        "R",
        "encode",
        f"--hosts={hosts}",
        *resources,
    ]
    assert _broker_toml(objects)["bootstrap"]["hosts"] == [{"host": hosts}]
    assert _pod_spec(objects)["containers"][0]["image"] == "busybox"
    (jobset,) = by_kind(objects, "JobSet")
    assert jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] == nodes


@pytest.mark.parametrize(
    ("node", "trainer", "command"),
    [
        pytest.param(
            {"command": ["python3", "train.py"]},
            {"args": ["--lr", "0.1 0.2"]},
            ["python3", "train.py", "--lr", "0.1 0.2"],
            id="runtime-command-and-job-args-kept-apart",
        ),
        pytest.param(
            {"command": ["python3", "train.py"], "args": ["--old"]},
            {"command": ["lmp", "-in", "in.reaxc.hns"]},
            ["lmp", "-in", "in.reaxc.hns", "--old"],
            id="job-command-with-runtime-args",
        ),
        pytest.param({}, {}, [], id="no-command-is-interactive"),
    ],
)
def test_command_and_args_become_the_entrypoints_arguments(
    node: dict[str, Any], trainer: dict[str, Any], command: list[str]
) -> None:
    objects = _objects(make_job(runtime="custom", **trainer), _runtime(**node))
    container = _pod_spec(objects)["containers"][0]
    assert container["command"] == [*ENTRYPOINT, *command]
    assert "args" not in container


def test_installer_volumes_and_mounts() -> None:
    pod = _pod_spec(_objects(make_job(runtime="custom", numNodes=2), _runtime()))
    assert pod["initContainers"] == [
        {
            "name": "flux-installer",
            "image": "ghcr.io/converged-computing/flux-view-ubuntu:tag-jammy",
            "command": ["/bin/bash", "/etc/flux-config/init.sh"],
            "volumeMounts": [
                {"name": "flux-install", "mountPath": "/mnt/flux"},
                {"name": "flux-config", "mountPath": "/etc/flux-config", "readOnly": True},
            ],
        }
    ]
    assert pod["volumes"] == [
        {"name": "spack-install", "emptyDir": {}},
        {"name": "flux-install", "emptyDir": {}},
        {
            "name": "flux-config",
            "configMap": {"name": "alpha-flux-entrypoint", "defaultMode": 0o755},
        },
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "flux-curve", "secret": {"secretName": "alpha-flux-curve", "defaultMode": 0o400}},
    ]
    assert pod["containers"][0]["volumeMounts"] == [
        {"name": "flux-install", "mountPath": "/mnt/flux"},
        {"name": "spack-install", "mountPath": "/opt/software"},
        {"name": "flux-config", "mountPath": "/etc/flux-config", "readOnly": True},
        {"name": "flux-curve", "mountPath": "/curve", "readOnly": True},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]


def test_settings_come_from_runtime_env_then_trainjob_env() -> None:
    runtime = _runtime(
        env=[
            {"name": "FLUX_VIEW_IMAGE", "value": "example.com/flux-view-rocky:tag-9"},
            {"name": "FLUX_NETWORK_DEVICE", "value": "net1"},
        ]
    )
    runtime["spec"]["template"]["spec"]["network"] = {"subdomain": "hpc"}
    job = make_job(
        runtime="custom",
        env=[
            {"name": "FLUX_VIEW_IMAGE", "value": "example.com/flux-view-ubuntu:tag-noble"},
            {"name": "FLUX_QUEUE_POLICY", "value": "easy"},
        ],
    )
    objects = _objects(job, runtime)
    assert _pod_spec(objects)["initContainers"][0]["image"] == (
        "example.com/flux-view-ubuntu:tag-noble"
    )
    broker = _broker_toml(objects)
    assert broker["bootstrap"]["default_bind"] == "tcp://net1:%p"
    assert broker["bootstrap"]["default_connect"] == "tcp://%h.hpc:%p"
    assert broker["bootstrap"]["curve_cert"] == "/mnt/flux/config/etc/curve/curve.cert"
    assert broker["sched-fluxion-qmanager"]["queue-policy"] == "easy"


def test_objects_owned_by_the_job_and_the_secret_built_once() -> None:
    calls = []

    def keypair() -> Any:
        calls.append(1)
        return FIXED_CURVE_KEYPAIR

    settings = Settings(ssh_keypair=lambda: FIXED_KEYPAIR, curve_keypair=keypair)
    job = make_job(runtime="custom", command=["lmp"])
    objects = render_of(job, _runtime(), None, settings)
    (secret,) = by_kind(objects, "Secret")
    assert secret["metadata"]["name"] == "alpha-flux-curve"
    assert secret["immutable"] is True
    assert f'secret-key = "{FIXED_CURVE_KEYPAIR.secret_key}"' in secret["stringData"]["curve.cert"]
    config_map = by_kind(objects, "ConfigMap")[-1]
    for obj in (secret, config_map):
        assert obj["metadata"]["ownerReferences"][0]["uid"] == "uid-alpha"
    assert calls == [1]
    again = render_of(job, _runtime(), Observed(objects=[secret]), settings)
    assert by_kind(again, "Secret") == []
    assert by_kind(again, "ConfigMap")[-1] == config_map
    assert calls == [1]


def _with_init_container(name: str) -> dict[str, Any]:
    runtime = _runtime()
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["initContainers"] = [{"name": name, "image": "busybox"}]
    return runtime


POD = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"


@pytest.mark.parametrize(
    ("runtime", "trainer", "errors"),
    [
        pytest.param(_runtime(), {"command": ["lmp"]}, [], id="valid"),
        pytest.param(
            _runtime(),
            {"env": [{"name": "FLUX_QUEUE_POLICY", "value": "lifo"}]},
            [
                "spec.trainer.env[0].value: FLUX_QUEUE_POLICY must be one of fcfs, easy, hybrid, "
                "conservative, got 'lifo'"
            ],
            id="unknown-queue-policy",
        ),
        pytest.param(
            _runtime(),
            {
                "env": [
                    {"name": "OTHER", "value": "x"},
                    {
                        "name": "FLUX_VIEW_IMAGE",
                        "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}},
                    },
                ]
            },
            [
                "spec.trainer.env[1]: FLUX_VIEW_IMAGE must have a literal value: the controller "
                "reads it to build the Flux pods"
            ],
            id="setting-from-a-reference",
        ),
        pytest.param(
            _runtime(env=[{"name": "FLUX_NETWORK_DEVICE", "value": "eth0; reboot"}]),
            {},
            [
                f"{POD}.containers[0].env[0].value: FLUX_NETWORK_DEVICE must be a network "
                "interface name such as eth0, got 'eth0; reboot'"
            ],
            id="bad-network-device-in-runtime",
        ),
        pytest.param(
            _with_init_container("flux-installer"),
            {},
            [
                f"{POD}.initContainers[0].name: 'flux-installer' is reserved for the Flux "
                "installer (set by the runtime or a runtimePatch)"
            ],
            id="reserved-init-container",
        ),
        pytest.param(
            _runtime(),
            {"numProcPerNode": 0},
            ["spec.trainer.numProcPerNode: must be at least 1 for a Flux runtime"],
            id="no-procs",
        ),
        pytest.param(
            _runtime(),
            {"args": ["-in", "in.reaxc.hns"]},
            [
                "spec.trainer.command: must be set with args for a Flux runtime: the image's "
                "entrypoint cannot be run under flux run"
            ],
            id="args-without-command",
        ),
        pytest.param(
            make_runtime({"flux": {}}, [replicated_job("node")]),
            {},
            [
                "spec.runtimeRef.name: ClusterTrainingRuntime 'custom' has a Flux policy but no "
                "trainer replicated job with a 'node' container"
            ],
            id="no-trainer-job",
        ),
    ],
)
def test_validation(runtime: dict[str, Any], trainer: dict[str, Any], errors: list[str]) -> None:
    assert field_errors(make_job(runtime="custom", **trainer), runtime) == errors


def test_pod_host_names_are_required() -> None:
    runtime = _runtime()
    runtime["spec"]["template"]["spec"]["network"] = {"enableDNSHostnames": False}
    assert field_errors(make_job(runtime="custom"), runtime) == [
        "spec.runtimeRef.name: ClusterTrainingRuntime 'custom' sets network.enableDNSHostnames "
        "to false, but Flux brokers reach each other by pod host name"
    ]
