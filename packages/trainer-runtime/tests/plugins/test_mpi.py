"""MPI plugin: node counts, hostfile, SSH Secret, volumes and launcher env per implementation."""

from __future__ import annotations

from typing import Any

import pytest
from runtime_cases import (
    FIXED_KEYPAIR,
    FIXED_SETTINGS,
    by_kind,
    container_of,
    env_of,
    field_errors,
    make_job,
    make_runtime,
    render_of,
    replicated_job,
    runtime_doc,
    unchecked,
)
from trainer_runtime import Observed, render


def _mpi_runtime(
    implementation: str = "OpenMPI", run_launcher_as_node: bool = False, slots: int = 8
) -> dict[str, Any]:
    return make_runtime(
        {
            "numNodes": 1,
            "mpi": {
                "numProcPerNode": slots,
                "mpiImplementation": implementation,
                "runLauncherAsNode": run_launcher_as_node,
            },
        },
        [replicated_job("launcher", "trainer"), replicated_job("node")],
    )


def _launcher_as_node_runtime(*jobs: dict[str, Any]) -> dict[str, Any]:
    return make_runtime({"mpi": {"runLauncherAsNode": True}}, list(jobs))


def _objects(
    job: dict[str, Any], runtime: dict[str, Any], observed: Observed | None = None
) -> list[dict[str, Any]]:
    return render_of(job, runtime, observed, FIXED_SETTINGS)


