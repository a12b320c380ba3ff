"""The trainer CLI: exit codes equal job outcomes, clear errors for bad input."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console
from trainer_sdk import (
    CustomTrainerContainer,
    LocalBackendConfig,
    Name,
    TrainerClient,
    TrainerCommand,
    TrainerStatus,
    TrainJob,
    types,
)
from trainer_sdk.backends.local.jobdir import JobDir
from trainer_sdk.backends.memory import InMemoryBackend
from trainer_sdk.cli import app as cli_module
from trainer_sdk.cli import cli, status_line
from trainer_sdk.cli import output as cli_output
from trainer_sdk.manifests import targets
from trainer_sdk.private_files import read_json
from waiting import wait_until

from .conftest import make_runtime

DEADLINE_SECONDS = 120
# The CLI with Ctrl-C as a terminal delivers it: a test run started in the background (``&``,
# flake_hunt, CI) inherits SIGINT ignored, and Python then leaves it ignored.
AS_IN_A_TERMINAL = (
    "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from trainer_sdk.cli import main; main()"
)

FAILING_JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: yaml-job
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    command: ["bash", "-c", "echo from-yaml $GREETING; exit 4"]
"""

SCRIPT = """
import os
env = os.environ
print("rank", env["RANK"], "of", env["WORLD_SIZE"], "greeting", env.get("GREETING"))
"""


def invoke(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(tmp_path / "jobs"), *args], catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr


def invoke_on(client: TrainerClient, *args: str) -> tuple[int, str, str]:
    """The command run with ``client`` (an in-memory backend: no process starts)."""
    result = CliRunner().invoke(cli, args, obj={"client": client}, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ("run", "-f", "missing.yaml"), "-f: no such file 'missing.yaml'", id="missing-file"
        ),
        pytest.param(("run", "nope.py"), "TARGET: no such file 'nope.py'", id="missing-script"),
        pytest.param(
            ("run", "x.py", "--runtime", "nope"), "runtime 'nope' not found", id="unknown-runtime"
        ),
        pytest.param(
            ("run", "x.py", "--env", "NOEQUALS"), "--env: expected NAME=VALUE", id="bad-env"
        ),
        pytest.param(("run",), "give exactly one of TARGET", id="nothing-to-run"),
        pytest.param(
            ("run", "json:nope"), "module 'json' has no function 'nope'", id="no-function"
        ),
        pytest.param(("run", "no_such_module_x:f"), "cannot import module", id="no-module"),
        pytest.param(
            ("run", "train"),
            "expected FILE.py, FILE.py:function or module:function",
            id="bad-target",
        ),
        pytest.param(("run", "nope.py:train"), "TARGET: no such file 'nope.py'", id="no-file-func"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    code, _, err = invoke(tmp_path, *args)
    assert code == 2
    assert message in err


def test_malformed_yaml_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: TrainJob\nspec: [unclosed\n")
    code, _, err = invoke(tmp_path, "run", "-f", str(bad))
    assert code == 2 and "invalid YAML" in err


HEADER = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
VALID_SPEC = "spec: {runtimeRef: {name: torch-distributed}, trainer: {command: ['true']}}\n"


def _alias_bomb() -> str:
    refs = "[" + ", ".join(["*e"] * 12) + "]"
    return (
        HEADER
        + "metadata:\n  name: bomb\n  labels:\n"
        + f"    a: &e {{name: A, value: x}}\n    b: &e2 {refs}\n"
        + "    c: &e3 "
        + refs.replace("*e", "*e2")
        + "\n"
        + "    d: &e4 "
        + refs.replace("*e", "*e3")
        + "\n"
        + "    f: &e5 "
        + refs.replace("*e", "*e4")
        + "\n"
        + VALID_SPEC
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(_alias_bomb().encode(), "excessive aliasing", id="alias-bomb"),
        pytest.param(
            (
                HEADER + "metadata: {name: a}\n" + VALID_SPEC + "x: " + "[" * 1000 + "]" * 1000
            ).encode(),
            "nesting deeper than 100 levels",
            id="deep-nesting",
        ),
        pytest.param(
            (HEADER + "metadata: {name: \xe9t\xe9}\n").encode("latin-1"),
            "not UTF-8 text: byte 0xe9",
            id="not-utf8",
        ),
        pytest.param(
            (HEADER + "metadata: {name: 12345}\n" + VALID_SPEC).encode(),
            "TrainJob: metadata.name: Input should be a valid string (got 12345)",
            id="numeric-name",
        ),
        pytest.param(
            (HEADER + "metadata: [1]\n" + VALID_SPEC).encode(),
            "TrainJob: metadata: Input should be a valid dictionary",
            id="metadata-list",
        ),
        pytest.param(
            (HEADER + "metadata: {name: a}\nspec: 5\n").encode(), "TrainJob: spec:", id="spec-int"
        ),
        pytest.param(
            (HEADER + "metadata: {name: a}\nmetadata: {name: b}\n" + VALID_SPEC).encode(),
            "duplicate key 'metadata'",
            id="duplicate-key",
        ),
        pytest.param(
            (
                HEADER
                + "metadata: {name: a}\n"
                + VALID_SPEC.replace("command: ['true']", "numNodes: 1000000000000")
            ).encode(),
            "spec.trainer.numNodes: Input should be less than or equal to 2147483647",
            id="numNodes-over-int32",
        ),
        pytest.param(
            (HEADER + "metadata: {name: a, namespace: Bad_NS}\n" + VALID_SPEC).encode(),
            "metadata.namespace: a namespace must be a DNS-1123 label",
            id="bad-namespace",
        ),
        pytest.param(
            (
                HEADER
                + "metadata: {name: a}\n"
                + VALID_SPEC.replace("command: ['true']", "env: [{name: '1 bad=name', value: x}]")
            ).encode(),
            "spec.trainer.env[0].name: an environment variable name",
            id="bad-env-name",
        ),
    ],
)
def test_hostile_manifest_is_one_clear_error(tmp_path: Path, content: bytes, message: str) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_bytes(content)
    code, _, err = invoke(tmp_path, "run", "-f", str(manifest))
    assert code == 2, err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())


