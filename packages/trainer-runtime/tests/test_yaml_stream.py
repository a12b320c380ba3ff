"""dump_stream: one document per manifest, literal blocks for multi-line strings."""

from __future__ import annotations

import yaml
from trainer_runtime.yaml_stream import dump_stream


def test_stream_round_trips_and_uses_literal_blocks() -> None:
    manifests = [
        {"kind": "ConfigMap", "data": {"hostfile": "a slots=1\nb slots=1\n"}},
        {"kind": "JobSet", "spec": {}},
    ]
    text = dump_stream(manifests)
    assert "hostfile: |\n    a slots=1\n    b slots=1\n" in text
    assert text.count("---\n") == 2
    assert list(yaml.safe_load_all(text)) == manifests
