"""The initializer of a path on this machine: files linked or copied into the volume."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from trainer_sdk.initializers.__main__ import main
from trainer_sdk.initializers.local import copy_local


def test_a_file_goes_under_its_own_name(tmp_path: Path) -> None:
    source = tmp_path / "colors.jsonl"
    source.write_text('{"text": "blue"}\n')
    (written,) = copy_local(source.as_uri(), tmp_path / "volume")
    assert written == tmp_path / "volume" / "colors.jsonl"
    assert written.read_text() == source.read_text()
    assert os.stat(written).st_ino == os.stat(source).st_ino  # linked, not copied


def test_a_directory_keeps_its_layout_less_the_ignored(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    for name in ("config.json", "model.safetensors", "sub/tokenizer.json", "old.bin"):
        (model / name).write_text(name)
    written = copy_local(model.as_uri(), tmp_path / "volume", ["*.bin"])
    assert sorted(str(p.relative_to(tmp_path / "volume")) for p in written) == [
        "config.json",
        "model.safetensors",
        "sub/tokenizer.json",
    ]


def test_a_missing_path_fails_the_initializer_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STORAGE_URI", (tmp_path / "nothing").as_uri())
    with pytest.raises(FileNotFoundError, match="no such file or directory on this machine"):
        main(["dataset", str(tmp_path / "volume")])
    source = tmp_path / "d.csv"
    source.write_text("text\nx\n")
    monkeypatch.setenv("STORAGE_URI", source.as_uri())
    assert main(["dataset", str(tmp_path / "volume")]) == 0
    assert f"1 files from {source.as_uri()}" in capsys.readouterr().out
