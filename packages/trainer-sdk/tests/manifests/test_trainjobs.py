"""The TrainJob custom resource that train() sends, for every trainer type and option."""

from __future__ import annotations

import base64
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trainer_api
from trainer_sdk import (
    ActiveDeadlineSeconds,
    Annotations,
    BuiltinTrainer,
    ContainerPatch,
    CustomTrainer,
    CustomTrainerContainer,
    DataCacheInitializer,
    DataFormat,
    DataType,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    JobSetSpecPatch,
    JobSetTemplatePatch,
    JobTemplatePatch,
    Labels,
    LoraConfig,
    Loss,
    Name,
    ReplicatedJobPatch,
    RuntimePatch,
    S3DatasetInitializer,
    S3ModelInitializer,
    TorchTuneConfig,
    TorchTuneInstructDataset,
    TrainerArgs,
    TrainerCommand,
    TrainingRuntimeSpecPatch,
    TRLConfig,
    constants,
    types,
)
from trainer_sdk.backends.local.supervisor.supervisor import write_shims
from trainer_sdk.manifests.trainjobs import (
    RANK_ENTRYPOINT_FILE,
    build_trainjob_manifest,
    command_for_code,
    command_for_function,
    generate_name,
)
from trainer_sdk.options import TypedOption
from trainer_sdk.training import rank_entrypoint

from ..conftest import make_runtime


def train_with_args(learning_rate: float, epochs: int = 1) -> None:
    import os

    print(f"lr={learning_rate} epochs={epochs} home-literal=$HOME {os.environ.get('MARKER', '')}")


def test_generated_names_are_a_letter_and_eleven_hex_digits() -> None:
    name = generate_name()
    assert len(name) == 12 and name[0].isalpha() and all(c in "0123456789abcdef" for c in name[1:])


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        pytest.param(
            {"cpu": -1}, r"resources_per_node\['cpu'\]: must be at least 0", id="negative"
        ),
        pytest.param(
            {"cpus": 3},
            r"resources_per_node\['cpus'\]: unknown resource name; expected one of cpu, memory",
            id="typo",
        ),
        pytest.param({"gpu": 0.5}, r"nvidia.com/gpu is an extended resource .* whole", id="half"),
        pytest.param({"memory": "1Gb"}, r"\['memory'\]: invalid quantity '1Gb'", id="suffix"),
        pytest.param({"cpu": True}, r"\['cpu'\]: expected a number or a quantity", id="bool"),
    ],
)
def test_resources_kubernetes_refuses_are_one_error_naming_the_key(
    torch_runtime: types.Runtime, resources: dict[str, Any], message: str
) -> None:
    """{"cpu": -1} and {"cpus": 3} ran as if valid; Kubernetes refuses both."""
    trainer = CustomTrainer(func=train_with_args, resources_per_node=resources)
    with pytest.raises(ValueError, match=message) as raised:
        build_trainjob_manifest("job-a", torch_runtime, trainer)
    assert str(raised.value).count("resources_per_node") == 1


def test_resources_take_hugepages_and_extended_names_as_kubernetes_does(
    torch_runtime: types.Runtime,
) -> None:
    resources = {"hugepages-2Mi": "1Gi", "example.com/fpga": 2, "cpu": 3.5}
    trainer = CustomTrainer(func=train_with_args, resources_per_node=resources)
    limits = build_trainjob_manifest("job-a", torch_runtime, trainer)["spec"]["trainer"][
        "resourcesPerNode"
    ]["limits"]
    assert limits == {"hugepages-2Mi": "1Gi", "example.com/fpga": "2", "cpu": "3.5"}


def test_the_function_keeps_its_line_numbers_in_the_pods_file(torch_runtime: types.Runtime) -> None:
    """The pod's file began with the function: its line 5 was not line 5 of the user's file."""
    spec = build_trainjob_manifest("job-a", torch_runtime, CustomTrainer(func=train_with_args))[
        "spec"
    ]["trainer"]
    written = dict(re.findall(r"^write (\S+) '([A-Za-z0-9+/=]*)'", spec["command"][2], re.M))
    code = base64.b64decode(written["test_trainjobs.py"]).decode().splitlines()
    lines, first = inspect.getsourcelines(train_with_args)
    assert code[first - 1 : first - 1 + len(lines)] == [line.rstrip("\n") for line in lines]


