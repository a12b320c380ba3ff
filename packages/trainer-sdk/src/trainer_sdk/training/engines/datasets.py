"""Data sets for fine-tuning, read in the pod: files in JSON, JSONL, Parquet, CSV or Arrow, in the
instruct, chat, prompt-completion or text form, turned into the records TRL's trainers take.

Forms (``dataset_format``; ``auto`` finds it from the columns, after ``column_map``):

- ``instruct``: ``input`` and ``output`` columns (upstream's ``TorchTuneInstructDataset``), or
  Alpaca's ``instruction``, ``input``, ``output``: one user turn and the answer;
- ``chat``: a ``messages`` column (``conversations`` too), each a list of ``{role, content}``
  (ShareGPT's ``{from, value}`` with ``human``/``gpt`` roles read the same);
- ``prompt_completion``: ``prompt`` and ``completion`` columns, as TRL takes them;
- ``text``: a ``text`` column, plain language modelling.

Instruct and chat records become prompt-completion pairs (the conversation before the last
assistant turn, and that turn), so the loss is on the answer only, with any chat template; with
``train_on_input`` a chat record stays whole and an instruct record is trained on its prompt too.
A tokenizer without a chat template gets the turns as plain text.

Preference data sets (DPO, KTO, ORPO: ``to_preference_records``) have ``prompt``, ``chosen`` and
``rejected`` columns, each text or a list of messages; prompt data sets (GRPO:
``to_prompt_records``) a ``prompt`` column and whatever their reward functions read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from datasets import Dataset, load_dataset

from trainer_sdk.manifests.storage import DATA_SOURCES

__all__ = [
    "FORMATS",
    "SOURCES",
    "load_records",
    "to_preference_records",
    "to_prompt_records",
    "to_training_records",
    "to_unpaired_records",
]

# datasets' builder for each file suffix; a data set's files must be of one kind.
SOURCES: Final = DATA_SOURCES
FORMATS: Final = ("auto", "instruct", "chat", "prompt_completion", "text")
_ROLES: Final = {"human": "user", "gpt": "assistant", "bot": "assistant", "model": "assistant"}


def _data_files(path: Path, source: str | None) -> tuple[str, list[str]]:
    """The ``datasets`` builder and the files of the data set at ``path`` (a file, or every data
    file below a directory: README.md and the like are not data)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    files = [f for f in files if f.suffix in SOURCES and not f.name.startswith(".")]
    if source is not None:
        files = [f for f in files if SOURCES[f.suffix] == source]
    builders = {SOURCES[f.suffix] for f in files}
    if not files:
        wanted = f"{source} files" if source else f"data files ({', '.join(SOURCES)})"
        raise FileNotFoundError(f"dataset: no {wanted} in {path}")
    if len(builders) > 1:
        raise ValueError(
            f"dataset: {path} holds files of several formats {sorted(builders)}; "
            "choose one with the data set's source (DataFormat)"
        )
    return builders.pop(), [str(f) for f in files]


def load_records(path: Path, source: str | None, split: str) -> Dataset:
    """The records of the data set at ``path`` (``split`` may slice: ``train[:100]``)."""
    builder, files = _data_files(path, source)
    dataset = load_dataset(builder, data_files={"train": files}, split=split)
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset: expected one split, got {type(dataset).__name__}")
    return dataset


def _renamed(columns: Sequence[str], column_map: Mapping[str, str]) -> dict[str, str]:
    """Expected name -> the data's column, for the names ``column_map`` maps that exist."""
    missing = [theirs for theirs in column_map.values() if theirs not in columns]
    if missing:
        raise ValueError(
            f"column_map: no column {missing} in the data set (columns: {list(columns)})"
        )
    return {**{name: name for name in columns}, **column_map}


def _form(columns: Mapping[str, str]) -> str:
    for form, needed in (
        ("chat", ("messages",)),
        ("prompt_completion", ("prompt", "completion")),
        ("instruct", ("output",)),
        ("text", ("text",)),
    ):
        if all(name in columns for name in needed):
            return form
    raise ValueError(
        f"dataset: cannot tell its form from the columns {sorted(columns)}; expected messages "
        "(chat), prompt and completion, input/instruction and output (instruct), or text; set "
        "dataset_preprocess_config (and its column_map)"
    )


def _message(turn: Mapping[str, Any], role: str, content: str) -> dict[str, str]:
    name = str(turn[role])
    return {"role": _ROLES.get(name, name), "content": str(turn[content])}


def _instruct(record: Mapping[str, Any], columns: Mapping[str, str]) -> tuple[str, str]:
    parts = [record.get(columns["instruction"]) if "instruction" in columns else None]
    parts.append(record.get(columns["input"]) if "input" in columns else None)
    prompt = "\n\n".join(str(part) for part in parts if part)
    return prompt, str(record[columns["output"]])


def _as_text(messages: Sequence[Mapping[str, str]]) -> str:
    """Turns as plain text, for a tokenizer without a chat template."""
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages)


def _chat_record(
    messages: list[dict[str, str]], system: str | None, whole: bool, conversational: bool
) -> dict[str, Any]:
    if system:
        messages = [{"role": "system", "content": system}, *messages]
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    if last is None:
        raise ValueError("dataset: a conversation has no assistant turn to learn")
    if not conversational:
        if whole:
            return {"text": _as_text(messages[: last + 1])}
        prompt = _as_text(messages[:last])
        return {"prompt": prompt + "assistant: ", "completion": messages[last]["content"]}
    if whole:
        return {"messages": messages[: last + 1]}
    return {"prompt": messages[:last], "completion": [messages[last]]}