def test_nodes_option_over_int32_is_refused(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(HEADER + "metadata: {name: a}\n" + VALID_SPEC)
    code, _, err = invoke(tmp_path, "run", "-f", str(manifest), "--nodes", str(10**12))
    assert code == 2 and "numNodes: Input should be less than or equal to 2147483647" in err


def test_get_unknown_job_exits_1(tmp_path: Path) -> None:
    code, _, err = invoke(tmp_path, "get", "missing")
    assert code == 1 and "'missing' not found" in err


def test_runtimes_as_json(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path, "runtimes", "--output", "json")
    assert code == 0
    names = [runtime["name"] for runtime in json.loads(out)]
    assert "torch-distributed" in names


@pytest.mark.e2e
def test_run_manifest_exits_with_the_jobs_failure(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(FAILING_JOB)
    code, out, err = invoke(tmp_path, "run", "-f", str(manifest), "--env", "GREETING=hi")
    assert code == 1
    assert "from-yaml hi" in out
    assert "TrainJob 'yaml-job' failed (step node-0)" in err
    code, out, _ = invoke(tmp_path, "list", "-o", "json")
    assert [(job["name"], job["status"]) for job in json.loads(out)] == [("yaml-job", "Failed")]


@pytest.mark.e2e
def test_run_python_file_on_two_nodes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    code, out, err = invoke(
        tmp_path,
        "run",
        str(script),
        "--nodes",
        "2",
        "--procs-per-node",
        "1",
        "--env",
        "GREETING=hello",
        "--name",
        "file-job",
    )
    assert code == 0, err
    assert "[node-0] rank 0 of 2 greeting hello" in out
    assert "[node-1] rank 1 of 2 greeting hello" in out
    code, out, _ = invoke(tmp_path, "logs", "file-job", "--step", "node-1")
    assert code == 0 and "rank 1 of 2 greeting hello" in out
    code, _, _ = invoke(tmp_path, "wait", "file-job")
    assert code == 0
    code, _, _ = invoke(tmp_path, "delete", "file-job")
    assert code == 0
    assert invoke(tmp_path, "get", "file-job")[0] == 1


def test_version_is_the_distributions(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path, "--version")
    assert code == 0
    assert out.strip() == f"trainer {importlib.metadata.version('trainer-sdk')}"


@pytest.mark.parametrize(
    ("source", "defined"),
    [
        pytest.param("def train():\n    pass\n", ["train"], id="one-function"),
        pytest.param(
            '"""Doc."""\nimport os\nLR = 0.1\ndef a():\n    pass\nasync def b():\n    pass\n',
            ["a", "b"],
            id="imports-constants-functions",
        ),
        pytest.param("def train():\n    pass\ntrain()\n", None, id="calls-it"),
        pytest.param(
            "def main():\n    pass\nif __name__ == '__main__':\n    main()\n", None, id="main-guard"
        ),
        pytest.param("def f():\n    return 1\nx = f()\n", None, id="assigns-a-call"),
        pytest.param("print('hi')\n", None, id="no-functions"),
    ],
)
def test_a_script_that_only_defines_functions_runs_nothing(
    source: str, defined: list[str] | None
) -> None:
    assert targets.runs_nothing(source) == defined


def test_running_a_file_that_runs_nothing_is_refused_naming_its_functions(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import os\n\ndef prepare():\n    pass\n\ndef train():\n    pass\n")
    code, _, err = invoke(tmp_path, "run", str(script))
    assert code == 2
    assert "defines prepare, train but runs nothing" in err
    assert f"trainer run {script}:train" in err
    assert not (tmp_path / "jobs").exists() or not any((tmp_path / "jobs").iterdir())


def test_a_missing_function_in_a_file_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("def train():\n    pass\n")
    code, _, err = invoke(tmp_path, "run", f"{script}:nope")
    assert code == 2 and f"file '{script}' has no function 'nope'" in err


def _job(name: str, runtime: str, status: str = "Running") -> TrainJob:
    return TrainJob(
        name=name,
        runtime=make_runtime(name=runtime),
        steps=[
            types.Step(name="node-0", status="Running", pod_name=f"{name}-node-0-0-abcde"),
            types.Step(name="node-1", status="Pending", pod_name=f"{name}-node-0-1-fghij"),
        ],
        num_nodes=2,
        creation_timestamp=datetime(2026, 12, 1, 11, 35, 18, tzinfo=timezone.utc),
        status=status,
        trainer_status=TrainerStatus(progress_percentage=40, metrics={"loss": "0.25"}),
    )


LONG_NAME = "a-trainjob-with-a-rather-long-name-for-a-table"
LONG_RUNTIME = "torch-distributed-with-cache-and-more"


def column_text(rendered: str, column: int) -> str:
    """A table column's cells joined across wrapped lines (body rows only)."""
    rows = [line.split("│")[1:-1] for line in rendered.splitlines() if line.startswith("│")]
    return "".join(row[column].strip() for row in rows)


@pytest.mark.parametrize(
    ("render", "names"),
    [
        pytest.param(
            lambda: cli_module._jobs_table([_job(LONG_NAME, LONG_RUNTIME)], ["Running"]),
            {0: LONG_NAME, 2: LONG_RUNTIME},
            id="list",
        ),
        pytest.param(
            lambda: cli_module._job_table(_job(LONG_NAME, LONG_RUNTIME)),
            {0: "node-0node-1", 4: f"{LONG_NAME}-node-0-0-abcde{LONG_NAME}-node-0-1-fghij"},
            id="get",
        ),
    ],
)
def test_tables_fit_80_columns_without_cutting_names(
    monkeypatch: pytest.MonkeyPatch, render: object, names: dict[int, str]
) -> None:
    output = io.StringIO()
    console = Console(file=output, width=80, color_system=None, force_terminal=True)
    monkeypatch.setattr(cli_output, "stdout", lambda: console)
    console.print(render())  # type: ignore[operator]
    rendered = output.getvalue()
    assert max(len(line) for line in rendered.splitlines()) <= 80, rendered
    assert "…" not in rendered
    for column, name in names.items():
        assert column_text(rendered, column) == name, rendered


def test_a_pipe_gets_plain_columns_newest_first_with_age() -> None:
    client = TrainerClient(backend=InMemoryBackend())
    for name in ("older", "newer"):
        client.train(
            trainer=CustomTrainerContainer(image="i"),
            options=[Name(name), TrainerCommand(["true"])],
        )
    code, out, _ = invoke_on(client, "list")
    header, *rows = out.splitlines()
    assert code == 0 and header.split()[:2] == ["NAME", "STATUS"] and header.split()[-1] == "AGE"
    assert "│" not in out and "┃" not in out and "━" not in out
    assert [row.split()[0] for row in rows] == ["newer", "older"]
    assert re.fullmatch(r"\d+s", rows[0].split()[-1])
    code, out, _ = invoke_on(client, "list", "-o", "name")
    assert (code, out) == (0, "trainjob/newer\ntrainjob/older\n")


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_job_output_names_the_runtime_without_its_command_template(output: str) -> None:
    client = TrainerClient(backend=InMemoryBackend())
    client.train(
        trainer=CustomTrainerContainer(image="i"), options=[Name("one"), TrainerCommand(["true"])]
    )
    for args in (("get", "one"), ("list",)):
        code, out, _ = invoke_on(client, *args, "-o", output)
        assert code == 0 and "{func_code}" not in out and "{func_file}" not in out
        assert "torch-distributed" in out


def test_shell_completion_completes_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_TRAINER_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", "trainer de")
    monkeypatch.setenv("COMP_CWORD", "1")
    result = CliRunner().invoke(cli, [], prog_name="trainer")
    assert result.exit_code == 0 and "plain,delete" in result.output.splitlines()


def test_an_empty_list_says_so(tmp_path: Path) -> None:
    code, out, err = invoke(tmp_path, "list")
    assert (code, out, err) == (0, "", "No TrainJobs found\n")


def test_delete_takes_many_names_or_all() -> None:
    client = TrainerClient(backend=InMemoryBackend())
    for name in ("a", "b", "c", "d"):
        client.train(
            trainer=CustomTrainerContainer(image="i"),
            options=[Name(name), TrainerCommand(["true"])],
        )
    code, _, err = invoke_on(client, "delete", "a", "b", "nope")
    assert code == 1 and "TrainJob a deleted" in err and "TrainJob b deleted" in err
    assert "nope" in err
    assert sorted(job.name for job in client.list_jobs()) == ["c", "d"]
    assert invoke_on(client, "delete")[0] == 2
    assert invoke_on(client, "delete", "c", "--all")[0] == 2
    code, _, err = invoke_on(client, "delete", "--all")
    assert code == 0 and client.list_jobs() == []
    assert invoke_on(client, "delete", "--all")[2] == "No TrainJobs found\n"


def test_runtimes_table_keeps_every_name_whole(tmp_path: Path) -> None:
    code, out, _ = invoke(tmp_path, "runtimes")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out and "torch-distributed-with-cache" in out


def test_status_line_shows_elapsed_status_progress_and_steps() -> None:
    assert status_line(_job("job-1", "torch-distributed"), 12.4) == (
        "[   12s] job-1 Running 40% loss=0.25 | node-0 Running, node-1 Pending"
    )


@pytest.fixture
def sleeping_job(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A local job that sleeps; ended when the test ends."""
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs", stop_on_exit=True))
    client.train(
        trainer=CustomTrainerContainer(image="i"),
        options=[Name("sleeper"), TrainerCommand(["sleep", "120"])],
    )
    yield client
    client.backend.close()  # type: ignore[attr-defined]


@pytest.mark.e2e
def test_wait_returns_after_its_timeout_with_status_lines(
    tmp_path: Path, sleeping_job: TrainerClient
) -> None:
    started = time.monotonic()
    code, _, err = invoke(tmp_path, "wait", "sleeper", "--timeout", "3")
    elapsed = time.monotonic() - started
    assert code == 124, err
    assert elapsed >= 3, f"wait --timeout 3 returned after {elapsed:.1f}s"
    lines = [line for line in err.splitlines() if line.startswith("[")]
    assert lines and all(" sleeper " in line for line in lines), err
    assert "still" in err.splitlines()[-1]


@pytest.mark.e2e
def test_run_a_function_of_a_file(tmp_path: Path) -> None:
    script = tmp_path / "funcs.py"
    script.write_text(
        "def train():\n    import os\n    print('train on rank', os.environ['RANK'])\n\n"
        "def other():\n    print('never')\n"
    )
    code, out, err = invoke(tmp_path, "run", f"{script}:train", "--name", "func-job")
    assert code == 0, err
    assert "train on rank 0" in out and "never" not in out


@pytest.mark.e2e
def test_ctrl_c_on_run_stops_the_job_and_exits_130_with_one_line(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(SLEEPING_JOB)
    root = tmp_path / "jobs"
    command = [sys.executable, "-c", AS_IN_A_TERMINAL]
    process = subprocess.Popen(
        [*command, "--backend", "local", "--root", str(root), "run", "-f", str(manifest)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    state = JobDir(root, "interrupted").state

    def started() -> bool:
        assert process.poll() is None, process.communicate()
        return state.is_file() and all(pod.get("pid") for pod in read_json(state)["pods"])

    wait_until(started, "the job's pods to start", DEADLINE_SECONDS)
    pids = [pod["pid"] for pod in read_json(state)["pods"]]
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=DEADLINE_SECONDS)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "Aborted" not in err
    assert err.splitlines()[-1].startswith("TrainJob interrupted stopped (interrupted)")
    assert len(err.splitlines()) == 2, err  # "created", then the one line
    client = TrainerClient(LocalBackendConfig(root=root))
    job = client.get_job("interrupted")
    assert job.status == "Stopped"  # not Failed: nothing went wrong (issue 24)
    assert [step.status for step in job.steps] == ["Failed"]
    stopped = [event for event in client.get_job_events("interrupted") if event.reason == "Stopped"]
    assert [event.involved_object_kind for event in stopped] == ["TrainJob"]
    code, out, _ = invoke(tmp_path, "get", "interrupted")
    assert code == 0 and "interrupted: Stopped" in out
    code, out, _ = invoke(tmp_path, "list")
    assert out.splitlines()[1].split()[:2] == ["interrupted", "Stopped"]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)


SLEEPING_JOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: interrupted
spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 1
    command: ["bash", "-c", "echo started; sleep 120"]
"""


@pytest.mark.e2e
def test_trainer_stop_keeps_the_job_stopped_with_its_logs(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(SLEEPING_JOB.replace("name: interrupted", "name: stopped"))
    assert invoke(tmp_path, "run", "-f", str(manifest), "--detach")[0] == 0
    client = TrainerClient(LocalBackendConfig(root=tmp_path / "jobs"))
    client.wait_for_job_status("stopped", {"Running"}, DEADLINE_SECONDS, 1)
    # Running means the pod's process started, not that its script printed: wait for the line.
    deadline = time.monotonic() + DEADLINE_SECONDS
    while "started" not in "".join(client.get_job_logs("stopped")):
        assert time.monotonic() < deadline, "the job never printed its first line"
        time.sleep(0.05)  # polling with a deadline
    code, _, err = invoke(tmp_path, "stop", "stopped", "missing")
    assert code == 1 and "TrainJob stopped stopped" in err and "'missing' not found" in err
    code, out, _ = invoke(tmp_path, "get", "stopped", "-o", "json")
    assert code == 0 and json.loads(out)["status"] == "Stopped"
    assert "Stopped" in [event.reason for event in client.get_job_events("stopped")]
    assert "started" in invoke(tmp_path, "logs", "stopped")[1]


@pytest.mark.e2e
@pytest.mark.parametrize("watch", [["wait", "watched"], ["logs", "watched", "-f"]], ids=str)
def test_ctrl_c_on_a_watching_command_leaves_the_job_running(
    tmp_path: Path, watch: list[str]
) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(SLEEPING_JOB.replace("name: interrupted", "name: watched"))
    assert invoke(tmp_path, "run", "-f", str(manifest), "--detach")[0] == 0
    root = tmp_path / "jobs"
    command = [sys.executable, "-c", AS_IN_A_TERMINAL]
    process = subprocess.Popen(
        [*command, "--backend", "local", "--root", str(root), *watch],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The first status line (wait) or log line (logs -f): the command is watching.
        stream = process.stderr if watch[0] == "wait" else process.stdout
        assert stream is not None and stream.readline(), process.communicate()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=DEADLINE_SECONDS)
        assert process.returncode == 130, err
        assert "Traceback" not in err and "Aborted" not in err
        assert err.splitlines()[-1] == "stopped watching TrainJob watched (interrupted); it runs on"
        client = TrainerClient(LocalBackendConfig(root=root))
        job = client.wait_for_job_status("watched", {"Running"}, DEADLINE_SECONDS, 1)
        assert job.status == "Running"  # not stopped: it fails the wait if it ever fails
    finally:
        process.kill()
        assert invoke(tmp_path, "delete", "watched")[0] == 0


@pytest.mark.e2e
def test_run_gives_up_after_its_timeout_while_the_job_still_runs(tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(FAILING_JOB.replace("exit 4", "sleep 120"))
    code, out, err = invoke(tmp_path, "run", "-f", str(manifest), "--timeout", "2")
    try:
        assert code == 124
        assert "from-yaml" in out and "timeout waiting for TrainJob 'yaml-job'" in err
    finally:
        assert invoke(tmp_path, "delete", "yaml-job")[0] == 0


METRICS_SCRIPT = """
import os
from trainer_sdk import log_metrics
for step in range(5):
    log_metrics({"loss": 1.0 / (step + 1), "lr": 0.1}, step=step, all_ranks=True)
print("rank", os.environ["RANK"], "logged")
"""


@pytest.mark.e2e
def test_get_metrics_prints_the_latest_values_and_json_the_history(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(METRICS_SCRIPT)
    code, _, err = invoke(tmp_path, "run", str(script), "--nodes", "2", "--name", "metrics-job")
    assert code == 0, err
    code, out, _ = invoke(tmp_path, "get", "metrics-job", "--metrics")
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.startswith("l")]
    assert rows == [
        ["loss", "0.2", "4"],
        ["lr", "0.1", "4"],
    ]
    code, out, _ = invoke(tmp_path, "get", "metrics-job", "--metrics", "--json")
    history = json.loads(out)
    assert [(point["step"], point["rank"]) for point in history] == [
        (step, rank) for step in range(5) for rank in (0, 1)
    ]
    assert history[-1]["values"] == {"loss": 0.2, "lr": 0.1}


def test_ui_on_a_non_loopback_address_prints_a_url_with_a_token(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from trainer_sdk.cli import main; main()", "--backend"]
    command += ["local"]
    command += ["--root", str(tmp_path), "ui", "--host", "0.0.0.0", "--port", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # the first thing it prints; it then serves
        match = re.search(r"open (http://0\.0\.0\.0:(\d+)/\?token=([\w-]+))", line)
        assert match, line
        port, token = match.group(2), match.group(3)
        base = f"http://127.0.0.1:{port}/api/jobs"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base, timeout=30)
        assert refused.value.code == 401
        request = urllib.request.Request(base, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.loads(answer.read()) == []
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_json_output_is_strict_json_with_non_finite_numbers_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A diverged trial's objective is NaN: -o json printed the bare token NaN, which strict
    # parsers (a browser's JSON.parse, jq) refuse.
    value = {"objective": float("nan"), "bounds": [float("inf"), -float("inf"), 1.5]}
    cli_output.emit(value, "json", render=lambda: pytest.fail("no table for -o json"))

    def refuse(token: str) -> object:
        raise ValueError(f"not strict JSON: {token}")

    printed = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert printed == {"objective": "nan", "bounds": ["inf", "-inf", 1.5]}
