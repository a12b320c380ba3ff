"""Data sets in the pod: files of each format, records of each form, as TRL's SFT takes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets import Dataset
from trainer_sdk.training.engines.datasets import load_records, to_training_records

ALPACA = {"instruction": "Name the color.", "input": "sky", "output": "blue"}


def _convert(
    records: list[dict[str, object]], form: str = "auto", **options: object
) -> list[dict[str, object]]:
    settings: dict[str, object] = {
        "column_map": {},
        "system_prompt": None,
        "train_on_input": False,
        "conversational": True,
        **options,
    }
    converted = to_training_records(Dataset.from_list(records), form, **settings)  # type: ignore[arg-type]
    return list(converted)


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".parquet", ".csv"])
def test_each_file_format_loads(tmp_path: Path, suffix: str) -> None:
    rows = [{"input": f"q{i}", "output": f"a{i}"} for i in range(6)]
    path = tmp_path / f"data{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(rows))
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        dataset = Dataset.from_list(rows)
        dataset.to_parquet(path) if suffix == ".parquet" else dataset.to_csv(path, index=False)
    assert list(load_records(path, None, "train[:4]")) == rows[:4]
    assert list(load_records(tmp_path, None, "train")) == rows  # a directory: its data files


def test_a_directory_of_mixed_formats_needs_its_source(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "b.csv").write_text("text\ny\n")
    (tmp_path / "README.md").write_text("not data")
    with pytest.raises(ValueError, match="several formats"):
        load_records(tmp_path, None, "train")
    assert list(load_records(tmp_path, "csv", "train")) == [{"text": "y"}]
    with pytest.raises(FileNotFoundError, match="no parquet files"):
        load_records(tmp_path, "parquet", "train")


def test_an_instruct_record_becomes_a_prompt_and_its_answer() -> None:
    assert _convert([ALPACA], "instruct") == [
        {
            "prompt": [{"role": "user", "content": "Name the color.\n\nsky"}],
            "completion": [{"role": "assistant", "content": "blue"}],
        }
    ]
    mapped = _convert(
        [{"question": "sky?", "answer": "blue"}],
        column_map={"input": "question", "output": "answer"},
    )
    assert mapped[0]["completion"] == [{"role": "assistant", "content": "blue"}]


def test_a_chat_record_learns_its_last_answer_or_everything_with_train_on_input() -> None:
    turns = [
        {"from": "human", "value": "what is the color of the sky"},
        {"from": "gpt", "value": "blue"},
    ]
    (record,) = _convert([{"conversations": turns}], system_prompt="Be brief.")
    assert record == {
        "prompt": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "what is the color of the sky"},
        ],
        "completion": [{"role": "assistant", "content": "blue"}],
    }
    (whole,) = _convert([{"conversations": turns}], train_on_input=True)
    assert [m["role"] for m in whole["messages"]] == ["user", "assistant"]  # type: ignore[index]


def test_without_a_chat_template_the_turns_are_plain_text() -> None:
    (record,) = _convert([{"input": "sky", "output": "blue"}], conversational=False)
    assert record == {"prompt": "user: sky\nassistant: ", "completion": "blue"}


def test_prompt_completion_and_text_pass_through() -> None:
    assert _convert([{"prompt": "p", "completion": "c"}]) == [{"prompt": "p", "completion": "c"}]
    assert _convert([{"text": "hello"}]) == [{"text": "hello"}]


def test_columns_of_no_known_form_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match=r"cannot tell its form from the columns \['a', 'b'\]"):
        _convert([{"a": 1, "b": 2}])
    with pytest.raises(ValueError, match=r"column_map: no column \['q'\]"):
        _convert([{"a": 1}], column_map={"input": "q"})