def test_custom_trainer_sets_nodes_resources_env_image_and_command(
    torch_runtime: types.Runtime,
) -> None:
    trainer = CustomTrainer(
        func=train_with_args,
        func_args={"learning_rate": 0.5},
        num_nodes=2,
        resources_per_node={"CPU": 2, "gpu": 1, "memory": "1Gi"},
        env={"MARKER": "x"},
        image="img:1",
    )
    manifest = build_trainjob_manifest("job-a", torch_runtime, trainer)
    assert manifest["apiVersion"] == constants.API_VERSION and manifest["kind"] == "TrainJob"
    assert manifest["metadata"] == {"name": "job-a"}
    assert manifest["spec"]["runtimeRef"] == {
        "name": "torch-distributed",
        "apiGroup": constants.GROUP,
        "kind": "ClusterTrainingRuntime",
    }
    spec = manifest["spec"]["trainer"]
    assert spec["numNodes"] == 2
    assert spec["resourcesPerNode"]["limits"] == {
        "cpu": "2",
        "nvidia.com/gpu": "1",
        "memory": "1Gi",
    }
    assert spec["env"] == [{"name": "MARKER", "value": "x"}]
    assert spec["image"] == "img:1"
    assert spec["command"][:2] == ["bash", "-c"]
    written = dict(re.findall(r"^write (\S+) '([A-Za-z0-9+/=]*)'", spec["command"][2], re.M))
    code = base64.b64decode(written["test_trainjobs.py"]).decode()
    assert code.rstrip().endswith("train_with_args(**{'learning_rate': 0.5})")
    assert base64.b64decode(written[RANK_ENTRYPOINT_FILE]).decode() == inspect.getsource(
        rank_entrypoint
    )
    assert (
        spec["command"][2].rstrip().endswith(f"torchrun {RANK_ENTRYPOINT_FILE} test_trainjobs.py")
    )


def test_container_trainer_has_no_command(torch_runtime: types.Runtime) -> None:
    manifest = build_trainjob_manifest(
        "job-b", torch_runtime, CustomTrainerContainer(image="me/train:1", num_nodes=3)
    )
    assert manifest["spec"]["trainer"] == {"numNodes": 3, "image": "me/train:1"}


def test_builtin_trainer_passes_torchtune_overrides_as_args() -> None:
    runtime = make_runtime(
        constants.TORCH_TUNE_COMMAND, name="torchtune-llama3.2-1b", framework="torchtune"
    )
    config = TorchTuneConfig(
        dtype=DataType.BF16,
        batch_size=2,
        epochs=3,
        loss=Loss.CEWithChunkedOutputLoss,
        num_nodes=2,
        peft_config=LoraConfig(lora_rank=8, apply_lora_to_mlp=True),
        dataset_preprocess_config=TorchTuneInstructDataset(
            source=DataFormat.JSON, split="train[:10%]"
        ),
    )
    initializer = Initializer(
        dataset=HuggingFaceDatasetInitializer("hf://tatsu-lab/alpaca/data/train.json")
    )
    spec = build_trainjob_manifest("job-c", runtime, BuiltinTrainer(config), initializer)["spec"]
    assert spec["trainer"]["command"] == ["tune", "run"]
    assert spec["trainer"]["numNodes"] == 2
    assert spec["trainer"]["args"] == [
        "dtype=bf16",
        "batch_size=2",
        "epochs=3",
        "loss=torchtune.modules.loss.CEWithChunkedOutputLoss",
        "dataset.data_files=/workspace/dataset/data/train.json",
        "model.apply_lora_to_mlp=True",
        "model.lora_rank=8",
        "model.lora_attn_modules=[q_proj,v_proj,output_proj]",
        "dataset=torchtune.datasets.instruct_dataset",
        "dataset.source=json",
        "dataset.split=train[:10%]",
    ]