def _replicated(jobset: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {
        job["name"]: (
            job["template"]["spec"]["parallelism"],
            job["template"]["spec"]["completions"],
        )
        for job in jobset["spec"]["replicatedJobs"]
    }


def test_hostfile_lists_workers_with_slots() -> None:
    objects = _objects(make_job(runtime="custom", numNodes=2), _mpi_runtime())
    hostfile = next(
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "alpha-mpi-hostfile"
    )
    assert (
        hostfile["data"]["hostfile"]
        == "alpha-node-0-0.alpha slots=8\nalpha-node-0-1.alpha slots=8\n"
    )
    assert _replicated(by_kind(objects, "JobSet")[0]) == {"launcher": (1, 1), "node": (2, 2)}


@pytest.mark.parametrize(
    ("num_nodes", "expected_jobs", "expected_hosts"),
    [
        pytest.param(
            1,
            {"launcher": (1, 1)},
            ["alpha-launcher-0-0.alpha"],
            id="one-node-is-the-launcher-alone",
        ),
        pytest.param(
            3,
            {"node": (2, 2), "launcher": (1, 1)},
            ["alpha-launcher-0-0.alpha", "alpha-node-0-0.alpha", "alpha-node-0-1.alpha"],
            id="launcher-first-then-workers",
        ),
    ],
)
def test_run_launcher_as_node(
    num_nodes: int, expected_jobs: dict[str, tuple[int, int]], expected_hosts: list[str]
) -> None:
    objects = _objects(
        make_job(runtime="deepspeed-distributed", numNodes=num_nodes),
        runtime_doc("deepspeed-distributed"),
    )
    jobset = by_kind(objects, "JobSet")[0]
    assert _replicated(jobset) == expected_jobs
    launcher = next(job for job in jobset["spec"]["replicatedJobs"] if job["name"] == "launcher")
    assert ("dependsOn" in launcher) == (num_nodes > 1)
    hostfile = next(
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "alpha-mpi-hostfile"
    )
    assert hostfile["data"]["hostfile"] == "".join(f"{host} slots=1\n" for host in expected_hosts)


def test_ssh_secret_is_built_from_injected_key_and_immutable() -> None:
    secret = by_kind(_objects(make_job(runtime="custom"), _mpi_runtime()), "Secret")[0]
    assert secret["metadata"]["name"] == "alpha-mpi-ssh-auth"
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert secret["immutable"] is True
    assert secret["stringData"] == {
        "ssh-privatekey": FIXED_KEYPAIR.private_key,
        "ssh-publickey": FIXED_KEYPAIR.public_key,
    }
    assert secret["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"


def test_ssh_secret_is_not_rebuilt_once_it_exists() -> None:
    calls = []

    def keygen() -> Any:
        calls.append(1)
        return FIXED_KEYPAIR

    from trainer_runtime import Settings

    existing = Observed(
        objects=[{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "alpha-mpi-ssh-auth"}}]
    )
    objects = render_of(
        make_job(runtime="custom"), _mpi_runtime(), existing, Settings(ssh_keypair=keygen)
    )
    assert by_kind(objects, "Secret") == []
    assert calls == []


def test_volumes_and_mounts_with_file_modes() -> None:
    runtime = runtime_doc("deepspeed-distributed")
    jobset = by_kind(
        _objects(make_job(runtime="deepspeed-distributed", numNodes=2), runtime), "JobSet"
    )[0]
    jobs = {
        job["name"]: job["template"]["spec"]["template"]["spec"]
        for job in jobset["spec"]["replicatedJobs"]
    }
    ssh_volume = {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": "alpha-mpi-ssh-auth",
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
            "defaultMode": 0o400,
        },
    }
    hostfile_volume = {
        "name": "mpi-hostfile",
        "configMap": {
            "name": "alpha-mpi-hostfile",
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }
    assert jobs["node"]["volumes"] == [ssh_volume]
    assert jobs["launcher"]["volumes"] == [ssh_volume, hostfile_volume]
    assert container_of(jobset, "node")["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"}
    ]
    assert container_of(jobset, "launcher")["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]


@pytest.mark.parametrize(
    ("implementation", "expected"),
    [
        pytest.param(
            "OpenMPI",
            {
                "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
                "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                "OMPI_MCA_orte_set_default_slots": "8",
                "PRTE_MCA_prte_default_hostfile": "/etc/mpi/hostfile",
                "PRTE_MCA_prte_keep_fqdn_hostnames": "false",
                "PRTE_MCA_prte_set_default_slots": "8",
                "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
                "PRTE_MCA_plm_ssh_args": "-o ConnectionAttempts=10",
            },
            id="open-mpi-4-and-5",
        ),
        pytest.param(
            "Intel",
            {
                "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                "I_MPI_HYDRA_BOOTSTRAP": "ssh",
                "I_MPI_PERHOST": "8",
                "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
            },
            id="intel-mpi",
        ),
        pytest.param(
            "MPICH",
            {
                "HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                "HYDRA_LAUNCHER": "ssh",
                "HYDRA_LAUNCHER_EXTRA_ARGS": "-o ConnectionAttempts=10",
            },
            id="mpich",
        ),
    ],
)
def test_launcher_env_per_implementation(implementation: str, expected: dict[str, str]) -> None:
    objects = _objects(
        make_job(runtime="custom", numNodes=2, env=[{"name": "USER", "value": "u"}]),
        _mpi_runtime(implementation),
    )
    launcher = container_of(by_kind(objects, "JobSet")[0], "launcher")
    assert list(env_of(launcher).items()) == [("USER", "u"), *expected.items()]


@pytest.mark.parametrize(
    ("implementation", "line"),
    [
        pytest.param("OpenMPI", "alpha-node-0-0.alpha slots=8", id="open-mpi"),
        pytest.param("Intel", "alpha-node-0-0.alpha:8", id="hydra"),
    ],
)
def test_hostfile_format_per_implementation(implementation: str, line: str) -> None:
    objects = _objects(make_job(runtime="custom"), _mpi_runtime(implementation))
    hostfile = next(
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "alpha-mpi-hostfile"
    )
    assert hostfile["data"]["hostfile"] == line + "\n"


def test_slots_from_gpus_when_runtime_says_one() -> None:
    job = make_job(
        runtime="custom", numNodes=2, resourcesPerNode={"limits": {"nvidia.com/gpu": "4"}}
    )
    objects = _objects(job, _mpi_runtime(slots=1))
    hostfile = next(
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "alpha-mpi-hostfile"
    )
    assert hostfile["data"]["hostfile"].splitlines()[0] == "alpha-node-0-0.alpha slots=4"


def test_trainjob_num_proc_per_node_sets_slots() -> None:
    objects = _objects(make_job(runtime="custom", numNodes=2, numProcPerNode=3), _mpi_runtime())
    launcher = container_of(by_kind(objects, "JobSet")[0], "launcher")
    assert env_of(launcher)["OMPI_MCA_orte_set_default_slots"] == "3"


@pytest.mark.parametrize(
    ("runtime", "trainer", "expected"),
    [
        pytest.param(
            _mpi_runtime(),
            {"env": [{"name": "OMPI_MCA_orte_default_hostfile", "value": "x"}]},
            ["spec.trainer.env[0].name: OMPI_MCA_orte_default_hostfile is reserved for the MPI"],
            id="reserved-launcher-env",
        ),
        pytest.param(
            make_runtime({"mpi": {}}, [replicated_job("node", "trainer")]),
            {},
            ["spec.runtimeRef.name: ClusterTrainingRuntime 'custom' has an MPI policy but no"],
            id="no-launcher",
        ),
        pytest.param(
            make_runtime({"mpi": {}}, [replicated_job("launcher", "trainer")]),
            {"numNodes": 2},
            ["spec.trainer.numNodes: must be 1: the runtime has no 'node' replicated job"],
            id="no-workers",
        ),
        pytest.param(
            _mpi_runtime("LAM"),
            {},
            ["spec.mlPolicy.mpi.mpiImplementation: "],
            id="unknown-implementation",
        ),
        pytest.param(
            _launcher_as_node_runtime(replicated_job("node", "trainer")),
            {"numNodes": 1},
            [],
            id="launcher-as-node-only-node-one-node",
        ),
        pytest.param(
            _launcher_as_node_runtime(replicated_job("node", "trainer")),
            {"numNodes": 2},
            [
                "spec.trainer.numNodes: must be 1: ClusterTrainingRuntime 'custom' runs the "
                "launcher as a node but has no 'launcher' replicated job"
            ],
            id="launcher-as-node-only-node-two-nodes",
        ),
        pytest.param(
            _launcher_as_node_runtime(replicated_job("launcher", "trainer")),
            {"numNodes": 3},
            [
                "spec.trainer.numNodes: must be 1: ClusterTrainingRuntime 'custom' runs the "
                "launcher as a node but has no 'node' replicated job"
            ],
            id="launcher-as-node-only-launcher-three-nodes",
        ),
        pytest.param(
            _launcher_as_node_runtime(replicated_job("launcher", "trainer")),
            {"numNodes": 1},
            [],
            id="launcher-as-node-only-launcher-one-node",
        ),
    ],
)
def test_mpi_validation(
    runtime: dict[str, Any], trainer: dict[str, Any], expected: list[str]
) -> None:
    errors = field_errors(make_job(runtime="custom", **trainer), runtime)
    assert len(errors) == len(expected)
    for error, start in zip(errors, expected, strict=True):
        assert error.startswith(start)


def test_launcher_as_node_with_only_a_node_job_runs_that_node() -> None:
    objects = _objects(
        make_job(runtime="custom", numNodes=1),
        _launcher_as_node_runtime(replicated_job("node", "trainer")),
    )
    assert _replicated(by_kind(objects, "JobSet")[0]) == {"node": (1, 1)}
    hostfile = next(
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "alpha-mpi-hostfile"
    )
    assert hostfile["data"]["hostfile"] == "alpha-node-0-0.alpha slots=1\n"


def test_mpi_runtime_argument_errors_become_build_errors() -> None:
    from trainer_runtime import BuildError

    admission = unchecked(make_job(runtime="custom", numNodes=2, numProcPerNode=0), _mpi_runtime())
    with pytest.raises(BuildError, match=r"^MPI launcher env: .*slots"):
        render(admission, settings=FIXED_SETTINGS)
