"""Persistent volume claims: local volumes that outlive jobs, shared by every job naming them."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trainer_sdk import (
    CustomTrainer,
    CustomTrainerContainer,
    LocalBackendConfig,
    Name,
    TrainerClient,
    TrainerCommand,
    constants,
)
from trainer_sdk.backends.local import volumes
from trainer_sdk.backends.local.submit.pods import UnsupportedPodError, expand_pods
from trainer_sdk.backends.local.supervisor import isolation
from trainer_sdk.cli import cli
from trainer_sdk.options import (
    ContainerPatch,
    JobSetSpecPatch,
    JobSetTemplatePatch,
    JobSpecPatch,
    JobTemplatePatch,
    PodSpecPatch,
    PodTemplatePatch,
    ReplicatedJobPatch,
    RuntimePatch,
    TrainingRuntimeSpecPatch,
)

pytestmark = pytest.mark.e2e
DEADLINE_SECONDS = 120


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "jobs"


@pytest.fixture
def client(root: Path) -> Iterator[TrainerClient]:
    trainer_client = TrainerClient(LocalBackendConfig(root=root, stop_on_exit=True))
    yield trainer_client
    trainer_client.backend.close()  # type: ignore[attr-defined]


def claim_mounted_at(path: str, claim: str) -> RuntimePatch:
    """The node pods mount persistentVolumeClaim ``claim`` at ``path``."""
    return mounted({"ckpt": {"persistentVolumeClaim": {"claimName": claim}}}, {"ckpt": path})


def mounted(sources: dict[str, dict[str, Any]], paths: dict[str, str]) -> RuntimePatch:
    """The node pods declare the volumes ``sources`` (name -> source) and mount each at
    ``paths[name]``."""
    pod = PodSpecPatch(
        volumes=[{"name": name, **source} for name, source in sources.items()],
        containers=[
            ContainerPatch(
                name="node",
                volume_mounts=[{"name": name, "mountPath": path} for name, path in paths.items()],
            )
        ],
    )
    job = ReplicatedJobPatch(
        name=constants.NODE,
        template=JobTemplatePatch(spec=JobSpecPatch(template=PodTemplatePatch(spec=pod))),
    )
    return RuntimePatch(
        training_runtime_spec=TrainingRuntimeSpecPatch(
            template=JobSetTemplatePatch(spec=JobSetSpecPatch(replicated_jobs=[job]))
        )
    )


def run(client: TrainerClient, name: str, command: str, claim: str = "shared") -> str:
    client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[
            Name(name),
            TrainerCommand(["bash", "-c", command]),
            claim_mounted_at("/ckpt", claim),
        ],
    )
    job = client.wait_for_job_status(
        name, {constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED}, timeout=DEADLINE_SECONDS
    )
    assert job.status == constants.TRAINJOB_COMPLETE, list(client.get_job_logs(name))
    return "\n".join(client.get_job_logs(name))


def test_a_claim_written_by_one_job_is_read_by_the_next_and_survives_deleting_it(
    client: TrainerClient, root: Path
) -> None:
    """Job B read its own empty directory before: FileNotFoundError on A's checkpoint."""
    run(client, "writer", "echo saved-by-writer > /ckpt/step-10")
    client.delete_job("writer")
    assert "saved-by-writer" in run(client, "reader", "cat /ckpt/step-10")
    directory = volumes.claim_path("default", "shared", root)
    assert (directory / "step-10").read_text() == "saved-by-writer\n"
    [claim] = volumes.list_claims(root)
    assert (claim.namespace, claim.name, claim.jobs) == ("default", "shared", ("reader",))
    assert claim.size_bytes == len("saved-by-writer\n")


def test_trainer_volumes_lists_and_deletes_and_refuses_a_claim_in_use(
    client: TrainerClient, root: Path
) -> None:
    run(client, "first", "echo x > /ckpt/f", claim="data")
    runner = CliRunner()
    listed = runner.invoke(cli, ["--root", str(root), "volumes", "-o", "json"])
    assert listed.exit_code == 0, listed.output
    [claim] = json.loads(listed.output)
    assert claim == {
        "namespace": "default",
        "name": "data",
        "path": str(root / ".volumes" / "default" / "data"),
        "sizeBytes": 2,
        "jobs": ["first"],
    }
    client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[Name("busy"), TrainerCommand(["sleep", "120"]), claim_mounted_at("/ckpt", "data")],
    )
    refused = runner.invoke(cli, ["--root", str(root), "volumes", "delete", "data"])
    assert refused.exit_code == 1
    assert "mounted by running jobs: busy" in refused.output
    client.delete_job("busy")
    deleted = runner.invoke(cli, ["--root", str(root), "volumes", "delete", "data"])
    assert deleted.exit_code == 0, deleted.output
    assert not (root / ".volumes" / "default" / "data").exists()
    assert client.get_job("first").status == constants.TRAINJOB_COMPLETE