@pytest.mark.parametrize(
    ("initializer", "expected"),
    [
        pytest.param(
            Initializer(dataset=HuggingFaceDatasetInitializer("hf://u/d", access_token="t")),
            {
                "dataset": {
                    "storageUri": "hf://u/d",
                    "env": [{"name": "ACCESS_TOKEN", "value": "t"}],
                }
            },
            id="huggingface-dataset",
        ),
        pytest.param(
            Initializer(dataset=S3DatasetInitializer("s3://b/p", endpoint="http://minio:9000")),
            {
                "dataset": {
                    "storageUri": "s3://b/p",
                    "env": [{"name": "ENDPOINT", "value": "http://minio:9000"}],
                }
            },
            id="s3-dataset",
        ),
        pytest.param(
            Initializer(
                dataset=DataCacheInitializer(
                    "cache://s/t", metadata_loc="s3://m.json", num_data_nodes=2
                )
            ),
            {
                "dataset": {
                    "storageUri": "cache://s/t",
                    "env": [
                        {"name": "CLUSTER_SIZE", "value": "3"},
                        {"name": "METADATA_LOC", "value": "s3://m.json"},
                    ],
                }
            },
            id="data-cache",
        ),
        pytest.param(
            Initializer(model=HuggingFaceModelInitializer("hf://u/m")),
            {
                "model": {
                    "storageUri": "hf://u/m",
                    "env": [
                        {"name": "IGNORE_PATTERNS", "value": "*.msgpack,*.h5,*.bin,*.pt,*.pth"}
                    ],
                }
            },
            id="huggingface-model",
        ),
        pytest.param(
            Initializer(model=S3ModelInitializer("s3://b/m", ignore_patterns=None)),
            {"model": {"storageUri": "s3://b/m"}},
            id="s3-model",
        ),
    ],
)
def test_initializers(
    torch_runtime: types.Runtime, initializer: Initializer, expected: dict[str, Any]
) -> None:
    assert (
        build_trainjob_manifest("j", torch_runtime, None, initializer)["spec"]["initializer"]
        == expected
    )