def to_training_records(
    dataset: Dataset,
    form: str,
    column_map: Mapping[str, str],
    system_prompt: str | None,
    train_on_input: bool,
    conversational: bool,
) -> Dataset:
    """``dataset`` in the form TRL's SFT trainer takes; ``conversational``: the tokenizer has a
    chat template."""
    if form not in FORMATS:
        raise ValueError(f"dataset_format: expected one of {list(FORMATS)}, got {form!r}")
    columns = _renamed(dataset.column_names, column_map)
    if "messages" not in columns and "conversations" in columns:
        columns["messages"] = columns["conversations"]
    form = _form(columns) if form == "auto" else form
    role = column_map.get("role", "role")
    content = column_map.get("content", "content")

    def convert(record: dict[str, Any]) -> dict[str, Any]:
        if form == "chat":
            turns = record[columns["messages"]]
            if isinstance(turns, str):
                turns = json.loads(turns)
            if turns and role not in turns[0] and "from" in turns[0]:
                turns = [_message(turn, "from", "value") for turn in turns]
            else:
                turns = [_message(turn, role, content) for turn in turns]
            return _chat_record(turns, system_prompt, train_on_input, conversational)
        if form == "instruct":
            prompt, answer = _instruct(record, columns)
            turns = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
            return _chat_record(turns, system_prompt, train_on_input, conversational)
        if form == "prompt_completion":
            return {
                "prompt": record[columns["prompt"]],
                "completion": record[columns["completion"]],
            }
        return {"text": record[columns["text"]]}

    return dataset.map(convert, remove_columns=dataset.column_names)


def _turns(value: Any, role: str) -> list[dict[str, str]]:
    """A column's value as messages: a list of messages (a JSON string of one too), or text as
    one turn of ``role``."""
    if isinstance(value, str) and value.startswith("["):
        value = json.loads(value)
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    return [_message(turn, "role", "content") for turn in value]


def to_preference_records(
    dataset: Dataset,
    column_map: Mapping[str, str],
    system_prompt: str | None,
    conversational: bool,
) -> Dataset:
    """``dataset`` (``prompt``, ``chosen``, ``rejected`` columns, after ``column_map``) in the
    form TRL's preference trainers (DPO, KTO, ORPO) take: messages for a tokenizer with a chat
    template, else the turns as plain text as ``to_training_records`` writes them."""
    columns = _renamed(dataset.column_names, column_map)
    missing = [name for name in ("prompt", "chosen", "rejected") if name not in columns]
    if missing:
        raise ValueError(
            f"dataset: a preference data set needs the columns prompt, chosen and rejected; "
            f"{missing} missing from {sorted(columns)} (map them with column_map)"
        )

    def convert(record: dict[str, Any]) -> dict[str, Any]:
        prompt = _turns(record[columns["prompt"]], "user")
        if system_prompt:
            prompt = [{"role": "system", "content": system_prompt}, *prompt]
        answers = {
            name: _turns(record[columns[name]], "assistant") for name in ("chosen", "rejected")
        }
        if conversational:
            return {"prompt": prompt, **answers}
        return {
            "prompt": _as_text(prompt) + "assistant: ",
            **{name: turns[-1]["content"] for name, turns in answers.items()},
        }

    return dataset.map(convert, remove_columns=dataset.column_names)


def to_unpaired_records(pairs: Dataset) -> Dataset:
    """Preference records as KTO's unpaired ones, each pair's chosen completion (desirable) then
    its rejected one: interleaved, since KTO may read its data in order (TRL's own unpairing
    puts every desirable example of a batch of a thousand before every undesirable one)."""

    def unpair(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        rows = range(len(batch["prompt"]))
        return {
            "prompt": [batch["prompt"][i] for i in rows for _ in range(2)],
            "completion": [batch[name][i] for i in rows for name in ("chosen", "rejected")],
            "label": [label for _ in rows for label in (True, False)],
        }

    return pairs.map(unpair, batched=True, remove_columns=pairs.column_names)


def to_prompt_records(
    dataset: Dataset,
    column_map: Mapping[str, str],
    system_prompt: str | None,
    conversational: bool,
) -> Dataset:
    """``dataset`` (a ``prompt`` column, after ``column_map``) in the form TRL's GRPO takes: the
    prompt as messages for a tokenizer with a chat template, else as plain text; the other
    columns (what reward functions read) kept under their mapped names."""
    columns = _renamed(dataset.column_names, column_map)
    if "prompt" not in columns:
        raise ValueError(
            f"dataset: a prompt data set needs a prompt column, not in {sorted(columns)} "
            "(map it with column_map)"
        )

    def convert(record: dict[str, Any]) -> dict[str, Any]:
        prompt = _turns(record[columns["prompt"]], "user")
        if system_prompt:
            prompt = [{"role": "system", "content": system_prompt}, *prompt]
        others = {name: record[theirs] for name, theirs in columns.items() if name != "prompt"}
        return {**others, "prompt": prompt if conversational else _as_text(prompt) + "assistant: "}

    return dataset.map(convert, remove_columns=dataset.column_names)