def test_without_namespaces_a_job_with_volumes_warns_once_that_pods_see_local_directories(
    client: TrainerClient,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing said that a mount path passed in func_args named the host's own path."""
    monkeypatch.setenv(isolation.DISABLE_ENV, "0")  # as on macOS: read at submit
    run(client, "warned", "true")
    warnings = [record.getMessage() for record in caplog.records if "/ckpt" in record.getMessage()]
    assert len(warnings) == 1 and "func_args" in warnings[0], warnings


def write_rank_file(path: str) -> None:
    """Each rank writes, under ``path``, its host name and the address its peer's name has."""
    import os
    import socket

    job = socket.gethostname().rsplit("-node-", 1)[0]
    peer = socket.gethostbyname(f"{job}-node-0-1.{job}")
    with open(os.path.join(path, f"rank-{os.environ['RANK']}"), "w") as file:
        file.write(f"{socket.gethostname()} {peer}")


def test_a_mount_path_in_func_args_is_the_volume_for_both_ranks_of_a_two_node_job(
    client: TrainerClient, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Both ranks wrote into the host's own directory at the mount path (the path was rewritten
    in commands and env only), and the pod host names did not resolve."""
    if not isolation.available():
        pytest.skip("this kernel refuses private mount namespaces (the fallback rewrites)")
    path = f"/trainer-sdk-test-{uuid.uuid4().hex}/ckpt"  # under /, which has no such directory
    client.train(
        trainer=CustomTrainer(
            func=write_rank_file,
            func_args={"path": path},
            num_nodes=2,
            resources_per_node={"cpu": 1},
        ),
        options=[Name("ranks"), claim_mounted_at(path, "shared")],
    )
    job = client.wait_for_job_status(
        "ranks", {constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED}, timeout=DEADLINE_SECONDS
    )
    assert job.status == constants.TRAINJOB_COMPLETE, list(client.get_job_logs("ranks"))
    claim = volumes.claim_path("default", "shared", root)
    written = {entry.name: entry.read_text() for entry in claim.iterdir()}
    assert written == {
        "rank-0": "ranks-node-0-0 127.0.0.1",
        "rank-1": "ranks-node-0-1 127.0.0.1",
    }
    assert not Path(path).parent.exists()
    assert not [record for record in caplog.records if "namespaces" in record.getMessage()]


def transform(config: str) -> None:
    """Upper-case the file the config names as input into the file it names as output."""
    import json

    with open(config) as file:
        paths = json.load(file)
    with open(paths["input"]) as source, open(paths["output"], "w") as target:
        target.write(source.read().upper())


def test_a_path_read_from_a_config_file_is_the_volume_not_the_hosts_mnt_data(
    client: TrainerClient, root: Path, tmp_path: Path
) -> None:
    """The config's paths named this machine's /mnt/data and /mnt/inputs: as root the job wrote
    into the host's /mnt/data."""
    if not isolation.available():
        pytest.skip("this kernel refuses private mount namespaces (the fallback rewrites)")
    output = f"/mnt/data/trainer-sdk-test-{uuid.uuid4().hex}"
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "words.txt").write_text("hello volumes")
    (tmp_path / "config").mkdir()
    config = {"input": "/mnt/inputs/words.txt", "output": output}
    (tmp_path / "config" / "job.json").write_text(json.dumps(config))
    client.train(
        trainer=CustomTrainer(
            func=transform,
            func_args={"config": "/etc/job-config/job.json"},
            resources_per_node={"cpu": 1},
        ),
        options=[
            Name("config"),
            mounted(
                {
                    "data": {"persistentVolumeClaim": {"claimName": "data"}},
                    "inputs": {"hostPath": {"path": str(tmp_path / "inputs")}},
                    "config": {"hostPath": {"path": str(tmp_path / "config")}},
                },
                {"data": "/mnt/data", "inputs": "/mnt/inputs", "config": "/etc/job-config"},
            ),
        ],
    )
    job = client.wait_for_job_status(
        "config", {constants.TRAINJOB_COMPLETE, constants.TRAINJOB_FAILED}, timeout=DEADLINE_SECONDS
    )
    assert job.status == constants.TRAINJOB_COMPLETE, list(client.get_job_logs("config"))
    claim = volumes.claim_path("default", "data", root)
    assert (claim / Path(output).name).read_text() == "HELLO VOLUMES"
    assert not Path(output).exists()
    assert not Path("/etc/job-config").exists()


