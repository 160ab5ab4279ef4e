"""The release's own lm-eval tasks: MMLU-Pro+ and MMLU-Pro, 5-shot in lm-eval's MMLU layout."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from builders.core.items.record import MCQRecord
from builders.core.build.result import TaskLocation
from builders.core.sources.loading import evaluation_split

from .groups import CONFIG, NAME, ORIGINAL_CONFIG

SHOTS = 5


def lm_eval_files(location: TaskLocation, configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]]) -> dict[str, bytes]:
    """Our own tasks: MMLU-Pro+ (``default``) and MMLU-Pro (``original``) in lm-eval's MMLU multiple-choice
    layout. As in MMLU-Pro's own evaluation, each is a group of one task per category whose 5 demonstrations
    are the first of that category in the unmodified validation split; the group's accuracy, weighted by size,
    is the config's. The letter after "Answer:" is scored. The upstream lm-eval ``mmlu_pro_plus`` task (chain of
    thought) also reads this release through its Hub columns."""
    from builders.core.tasks import lm_eval_tasks as lt

    members_of: dict[str, tuple[dict[str, Any], str]] = {}
    groups: dict[str, bytes] = {}
    manifest, tasks, slugs = [], [], {}
    for config, role in ((CONFIG, "plus"), (ORIGINAL_CONFIG, "original")):
        splits = configs[config]
        test = evaluation_split(splits, "validation")
        # a build of validation alone scores it: its items are no demonstrations then (zero-shot)
        demonstrations = Counter(r.category or "" for r in splits.get("validation") or () if test != "validation")
        task, members = f"{NAME}_{config}", []
        for category in sorted({r.category or "" for r in splits[test]}):
            slug = slugs.setdefault(category, lt.slug(category, slugs.values()))
            shots = min(SHOTS, demonstrations[category])  # a small sample may hold fewer demonstrations
            member = f"{task}_{slug}"
            members_of[f"{lt.TASKS_DIR}/{member}.yaml"] = (lt.multiple_choice_task(
                member, config, location, test, fewshot_split="validation" if shots else None, num_fewshot=shots,
                description=f"The following are multiple choice questions (with answers) about {category}.\n\n",
                process_docs=f"utils.only_{slug}", doc_to_target="answer_index"),
                f"{NAME}, config {config!r}, category {category!r}: {shots}-shot")
            members.append(member)
        groups[f"{lt.TASKS_DIR}/{task}.yaml"] = lt.to_yaml(lt.group(task, members, weight_by_size=True))
        manifest.append({"task": task, "config": config, "split": test, "role": role})
        tasks.append(task)
    files = {**lt.templated(members_of), **groups,
             f"{lt.TASKS_DIR}/{NAME}_all.yaml": lt.to_yaml(lt.group(f"{NAME}_all", tasks, weight_by_size=False)),
             lt.UTILS: lt.utils_module(lt.value_filters("category", slugs))}
    files[lt.MANIFEST] = lt.manifest(NAME, location, manifest)
    files[f"{lt.TASKS_DIR}/README.md"] = f"""# lm-evaluation-harness tasks

- `{NAME}_{CONFIG}`: MMLU-Pro+ (config `{CONFIG}`, split `test`), MMLU's multiple-choice layout; a group of one
  task per category, {SHOTS}-shot from that category's rows of the unmodified `validation` split, as in MMLU-Pro's
  own evaluation; the letter after "Answer:" is scored (`acc`; the group's, weighted by size, is the config's).
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
