"""The TrainJob manifest that ``train()`` sends, built the same way for every backend (pure)."""

from __future__ import annotations

import ast
import base64
import inspect
import os
import random
import re
import shlex
import string
import textwrap
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, Final

from trainer_sdk import constants, types
from trainer_sdk.manifests import storage
from trainer_sdk.manifests.requirements import requirement_problems
from trainer_sdk.options import Option, apply_options
from trainer_sdk.training import rank_entrypoint

__all__ = [
    "RANK_ENTRYPOINT_FILE",
    "build_trainjob_manifest",
    "command_for_code",
    "command_for_function",
    "function_args",
    "generate_name",
    "resources_from_dict",
]

# Written beside the training code; every rank runs it around that code.
RANK_ENTRYPOINT_FILE = ".trainer_rank_entrypoint.py"
_RANK_ENTRYPOINT_SOURCE = inspect.getsource(rank_entrypoint)

AnyTrainer = types.CustomTrainer | types.CustomTrainerContainer | types.BuiltinTrainer


def generate_name(rng: random.Random | None = None) -> str:
    """A TrainJob name as upstream makes them: a letter and 11 hex digits."""
    chooser = rng or random.SystemRandom()
    letter = chooser.choice(string.ascii_lowercase)
    digits = uuid.UUID(int=chooser.getrandbits(128)).hex[: constants.JOB_NAME_UUID_LENGTH]
    return letter + digits


# The names resources_per_node takes, as errors list them.
RESOURCE_NAMES = (
    "cpu",
    "memory",
    "gpu",
    "storage",
    "ephemeral-storage",
    "hugepages-<size>",
    "mig-<profile>",
    "<domain>/<name> (an extended resource such as nvidia.com/gpu)",
)
_STANDARD = {"cpu", "memory", "gpu", "storage", "ephemeral-storage"}
_ALIASES = {"gpu": constants.GPU_LABEL, "storage": "ephemeral-storage"}
_QUALIFIED = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")


def _resource_name(key: object) -> str:
    """The canonical Kubernetes name for a resources_per_node key; ValueError names the valid
    ones (Kubernetes refuses an unprefixed name that is not a standard resource)."""
    lowered = key.lower() if isinstance(key, str) else ""
    if lowered in _STANDARD:
        return _ALIASES.get(lowered, lowered)
    if lowered.startswith("mig-") and len(lowered) > len("mig-"):
        return constants.GPU_MIG_PREFIX + lowered[len("mig-") :]
    if lowered.startswith("hugepages-") and len(lowered) > len("hugepages-"):
        return "hugepages-" + str(key)[len("hugepages-") :]  # the size keeps its case: 2Mi
    if isinstance(key, str) and _QUALIFIED.fullmatch(key):
        return key
    raise ValueError(
        f"resources_per_node[{key!r}]: unknown resource name; expected one of "
        f"{', '.join(RESOURCE_NAMES)}"
    )


def _quantity(key: str, name: str, value: object) -> str:
    """``value`` as a Kubernetes quantity (non-negative; whole for extended resources)."""
    from trainer_api import Quantity

    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(
            f"resources_per_node[{key!r}]: expected a number or a quantity such as '500m' or "
            f"'16Gi', got {value!r}"
        )
    text = str(value)
    try:
        quantity = Quantity.parse(text)
    except ValueError as error:
        raise ValueError(f"resources_per_node[{key!r}]: {error}") from None
    if quantity.amount < 0:
        raise ValueError(f"resources_per_node[{key!r}]: must be at least 0, got {value!r}")
    if "/" in name and quantity.amount.denominator != 1:
        raise ValueError(
            f"resources_per_node[{key!r}]: {name} is an extended resource and must be a whole "
            f"number, got {value!r}"
        )
    return text