@pytest.mark.parametrize(
    ("volume", "mount", "message"),
    [
        pytest.param(
            {"name": "../../../escaped", "emptyDir": {}},
            {"name": "../../../escaped", "mountPath": "/data"},
            "volumes[0].name: expected a volume name (a DNS label), got '../../../escaped'",
            id="volume-name-path",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "data", "mountPath": "data"},
            "volumeMounts[0].mountPath: expected an absolute path without '..', got 'data'",
            id="relative-mount-path",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "data", "mountPath": "/data/../etc/x"},
            "volumeMounts[0].mountPath: expected an absolute path without '..'",
            id="mount-path-backsteps",
        ),
        pytest.param(
            {"name": "data", "emptyDir": {}},
            {"name": "other", "mountPath": "/data"},
            "volumeMounts[0].name: no volume named 'other' in the pod",
            id="mount-of-no-volume",
        ),
        pytest.param(
            {"name": "data", "hostPath": {"path": "/srv/../etc"}},
            {"name": "data", "mountPath": "/data"},
            "hostPath.path: expected an absolute path without '..'",
            id="host-path-backsteps",
        ),
    ],
)
def test_volumes_that_could_reach_outside_the_job_are_refused_before_use(
    tmp_path: Path, volume: dict[str, Any], mount: dict[str, Any], message: str
) -> None:
    with pytest.raises(volumes.InvalidVolumeError, match=re.escape(message)):
        volumes.pod_mounts(
            {"volumeMounts": [mount]},
            {"volumes": [volume]},
            "spec.containers[0]",
            job_volumes=str(tmp_path / "job" / "volumes"),
            root=tmp_path,
            namespace="default",
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_jobset_claim_template_is_a_volume_of_every_pod_in_the_job_directory() -> None:
    """JobSet adds its ``volumeClaimPolicies`` templates to every pod (the LLM runtimes' shared
    ``initializer`` volume): locally each is a directory of the job."""
    pod = {"containers": [{"name": "node", "command": ["true"]}]}
    pod["containers"][0]["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
    jobset = {
        "metadata": {"name": "j"},
        "spec": {
            "volumeClaimPolicies": [{"templates": [{"metadata": {"name": "initializer"}}]}],
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": pod}}}}],
        },
    }
    [(_, [placed])] = expand_pods(jobset, "/jobs/j/volumes")
    assert [(m.path, m.local) for m in placed.mounts] == [
        ("/workspace", "/jobs/j/volumes/initializer")
    ]
    del jobset["spec"]["volumeClaimPolicies"]
    with pytest.raises(UnsupportedPodError, match="no volume named 'initializer' in the pod"):
        expand_pods(jobset, "/jobs/j/volumes")


def test_sub_paths_are_made_inside_their_volume_and_never_through_a_link_out(
    tmp_path: Path,
) -> None:
    volume, outside = tmp_path / "volume", tmp_path / "outside"
    volume.mkdir()
    outside.mkdir()
    (volume / "link").symlink_to(outside)
    volumes.make_sub_paths([volumes.Mount("/data", str(volume), True, sub_path="a/b")])
    assert (volume / "a" / "b").is_dir()
    with pytest.raises(OSError, match="outside the volume"):
        volumes.make_sub_paths([volumes.Mount("/data", str(volume), True, sub_path="link/new")])
    assert list(outside.iterdir()) == []


def test_an_escaping_volume_is_refused_at_submit(client: TrainerClient, root: Path) -> None:
    with pytest.raises(Exception, match=r"volumes\[0\]\.name: a volume name must be a DNS-1123"):
        client.train(
            trainer=CustomTrainerContainer(image="i"),
            options=[
                Name("escape"),
                TrainerCommand(["true"]),
                mounted({"../../../escaped": {"emptyDir": {}}}, {"../../../escaped": "/data"}),
            ],
        )
    assert not (root.parent / "escaped").exists()
    assert not (root / "escape").exists()
