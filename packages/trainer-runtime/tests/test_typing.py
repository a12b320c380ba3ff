"""Plugins are typed: a misspelled TrainJob field in a plugin fails ``mypy --strict``.

The maintainer's experiment of issue 12, kept as a test: the Torch plugin reads
``spec.trainer.numProcPerNode`` as ``trainer.num_proc_per_node``; renamed to
``num_procs_per_node``, mypy must refuse it (with dict look-ups it passed, and the TrainJob's
setting was silently ignored). mypy checks the real module with the renamed text shadowing it.

The same mypy run checks that every registered plugin matches the signatures of the extension
points it implements (the framework finds them with ``isinstance``, which looks at method names
only), that a plugin still taking the TrainJob as a dict would be refused, and that a misspelled
key of a pod-template view (``views.ContainerDoc``) is refused too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trainer_runtime.plugins.torch
from trainer_runtime import framework
from trainer_runtime.registry import PLUGINS

mypy_api = pytest.importorskip("mypy.api")

ACCESS = "trainer.num_proc_per_node"
TYPO = "trainer.num_procs_per_node"
POINTS = (
    framework.Validates,
    framework.EnforcesMLPolicy,
    framework.EnforcesPodGroupPolicy,
    framework.EnforcesPodSpec,
    framework.PreBuilds,
    framework.Builds,
    framework.DerivesStatus,
)
DICT_PLUGIN = """
class DictPlugin:
    name = "Dict"

    def validate(self, info: RuntimeInfo, job: Mapping[str, Any]) -> list[FieldError]:
        return []


refused: framework.Validates = DictPlugin()  # refused: the TrainJob is a model


def gpus(container: ContainerDoc) -> int:
    # .get of a key a Container does not have gives an object, refused where resources go
    return gpu_count(container.get("resouces"))


def image(container: ContainerDoc) -> object:
    return container["imgae"]  # refused: not a key of a Container
"""


def _conformance_snippet() -> str:
    """Assign each plugin to each extension point it implements (by isinstance)."""
    lines = [
        "from collections.abc import Mapping",
        "from typing import Any",
        "from trainer_api import FieldError",
        "from trainer_runtime import framework",
        "from trainer_runtime.info import RuntimeInfo",
        "from trainer_runtime.resources import gpu_count",
        "from trainer_runtime.views import ContainerDoc",
    ]
    lines += sorted({f"from {type(p).__module__} import {type(p).__name__}" for p in PLUGINS})
    lines += [
        f"_{index}_{point.__name__}: framework.{point.__name__} = {type(plugin).__name__}()"
        for index, plugin in enumerate(PLUGINS)
        for point in POINTS
        if isinstance(plugin, point)
    ]
    return "\n".join(lines) + "\n" + DICT_PLUGIN


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The error lines of one ``mypy --strict`` run over the misspelled Torch plugin and the
    conformance snippet."""
    tmp = tmp_path_factory.mktemp("typing")
    source = Path(trainer_runtime.plugins.torch.__file__)
    text = source.read_text()
    assert ACCESS in text, f"{source} no longer reads {ACCESS}: pick another field to misspell"
    shadow = tmp / "torch.py"
    shadow.write_text(text.replace(ACCESS, TYPO))
    snippet = tmp / "plugin_conformance.py"
    snippet.write_text(_conformance_snippet())
    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp / "cache"),
            "--shadow-file",
            str(source),
            str(shadow),
            str(source),
            str(snippet),
        ]
    )
    assert status in (0, 1), stdout + stderr
    return [line for line in stdout.splitlines() if ": error:" in line]


def test_misspelled_trainjob_field_in_torch_plugin_fails_type_checking(
    mypy_errors: list[str],
) -> None:
    in_torch = [line for line in mypy_errors if "plugins/torch.py" in line]
    assert len(in_torch) == 1, mypy_errors
    assert '"Trainer" has no attribute "num_procs_per_node"' in in_torch[0]


def test_every_plugin_matches_its_extension_points(mypy_errors: list[str]) -> None:
    in_snippet = [line for line in mypy_errors if "plugin_conformance.py" in line]
    assert len(in_snippet) == 3, mypy_errors
    assert "DictPlugin" in in_snippet[0] and "Validates" in in_snippet[0], in_snippet
    assert '"gpu_count" has incompatible type "object"' in in_snippet[1], in_snippet
    assert '"ContainerDoc" has no key "imgae"' in in_snippet[2], in_snippet


def test_conformance_snippet_covers_every_plugin() -> None:
    snippet = _conformance_snippet()
    for plugin in PLUGINS:
        assert f"= {type(plugin).__name__}()" in snippet, type(plugin).__name__
