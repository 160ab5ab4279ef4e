"""An item whose key's text is also another option is left out of every builder's release, with its reason, and the
validator refuses a release that holds one (its own reading, apart from the loader's)."""

from __future__ import annotations

import pytest
from fixtures import write_jsonl

from builders import perturbations, wicked
from builders.core.errors import ValidationFailed
from builders.core.sources import loading
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import load_source

DUPLICATED_KEY = {"question": "Subtract. 2,396 – 1,709", "subject": "elementary_mathematics",  # mmlu/test/2178
                  "choices": ["687", "687", "1,493", "1,695"], "answer": 0}
DUPLICATED_DISTRACTOR = {"question": "Add. 2 + 2", "subject": "elementary_mathematics",
                         "choices": ["4", "5", "5", "6"], "answer": 0}
CONTENT = [{"question": f"Add. {i} + 1", "subject": "elementary_mathematics",
            "choices": [str(i + 1), str(i + 2), str(i + 3), str(i + 4)], "answer": 0} for i in range(3)]
ROWS = [DUPLICATED_KEY, DUPLICATED_DISTRACTOR, *CONTENT]


def test_the_loader_excludes_an_item_whose_key_is_twice_with_its_reason(tmp_path):
    write_jsonl(tmp_path / "mmlu" / "test.jsonl", ROWS)
    loaded = load_source(BENCHMARKS["mmlu"], str(tmp_path / "mmlu"))
    assert [item.id for item in loaded.items["test"]] == ["mmlu/test/1", "mmlu/test/2", "mmlu/test/3", "mmlu/test/4"]
    (entry,) = loaded.exclusions.entries
    assert (entry.id, entry.reason, entry.field) == ("mmlu/test/0", "duplicated_key", "choices")
    assert entry.detail == "the key's text '687' is options 0, 1 (0-based)"
    assert loaded.rows_in == {"test": 5}


def test_wicked_releases_no_item_with_its_key_twice():
    """mmlu/test/2178 was copied unchanged for "duplicate options" into every variant, both copies of "687" kept."""
    result = wicked.build_dataset(ROWS, sba_classifier="none", variants=3)
    assert result.report.passed
    for config, splits in result.build.configs.items():
        assert [r.id for r in splits["test"]] == [f"mmlu/test/{i}" for i in range(1, 5)], config
    assert result.build.exclusions.reasons() == {"test": {"duplicated_key": 1}}
    # the duplicated distractor is not a second key: copied unchanged, as before
    assert [r.metadata["skip_reason"] for r in result.build.configs["variant_0"]["test"]][:1] == ["duplicate_choices"]


def test_perturbations_release_no_item_with_its_key_twice():
    result = perturbations.build_dataset({"test": ROWS, "dev": CONTENT}, only=["shuffle"])
    assert result.report.passed
    assert result.build.exclusions.reasons() == {"test": {"duplicated_key": 1}}
    assert all(r.id != "mmlu/test/0" for _, _, records in result.build.records() for r in records)


def test_the_validator_refuses_a_release_with_a_key_twice(monkeypatch):
    monkeypatch.setattr(loading, "_check_key_once", lambda item: None)
    with pytest.raises(ValidationFailed, match=r"key_text_once \(4: "):  # the original and 3 variants
        wicked.build_dataset(ROWS, sba_classifier="none", variants=3)
