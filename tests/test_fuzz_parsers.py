"""Hypothesis fuzzing of the parsers that take user or network input (outside the data cache and
the UI, which have their own): each raises only its documented error type, and every example
finishes within a deadline, so a hang fails the test instead of stalling it.

- TrainJob YAML/JSON: ``trainer_api.parse`` / ``parse_all`` -> ``ValidationError``; ``validate``
  and ``apply_defaults`` of what parses -> no exception (``validate`` returns the problems);
- quantities: ``Quantity.parse`` -> ``ValueError``;
- progress bodies: the progress endpoint's decoding -> ``ValueError``, its trainerStatus checks
  and its Authorization reading -> no exception;
- hostfiles: ``mpi_runtime.parse_hostfile`` -> ``InvalidArgumentError``;
- kubeconfigs: ``trainer_api.kubeconfig.find_connection`` -> ``KubeconfigError``;
- CLI arguments: ``trainer`` (read-only commands, local backend) -> an exit code, never a
  traceback.
"""

from __future__ import annotations

import contextlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import trainer_api
from aiohttp import web
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mpi_runtime import hostfiles
from mpi_runtime.errors import InvalidArgumentError
from trainer_api.kubeconfig import KubeconfigError, find_connection
from trainer_controller.operator import progress
from trainer_sdk.cli import cli

FUZZ = settings(
    max_examples=40,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=20), children, max_size=5)
    ),
    max_leaves=25,
)
TRAINER_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "numNodes": JSON,
        "image": JSON,
        "command": JSON,
        "args": JSON,
        "env": st.lists(
            st.fixed_dictionaries({}, optional={"name": JSON, "value": JSON, "valueFrom": JSON}),
            max_size=3,
        )
        | JSON,
        "resourcesPerNode": st.fixed_dictionaries(
            {}, optional={"limits": st.dictionaries(st.text(max_size=12), JSON, max_size=3)}
        )
        | JSON,
        "numProcPerNode": JSON,
    },
)
TRAINJOBS = st.fixed_dictionaries(
    {
        "apiVersion": st.just("trainer.kubeflow.org/v1alpha1") | JSON,
        "kind": st.just("TrainJob") | st.sampled_from(["TrainingRuntime", "JobSet"]) | JSON,
        "metadata": st.fixed_dictionaries(
            {}, optional={"name": st.just("job") | JSON, "labels": JSON, "namespace": JSON}
        )
        | JSON,
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "runtimeRef": st.fixed_dictionaries(
                    {}, optional={"name": st.just("torch-distributed") | JSON, "kind": JSON}
                )
                | JSON,
                "trainer": TRAINER_FIELDS | JSON,
                "initializer": JSON,
                "runtimePatches": JSON,
                "suspend": JSON,
                "managedBy": JSON,
                "labels": JSON,
            },
        )
        | JSON,
    },
    optional={"status": JSON},
)


def _parse_and_check(document: str | bytes | dict[str, Any]) -> None:
    try:
        parsed = trainer_api.parse(document)
    except trainer_api.ValidationError as error:
        assert error.errors, "a ValidationError lists its problems"
        return
    assert isinstance(trainer_api.validate(parsed), list)
    trainer_api.apply_defaults(parsed)


@FUZZ
@given(TRAINJOBS)
def test_trainjob_documents_raise_only_validation_errors(document: dict[str, Any]) -> None:
    _parse_and_check(document)
    _parse_and_check(json.dumps(document, allow_nan=True))


@FUZZ
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_yaml_text_raises_only_validation_errors(text: str | bytes) -> None:
    _parse_and_check(text)
    with contextlib.suppress(trainer_api.ValidationError):
        trainer_api.parse_all(text)


YAML_PIECES = st.sampled_from(
    [
        "a: &x [1, 2]\n",
        "b: *x\n",
        "- ",
        "  ",
        "{",
        "}",
        "[",
        "]",
        ": ",
        "? ",
        "!!python/name:x ",
        "&a ",
        "*a ",
        "\n",
        "kind: TrainJob\n",
        "---\n",
        "'",
        '"',
        "\t",
        "\\u0000",
        "<<: *x\n",
    ]
)


@FUZZ
@given(st.lists(YAML_PIECES, max_size=40).map("".join))
def test_yaml_built_from_its_syntax_raises_only_validation_errors(text: str) -> None:
    _parse_and_check(text)


QUANTITY_TEXT = st.text(max_size=30) | st.from_regex(
    r"[+-]?[0-9]{0,30}(\.[0-9]{0,30})?([eE][+-]?[0-9]{0,12})?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|n|u)?",
    fullmatch=True,
)