def resources_from_dict(resources_per_node: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``{"gpu": 2, "CPU": 4}`` -> requests and limits with canonical resource names, each key
    and value checked as Kubernetes checks them (one error per problem, naming the key)."""
    quantities: dict[str, str] = {}
    for key, value in resources_per_node.items():
        name = _resource_name(key)
        quantities[name] = _quantity(key, name, value)
    mig = [name for name in quantities if name.startswith(constants.GPU_MIG_PREFIX)]
    if len(mig) > 1:
        raise ValueError(f"resources_per_node: only one MIG resource type is supported, got {mig}")
    if mig and constants.GPU_LABEL in quantities:
        raise ValueError(
            f"resources_per_node: {constants.GPU_LABEL} and {mig[0]} cannot be requested together"
        )
    return {"requests": dict(quantities), "limits": dict(quantities)}


def _install_script(packages: Sequence[str], index_urls: Sequence[str]) -> str:
    """Shell that installs the packages, unless the local backend has put them on the path;
    ValueError naming any entry that is not a PEP 508 requirement."""
    problems = requirement_problems(packages)
    if problems:
        raise ValueError(
            "\n".join(f"CustomTrainer.packages_to_install[{i}]: {p}" for i, p in problems)
        )
    quoted = " ".join(shlex.quote(package) for package in packages)
    options = [f"--index-url {shlex.quote(index_urls[0])}"] if index_urls else []
    options += [f"--extra-index-url {shlex.quote(url)}" for url in index_urls[1:]]
    return textwrap.dedent(
        f"""
        if [ -z "${{{constants.PACKAGES_READY_ENV}:-}}" ]; then
          PIP_DISABLE_PIP_VERSION_CHECK=1 python -m pip install --quiet --no-warn-script-location \\
            {" ".join(options)} --user -- {quoted} || exit 1
        fi
        """
    )


_CONVERSIONS: Final = ("float", "int", "str")
_ENV_NAME: Final = re.compile(r"[A-Z_][A-Z0-9_]*")


def _call_expression(
    func: Callable[..., Any],
    func_args: dict[str, Any] | None,
    env_args: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """``func(**{...})``: keyword arguments on every backend; they must be Python literals.
    ``env_args`` adds arguments read when the code runs: name -> (variable, float|int|str)."""
    if func_args is None and not env_args:
        return f"{func.__name__}()"
    if func_args is not None and (
        not isinstance(func_args, dict)
        or not all(isinstance(key, str) and key.isidentifier() for key in func_args)
    ):
        raise ValueError(
            f"func_args: expected a dict of keyword argument names to values, got {func_args!r}"
        )
    literal = repr(func_args or {})
    try:
        same = ast.literal_eval(literal) == (func_args or {})
    except (ValueError, SyntaxError):
        same = False
    if not same:
        raise ValueError(
            "func_args: values must be Python literals (str, int, float, list, dict, ...), "
            f"got {literal}"
        )
    if not env_args:
        return f"{func.__name__}(**{literal})"
    read = []
    for name, (variable, conversion) in env_args.items():
        if not name.isidentifier() or not _ENV_NAME.fullmatch(variable):
            raise ValueError(
                f"env_args: expected identifier -> ENV_NAME, got {name!r}: {variable!r}"
            )
        if conversion not in _CONVERSIONS:
            raise ValueError(
                f"env_args[{name!r}]: expected one of {_CONVERSIONS}, got {conversion!r}"
            )
        read.append(f"{name!r}: {conversion}(__import__('os').environ[{variable!r}])")
    return f"{func.__name__}(**{{**{literal}, {', '.join(read)}}})"


def function_args(command: Sequence[str]) -> dict[str, Any] | None:
    """The ``func_args`` a ``command_for_function`` command carries (None: not such a command,
    or called without arguments): read back from the source it writes, never executed."""
    for part in command:
        for token in _BASE64_TOKEN.findall(part):
            try:
                lines = base64.b64decode(token, validate=True).decode().rstrip("\n").splitlines()
            except (ValueError, UnicodeDecodeError):
                continue
            call = lines[-1] if lines else ""
            name, _, rest = call.partition("(**")
            if name.isidentifier() and rest.endswith(")"):
                try:
                    value = ast.literal_eval(rest[:-1])
                except (ValueError, SyntaxError):
                    continue
                return value if isinstance(value, dict) else None
    return None


def command_for_function(
    runtime: types.Runtime,
    func: Callable[..., Any],
    func_args: dict[str, Any] | None = None,
    pip_index_urls: Sequence[str] = (),
    packages_to_install: Sequence[str] | None = None,
    env_args: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """The trainer command: ``func``'s source written to a file, run by the runtime's entrypoint
    (``env_args``: keyword arguments it reads from the environment, see ``_call_expression``)."""
    if not callable(func):
        raise ValueError(f"CustomTrainer.func: expected a callable, got {type(func).__name__}")
    try:
        lines, first_line = inspect.getsourcelines(func)
        func_file = os.path.basename(inspect.getfile(func))
    except (OSError, TypeError) as error:
        raise ValueError(
            f"CustomTrainer.func: cannot read the source of {func!r}: {error}"
        ) from None
    if not func_file.endswith(".py"):
        func_file = f"{func.__name__}.py"
    # Blank lines first, so that the function sits at its own line numbers: a traceback's
    # "File "train.py", line 42" is line 42 of the user's train.py.
    source = "\n" * max(first_line - 1, 0) + textwrap.dedent("".join(lines))
    code = f"{source}\n{_call_expression(func, func_args, env_args)}\n"
    return command_for_code(runtime, code, func_file, pip_index_urls, packages_to_install)


_BASE64_TOKEN = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


def command_for_code(
    runtime: types.Runtime,
    code: str,
    file_name: str,
    pip_index_urls: Sequence[str] = (),
    packages_to_install: Sequence[str] | None = None,
) -> list[str]:
    """The runtime's entrypoint running ``rank_entrypoint`` on Python source written to
    ``file_name`` first; the source travels base64-encoded, so nothing in it can escape."""
    if runtime.trainer.command[:1] == ("mpirun",):
        file_name = os.path.join(constants.DEFAULT_MPI_USER_HOME, file_name)
    rank_file = os.path.join(os.path.dirname(file_name), RANK_ENTRYPOINT_FILE)
    install = _install_script(packages_to_install, pip_index_urls) if packages_to_install else ""
    command = []
    for part in runtime.trainer.command:
        if "{func_file}" in part:
            script = part.format(
                func_code=_base64(code),
                func_file=shlex.quote(file_name),
                rank_code=_base64(_RANK_ENTRYPOINT_SOURCE),
                rank_file=shlex.quote(rank_file),
            )
            command.append(install + script)
        else:
            command.append(part)
    return command


def _env_list(env: dict[str, str] | None) -> list[dict[str, str]]:
    return [{"name": key, "value": str(value)} for key, value in (env or {}).items()]


def _custom_trainer(
    runtime: types.Runtime, trainer: types.CustomTrainer | types.CustomTrainerContainer
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if trainer.num_nodes:
        spec["numNodes"] = trainer.num_nodes
    if trainer.resources_per_node:
        spec["resourcesPerNode"] = resources_from_dict(trainer.resources_per_node)
    if isinstance(trainer, types.CustomTrainer):
        spec["command"] = command_for_function(
            runtime,
            trainer.func,
            trainer.func_args,
            trainer.pip_index_urls,
            trainer.packages_to_install,
        )
    if trainer.image:
        spec["image"] = trainer.image
    if trainer.env:
        spec["env"] = _env_list(trainer.env)
    return spec


def _check_trainer_type(runtime: types.Runtime, trainer: AnyTrainer) -> None:
    """A trainer of the kind the runtime takes (its framework label decides: an engine's label
    takes a BuiltinTrainer, any other a CustomTrainer or a container)."""
    wanted = runtime.trainer.trainer_type
    builtin = isinstance(trainer, types.BuiltinTrainer)
    if builtin == (wanted is types.TrainerType.BUILTIN_TRAINER):
        return
    kinds = (
        "BuiltinTrainer"
        if wanted is types.TrainerType.BUILTIN_TRAINER
        else ("CustomTrainer or CustomTrainerContainer")
    )
    raise ValueError(
        f"trainer: runtime {runtime.name!r} (framework {runtime.trainer.framework!r}) takes a "
        f"{wanted.value}, not a {type(trainer).__name__}; give it a {kinds}, or pick a runtime "
        "that takes this trainer (get_runtime(name).trainer.trainer_type, `trainer runtimes`)"
    )


def _builtin_trainer(
    runtime: types.Runtime, trainer: types.BuiltinTrainer, initializer: types.Initializer | None
) -> dict[str, Any]:
    """The engine named by the runtime's framework label renders ``trainer.config``."""
    from trainer_sdk.training.engines import engine_for_config, engine_named

    engine = engine_named(runtime.trainer.framework)
    wanted = engine_for_config(trainer.config)
    if engine is None or engine is not wanted:
        raise ValueError(
            f"BuiltinTrainer.config: runtime {runtime.name!r} runs the "
            f"{runtime.trainer.framework!r} engine, which does not take a "
            f"{type(trainer.config).__name__}; use a runtime labelled "
            f"trainer.kubeflow.org/framework: {wanted.name}"
        )
    rendered = engine.trainer(trainer.config, initializer)
    spec: dict[str, Any] = {}
    if rendered.command is not None:
        spec["command"] = rendered.command
    if trainer.config.num_nodes:
        spec["numNodes"] = trainer.config.num_nodes
    if trainer.config.resources_per_node:
        spec["resourcesPerNode"] = resources_from_dict(trainer.config.resources_per_node)
    spec["args"] = rendered.args
    return spec


def _optional_env(initializer: types.BaseInitializer, required: set[str]) -> list[dict[str, str]]:
    env = []
    for item in fields(initializer):
        value = getattr(initializer, item.name)
        if item.name in required or value is None:
            continue
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        env.append({"name": item.name.upper(), "value": text})
    return env


def _storage_uri(initializer: types.BaseInitializer) -> str:
    hugging_face = (types.HuggingFaceDatasetInitializer, types.HuggingFaceModelInitializer)
    if isinstance(initializer, hugging_face):
        return storage.trainjob_uri(initializer.storage_uri)
    return initializer.storage_uri


def _initializer(initializer: types.Initializer) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if (dataset := initializer.dataset) is not None:
        if isinstance(dataset, types.DataCacheInitializer):
            env = [
                {"name": "CLUSTER_SIZE", "value": str(dataset.num_data_nodes + 1)},
                {"name": "METADATA_LOC", "value": dataset.metadata_loc},
                *_optional_env(dataset, {"storage_uri", "metadata_loc", "num_data_nodes"}),
            ]
        elif isinstance(dataset, (types.HuggingFaceDatasetInitializer, types.S3DatasetInitializer)):
            env = _optional_env(dataset, {"storage_uri"})
        else:
            raise ValueError(f"initializer.dataset: unsupported type {type(dataset).__name__}")
        spec["dataset"] = {"storageUri": _storage_uri(dataset), **({"env": env} if env else {})}
    if (model := initializer.model) is not None:
        if not isinstance(model, (types.HuggingFaceModelInitializer, types.S3ModelInitializer)):
            raise ValueError(f"initializer.model: unsupported type {type(model).__name__}")
        env = _optional_env(model, {"storage_uri"})
        spec["model"] = {"storageUri": _storage_uri(model), **({"env": env} if env else {})}
    return spec


def build_trainjob_manifest(
    name: str,
    runtime: types.Runtime,
    trainer: AnyTrainer | None = None,
    initializer: types.Initializer | None = None,
    options: Sequence[Option] = (),
    backend: object = None,
    namespace: str | None = None,
) -> dict[str, Any]:
    """The TrainJob custom resource, camelCase, exactly as it is sent to a cluster."""
    if isinstance(
        trainer, (types.BuiltinTrainer, types.CustomTrainer, types.CustomTrainerContainer)
    ):
        _check_trainer_type(runtime, trainer)
    if isinstance(trainer, types.BuiltinTrainer):
        trainer_spec = _builtin_trainer(runtime, trainer, initializer)
    elif isinstance(trainer, (types.CustomTrainer, types.CustomTrainerContainer)):
        trainer_spec = _custom_trainer(runtime, trainer)
    elif trainer is None:
        trainer_spec = {}
    else:
        raise ValueError(
            "trainer: expected CustomTrainer, CustomTrainerContainer or BuiltinTrainer, "
            f"got {type(trainer).__name__}"
        )
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    spec: dict[str, Any] = {
        "runtimeRef": {
            "name": runtime.name,
            "apiGroup": constants.GROUP,
            "kind": runtime.kind.value,
        },
    }
    if trainer_spec:
        spec["trainer"] = trainer_spec
    if initializer is not None:
        spec["initializer"] = _initializer(initializer)
    manifest: dict[str, Any] = {
        "apiVersion": constants.API_VERSION,
        "kind": constants.TRAINJOB_KIND,
        "metadata": metadata,
        "spec": spec,
    }
    return apply_options(manifest, options, trainer, backend)
