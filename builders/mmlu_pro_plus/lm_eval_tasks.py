"""The release's own lm-eval tasks: MMLU-Pro+ and MMLU-Pro, 5-shot in lm-eval's MMLU layout."""

from __future__ import annotations

from typing import Mapping, Sequence

from builders.core.build import TaskLocation
from builders.core.record import MCQRecord

from .groups import CONFIG, NAME, ORIGINAL_CONFIG


SHOTS = 5


def lm_eval_files(location: TaskLocation, configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]]) -> dict[str, bytes]:
    """Our own tasks: MMLU-Pro+ (``default``) and MMLU-Pro (``original``) in lm-eval's MMLU multiple-choice
    layout, 5-shot from the unmodified validation split; the letter after "Answer:" is scored. The upstream
    lm-eval ``mmlu_pro_plus`` task (chain of thought) also reads this release through its Hub columns."""
    from builders.core import lm_eval_tasks as lt

    description = "The following are multiple choice questions (with answers).\n\n"
    files: dict[str, bytes] = {}
    manifest, tasks = [], []
    for config, role in ((CONFIG, "plus"), (ORIGINAL_CONFIG, "original")):
        splits = configs[config]
        test = "test" if "test" in splits else next(iter(splits))
        fewshot = "validation" if splits.get("validation") else None
        shots = min(SHOTS, len(splits.get("validation") or ()))  # a small sample may hold fewer demonstrations
        task = f"{NAME}_{config}"
        files[f"{lt.TASKS_DIR}/{task}.yaml"] = lt.to_yaml(lt.multiple_choice_task(
            task, config, location, test, description=description, fewshot_split=fewshot,
            num_fewshot=shots, doc_to_target="answer_index"))
        manifest.append({"task": task, "config": config, "split": test, "role": role})
        tasks.append(task)
    files[f"{lt.TASKS_DIR}/{NAME}_all.yaml"] = lt.to_yaml(lt.group(f"{NAME}_all", tasks, weight_by_size=False))
    files[f"{lt.TASKS_DIR}/utils.py"] = lt.UTILS.encode()
    files[lt.MANIFEST] = lt.manifest(NAME, location, manifest)
    files[f"{lt.TASKS_DIR}/README.md"] = f"""# lm-evaluation-harness tasks

- `{NAME}_{CONFIG}`: MMLU-Pro+ (config `{CONFIG}`, split `test`), MMLU's multiple-choice layout, {SHOTS}-shot from the
  unmodified `validation` split; the letter after "Answer:" is scored (`acc`).
- `{NAME}_{ORIGINAL_CONFIG}`: the same questions as in MMLU-Pro (config `{ORIGINAL_CONFIG}`), same prompt.

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval --tasks {NAME}_{CONFIG},{NAME}_{ORIGINAL_CONFIG}
python -m builders.evaluate RELEASE --model hf:MODEL   # accuracy and drop per group and category, SSR, CPI
```

The release also carries MMLU-Pro's Hub columns (`question_id`, `options`, `answer` letter, `answer_index`,
`cot_content`, `category`, `src`), so lm-eval's own chain-of-thought `mmlu_pro_plus` task reads it with
`dataset_path` set to this release.
""".encode()
    return files
