"""Preference data sets in the pod: columns mapped, text or messages, paired for DPO and
interleaved desirable/undesirable for KTO."""

from __future__ import annotations

import pytest
from datasets import Dataset
from trainer_sdk.training.engines.datasets import to_preference_records, to_unpaired_records

PAIR = {"question": "what is the color of the sky", "better": "blue", "worse": "green"}
MAP = {"prompt": "question", "chosen": "better", "rejected": "worse"}


def test_text_columns_become_a_user_turn_and_assistant_answers() -> None:
    (record,) = to_preference_records(Dataset.from_list([PAIR]), MAP, "Be brief.", True)
    assert record == {
        "prompt": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "what is the color of the sky"},
        ],
        "chosen": [{"role": "assistant", "content": "blue"}],
        "rejected": [{"role": "assistant", "content": "green"}],
    }


def test_messages_pass_through_and_without_a_chat_template_they_are_text() -> None:
    turns = {
        "prompt": [{"role": "user", "content": "sky?"}],
        "chosen": [{"role": "assistant", "content": "blue"}],
        "rejected": [{"role": "assistant", "content": "green"}],
    }
    (record,) = to_preference_records(Dataset.from_list([turns]), {}, None, True)
    assert record == turns
    (text,) = to_preference_records(Dataset.from_list([turns]), {}, None, False)
    assert text == {"prompt": "user: sky?\nassistant: ", "chosen": "blue", "rejected": "green"}


def test_a_data_set_without_the_preference_columns_is_refused_naming_them() -> None:
    with pytest.raises(ValueError, match=r"\['chosen', 'rejected'\] missing"):
        to_preference_records(
            Dataset.from_list([{"prompt": "p", "completion": "c"}]), {}, None, True
        )


def test_kto_gets_each_pairs_answers_in_turn() -> None:
    pairs = Dataset.from_list(
        [{"prompt": f"p{i}", "chosen": f"good{i}", "rejected": f"bad{i}"} for i in range(3)]
    )
    assert list(to_unpaired_records(pairs)) == [
        {"prompt": f"p{i}", "completion": f"{kind}{i}", "label": kind == "good"}
        for i in range(3)
        for kind in ("good", "bad")
    ]