@FUZZ
@given(QUANTITY_TEXT | st.integers() | st.booleans())
def test_quantities_raise_only_value_errors(text: str | int) -> None:
    try:
        quantity = trainer_api.Quantity.parse(text)
    except ValueError:
        return
    assert trainer_api.Quantity.parse(str(quantity)) == quantity


TRAINER_STATUS = (
    st.fixed_dictionaries(
        {},
        optional={
            "progressPercentage": JSON | st.integers(min_value=-5, max_value=105),
            "estimatedRemainingSeconds": JSON,
            "lastUpdatedTime": st.just("2026-01-01T00:00:00Z") | JSON,
            "metrics": st.lists(
                st.fixed_dictionaries({}, optional={"name": JSON, "value": JSON}), max_size=4
            )
            | JSON,
        },
    )
    | JSON
)


@FUZZ
@given(
    st.binary(max_size=400)
    | TRAINER_STATUS.map(lambda s: json.dumps({"trainerStatus": s}).encode())
)
def test_progress_bodies_raise_only_value_errors_and_checks_never_raise(body: bytes) -> None:
    try:
        payload = progress._decoded(body)
    except ValueError:
        return
    if isinstance(payload, dict):
        job = {"metadata": {"name": "job"}, "spec": {"runtimeRef": {"name": "torch-distributed"}}}
        errors = progress.trainer_status_errors(job, payload.get("trainerStatus"))
        assert all(isinstance(error, trainer_api.FieldError) for error in errors)


@FUZZ
@given(st.text(max_size=80) | st.text(max_size=60).map(lambda token: f"Bearer {token}"))
def test_authorization_headers_are_read_without_raising(header: str) -> None:
    token = progress._bearer_token(header)
    assert isinstance(token, (str, web.Response))
    if isinstance(token, web.Response):
        assert token.status in (401, 403)
    else:
        token.encode("ascii")


HOSTFILE_LINES = st.lists(
    st.text(max_size=30)
    | st.builds(
        "{} slots={}".format, st.text(max_size=12), st.integers(-3, 2**40) | st.text(max_size=4)
    )
    | st.builds("{}:{}".format, st.text(max_size=12), st.text(max_size=6)),
    max_size=8,
).map("\n".join)


@FUZZ
@given(HOSTFILE_LINES)
def test_hostfiles_raise_only_invalid_argument_errors(text: str) -> None:
    try:
        entries = hostfiles.parse_hostfile(text)
    except InvalidArgumentError:
        return
    assert all(entry.slots >= 1 for entry in entries)
    assert len(hostfiles.rank_hosts(entries)) == sum(entry.slots for entry in entries)


@FUZZ
@given(TRAINJOBS | JSON | st.text(max_size=200))
def test_kubeconfigs_raise_only_kubeconfig_errors(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "config"
    text = document if isinstance(document, str) else json.dumps(document)
    path.write_text(text)
    with contextlib.suppress(KubeconfigError):
        find_connection(path, environ={}, home=tmp_path)


NAMES = st.text(max_size=20) | st.sampled_from(["job", "-x", "--help", "", "a" * 300, "é"])
COMMANDS = st.one_of(
    st.tuples(st.just("list"), st.sampled_from([[], ["-o", "json"], ["-o", "bogus"]])),
    st.tuples(st.just("get"), st.lists(NAMES, max_size=3)),
    st.tuples(st.just("logs"), st.lists(NAMES | st.sampled_from(["--step", "-f"]), max_size=3)),
    st.tuples(st.just("wait"), st.lists(NAMES | st.sampled_from(["--timeout", "1"]), max_size=3)),
    st.tuples(st.just("delete"), st.lists(NAMES, max_size=2)),
    st.tuples(st.just("runtimes"), st.sampled_from([[], ["-o", "yaml"], ["--bogus"]])),
    st.tuples(
        st.just("packages"),
        st.lists(NAMES | st.sampled_from(["list", "prune", "--older-than"]), max_size=3),
    ),
    st.tuples(NAMES, st.lists(NAMES, max_size=2)),
)


@settings(FUZZ, max_examples=15)
@given(COMMANDS)
def test_cli_arguments_end_in_an_exit_code(tmp_path: Path, command: tuple[str, list[str]]) -> None:
    name, arguments = command
    result = CliRunner().invoke(
        cli, ["--backend", "local", "--root", str(tmp_path / "jobs"), name, *arguments]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output,
        result.exc_info,
    )
    assert "Traceback" not in result.output
