"""The typed views: every key is a wire name of the trainer_api model it stands for."""

from __future__ import annotations

from typing import Any

import pytest
import trainer_api
from trainer_runtime import views

VIEWS = [
    pytest.param(views.EnvVarDoc, trainer_api.EnvVar, id="EnvVar"),
    pytest.param(views.ContainerPortDoc, trainer_api.ContainerPort, id="ContainerPort"),
    pytest.param(views.ResourcesDoc, trainer_api.ResourceRequirements, id="ResourceRequirements"),
    pytest.param(views.VolumeMountDoc, trainer_api.VolumeMount, id="VolumeMount"),
    pytest.param(views.ContainerDoc, trainer_api.Container, id="Container"),
    pytest.param(views.VolumeDoc, trainer_api.Volume, id="Volume"),
    pytest.param(views.PodSpecDoc, trainer_api.PodSpec, id="PodSpec"),
]


@pytest.mark.parametrize(("view", "model"), VIEWS)
def test_view_keys_are_wire_names_of_the_model(view: Any, model: Any) -> None:
    wire_names = {field.alias or name for name, field in model.model_fields.items()}
    assert set(view.__annotations__) - wire_names == set()


def test_env_docs_keeps_known_keys_and_copies() -> None:
    var = {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    (doc,) = views.env_docs([var])
    assert doc == var and doc is not var


def test_env_docs_refuses_a_key_an_env_var_does_not_have() -> None:
    with pytest.raises(TypeError, match=r"env var 'A': unknown keys \['valeu'\]"):
        views.env_docs([{"name": "A", "valeu": "1"}])