@pytest.mark.parametrize(
    ("option", "path", "expected"),
    [
        pytest.param(Name("my-job"), ("metadata", "name"), "my-job", id="name"),
        pytest.param(Labels({"team": "a"}), ("metadata", "labels"), {"team": "a"}, id="labels"),
        pytest.param(
            Annotations({"note": "b"}), ("metadata", "annotations"), {"note": "b"}, id="annotations"
        ),
        pytest.param(
            ActiveDeadlineSeconds(60), ("spec", "activeDeadlineSeconds"), 60, id="active-deadline"
        ),
        pytest.param(
            TrainerCommand(["python", "x.py"]),
            ("spec", "trainer", "command"),
            ["python", "x.py"],
            id="trainer-command",
        ),
        pytest.param(
            TrainerArgs(["--lr", "1"]),
            ("spec", "trainer", "args"),
            ["--lr", "1"],
            id="trainer-args",
        ),
        pytest.param(
            RuntimePatch(
                training_runtime_spec=TrainingRuntimeSpecPatch(
                    template=JobSetTemplatePatch(
                        spec=JobSetSpecPatch(
                            replicated_jobs=[
                                ReplicatedJobPatch(
                                    name="node",
                                    template=JobTemplatePatch(metadata={"labels": {"k": "v"}}),
                                )
                            ]
                        )
                    )
                )
            ),
            ("spec", "runtimePatches"),
            [
                {
                    "manager": "trainer.kubeflow.org/kubeflow-sdk",
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": "node",
                                        "template": {"metadata": {"labels": {"k": "v"}}},
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
            id="runtime-patch",
        ),
    ],
)
def test_options_edit_the_manifest(
    torch_runtime: types.Runtime, option: Any, path: tuple[str, ...], expected: Any
) -> None:
    manifest = build_trainjob_manifest(
        "j", torch_runtime, CustomTrainerContainer(image="i"), options=[option]
    )
    value: Any = manifest
    for key in path:
        value = value[key]
    assert value == expected


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda: Name("Bad_Name"), "Name.name", id="name-not-dns"),
        pytest.param(lambda: Name("job\n"), "Name.name", id="name-trailing-newline"),
        pytest.param(lambda: ActiveDeadlineSeconds(0), "activeDeadlineSeconds", id="deadline-zero"),
        pytest.param(lambda: HuggingFaceDatasetInitializer("s3://x"), "hf://", id="hf-scheme"),
        pytest.param(
            lambda: DataCacheInitializer("cache://a/b", "m", 1), "num_data_nodes", id="cache-nodes"
        ),
        pytest.param(
            lambda: DataCacheInitializer("cache://a", "m", 2),
            "cache://<SCHEMA_NAME>",
            id="cache-uri",
        ),
        pytest.param(
            lambda: ContainerPatch(name="trainer", env=[{"invalid": "structure"}]),
            r"ContainerPatch\.env\[0\]: Each env entry must have a 'name' key",
            id="patch-env-no-name",
        ),
        pytest.param(
            lambda: ContainerPatch(name="trainer", volume_mounts=[{"name": "vol"}]),
            r"volume_mounts\[0\]: Each volume_mounts entry must have a 'mountPath' key",
            id="patch-mount-no-path",
        ),
        pytest.param(
            lambda: ContainerPatch(name="trainer", volume_mounts=[{"mountPath": "/v"}]),
            "Each volume_mounts entry must have a 'name' key",
            id="patch-mount-no-name",
        ),
    ],
)
def test_bad_values_are_rejected_with_the_field(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_trainer_command_rejects_function_trainers(torch_runtime: types.Runtime) -> None:
    with pytest.raises(
        ValueError, match="TrainerCommand can only be used with CustomTrainerContainer"
    ):
        build_trainjob_manifest(
            "j", torch_runtime, CustomTrainer(func=train_with_args), options=[TrainerCommand(["x"])]
        )


def test_func_args_must_be_literals(torch_runtime: types.Runtime) -> None:
    with pytest.raises(ValueError, match="func_args"):
        command_for_function(torch_runtime, train_with_args, {"learning_rate": object()})


def test_generated_command_runs_the_function_with_keyword_arguments(tmp_path: Path) -> None:
    """The bash wrapper writes the source verbatim ($HOME stays) and calls func(**func_args)."""
    runtime = make_runtime(constants.DEFAULT_COMMAND, name="plain")
    command = command_for_function(runtime, train_with_args, {"learning_rate": 0.25, "epochs": 4})
    write_shims(tmp_path / "bin", sys.executable)
    result = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{tmp_path}/bin:/usr/bin:/bin", "MARKER": "seen"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "lr=0.25 epochs=4 home-literal=$HOME seen"


def breaks_out() -> None:
    """Its source holds the old heredoc's delimiter on a line of its own."""
    text = """
EOM
touch escaped; echo escaped
"""
    print("ran", len(text.splitlines()))


HOSTILE_NAMES = ["my file.py", "a$(touch escaped).py", "q'uote\"s.py"]


def _run_command(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    write_shims(cwd / "bin", sys.executable)
    return subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{cwd}/bin:/usr/bin:/bin"},
        check=False,
    )


def test_no_content_of_the_function_escapes_into_the_shell(tmp_path: Path) -> None:
    """A line ``EOM`` ended the old heredoc; what followed ran as bash."""
    runtime = make_runtime(constants.DEFAULT_COMMAND, name="plain")
    result = _run_command(command_for_function(runtime, breaks_out), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ran 3"
    assert not (tmp_path / "escaped").exists()


@pytest.mark.parametrize("file_name", HOSTILE_NAMES, ids=["space", "substitution", "quotes"])
def test_file_names_cannot_escape_into_the_shell(tmp_path: Path, file_name: str) -> None:
    runtime = make_runtime(constants.DEFAULT_COMMAND, name="plain")
    command = command_for_code(runtime, "import sys; print(sys.argv[0])\n", file_name)
    result = _run_command(command, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == file_name
    assert not (tmp_path / "escaped").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        ["bin", file_name, RANK_ENTRYPOINT_FILE]
    )


def test_options_edit_one_typed_trainjob_and_kubeflow_style_calls_still_work(
    torch_runtime: types.Runtime,
) -> None:
    """Options received the whole manifest dict and an unused backend; now the SDK's edit the
    typed trainer_api.TrainJob, and a plain callable of Kubeflow SDK 0.5's interface still
    edits the manifest."""
    seen: list[object] = []

    class Record(TypedOption):
        def apply(self, job: trainer_api.TrainJob, trainer: Any) -> None:
            seen.append(job)
            assert job.spec.trainer is not None
            command = str(job.spec.trainer.command)
            job.metadata.labels = {**(job.metadata.labels or {}), "recorded": command}

    def kubeflow_style(job_spec: dict[str, Any], trainer: Any, backend: object) -> None:
        job_spec["metadata"]["annotations"] = {"from": "callable"}

    manifest = build_trainjob_manifest(
        "j",
        torch_runtime,
        CustomTrainerContainer(image="i"),
        options=[TrainerCommand(["run"]), Record(), kubeflow_style, Labels({"k": "v"})],
    )
    assert isinstance(seen[0], trainer_api.TrainJob)
    assert manifest["metadata"]["labels"] == {"recorded": "['run']", "k": "v"}
    assert manifest["metadata"]["annotations"] == {"from": "callable"}
    partial: dict[str, Any] = {}
    Name("x")(partial, None, None)  # Kubeflow SDK 0.5's call, on a partial manifest
    ActiveDeadlineSeconds(5)(partial, None, object())
    assert partial == {"metadata": {"name": "x"}, "spec": {"activeDeadlineSeconds": 5}}


@pytest.mark.parametrize(
    ("trainer", "runtime", "message"),
    [
        pytest.param(
            BuiltinTrainer(TRLConfig()),
            make_runtime(),
            "runtime 'torch-distributed' (framework 'torch') takes a CustomTrainer, not a "
            "BuiltinTrainer",
            id="builtin-on-a-custom-runtime",
        ),
        pytest.param(
            CustomTrainer(func=train_with_args),
            make_runtime(name="trl-cpu", framework="trl"),
            "runtime 'trl-cpu' (framework 'trl') takes a BuiltinTrainer, not a CustomTrainer",
            id="custom-on-a-builtin-runtime",
        ),
        pytest.param(
            BuiltinTrainer(TRLConfig()),
            make_runtime(constants.TORCH_TUNE_COMMAND, "torchtune-llama3.2-1b", "torchtune"),
            "runs the 'torchtune' engine, which does not take a TRLConfig; use a runtime "
            "labelled trainer.kubeflow.org/framework: trl",
            id="another-engines-config",
        ),
    ],
)
def test_a_trainer_the_runtime_does_not_take_is_refused_naming_its_trainer_type(
    trainer: Any, runtime: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        build_trainjob_manifest("job", runtime, trainer)


def test_a_trl_trainer_keeps_the_runtimes_command_and_sends_its_args_and_paths() -> None:
    runtime = make_runtime(name="trl-cpu", framework="trl")
    initializer = Initializer(
        model=HuggingFaceModelInitializer("/models/tiny"),
        dataset=HuggingFaceDatasetInitializer("hf://org/colors"),
    )
    trainer = BuiltinTrainer(TRLConfig(num_nodes=2, learning_rate=0.01))
    spec = build_trainjob_manifest("job", runtime, trainer, initializer)["spec"]
    assert spec["trainer"] == {"numNodes": 2, "args": ["--learning_rate=0.01"]}
    assert spec["initializer"]["model"]["storageUri"] == "file:///models/tiny"
