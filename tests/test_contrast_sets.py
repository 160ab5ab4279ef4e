"""Contrast sets: edges both ways, no same-gold edges, a true maximum matching, the four configs, the cache."""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from collections import defaultdict
from pathlib import Path

import datasets
import numpy as np
import pytest
from sample_releases import EMBEDDER_GROUP
from fixtures import outcome_rows, write_jsonl

from builders import contrast_sets as cs
from builders.contrast_sets import calibration, graph, mining, transform
from builders.contrast_sets.equivalence import contradicts
from builders.core.errors import UserError, ValidationFailed
from builders.core.items.record import MCQRecord
from builders.core.pipeline import cli
from builders.core.runtime import embeddings
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import load_source
from builders.core.validation.validate import validate

pytestmark = EMBEDDER_GROUP  # its tests embed texts

# ---- a tiny UnifiedQA-layout fixture: <dir>/<source>/<split>.jsonl -------------------------------------
# Option texts are single words whose MiniLM similarities stay below 0.75 (under the default threshold), so
# the only equivalences are identical texts. test split, edges: s1-s2, s1-s3, s2-s4 (a path where taking s1-s2 first is wrong),
# s5-m3 (across sources), m1-m2, m1-m5 (m2 and m5 share their gold: one of them stays unmatched).
UNIFIEDQA = {
    ("sci", "test"): [
        {"question": "Which planet is called the red planet?", "choices": ["Mars", "Venus", "Jupiter"], "answer": "A"},
        {"question": "Which planet is the hottest?", "choices": ["Saturn", "Mars", "Venus"], "answer": "C"},
        {"question": "Which planet has the Great Red Spot?", "choices": ["Pluto", "Jupiter", "Mars"], "answer": "B"},
        {"question": "Which planet has the most famous rings?", "choices": ["Saturn", "Uranus", "Venus"], "answer": "A"},
        {"question": "Which planet is home to Olympus Mons?", "choices": ["Earth", "Mercury", "Mars"], "answer": "C"},
        {"question": "Which gas giant is closest to the Sun?", "choices": ["Jupiter", "Earth"], "answer": "A"},
    ],
    ("misc", "test"): [
        {"question": "What color is a clear daytime sky?", "choices": ["blue", "green", "red"], "answer": "A"},
        {"question": "What color is fresh grass?", "choices": ["purple", "green", "blue"], "answer": "B"},
        {"question": "Which planet do we live on?", "choices": ["Earth", "Mars", "Neptune"], "answer": "A"},
        {"question": "Which of these are primary colors?", "choices": ["red", "yellow", "All of the above"], "answer": "C"},
        {"question": "What color do blue and yellow make?", "choices": ["green", "blue", "orange"], "answer": "A"},
    ],
    ("sci", "train"): [
        {"question": "Which planet is called the morning star?", "choices": ["Mars", "Venus"], "answer": "B"},
        {"question": "Which planet has a moon named Phobos?", "choices": ["Mars", "Venus"], "answer": "A"},
    ],
    ("misc", "train"): [
        {"question": "What do bees make?", "choices": ["honey", "milk"], "answer": "A"},
    ],
}
CONFIGS = ["contrast", "contrast_subset_original", "random_pairs", "choices_only"]


def write_unifiedqa(root: Path) -> Path:
    for (source, split), rows in UNIFIEDQA.items():
        write_jsonl(root / "unifiedqa" / source / f"{split}.jsonl", rows)
    return root / "unifiedqa"


def uid(source: str, split: str, index: int) -> str:
    return f"unifiedqa/{source}/{split}/{index}"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("embeddings")


def builder_args(cache: Path, *argv: str) -> argparse.Namespace:
    return cli.builder_parser(cs.BUILDER).parse_args(["--cache-dir", str(cache), *argv])


def builder_options(cache: Path, *argv: str) -> cs.Options:
    return cs.BUILDER.options_from(["--cache-dir", str(cache), *argv])


def make(source, options: cs.Options):
    """The build of ``source``, its steps run by the core, as the command line makes it."""
    return cs.BUILDER.make_build(source, options)


def build_fixture(tmp_path: Path, cache: Path, *argv: str):
    source = load_source(BENCHMARKS["unifiedqa"], str(write_unifiedqa(tmp_path)))
    return make(source, builder_options(cache, *argv))


# ---- edges on hand-made embeddings ------------------------------------------------------------------


def record(rid: str, gold: str, *distractors: str, question: str | None = None, source: str = "s") -> MCQRecord:
    return MCQRecord(id=rid, question=question or f"question {rid}?", choices=(gold, *distractors), answer=0,
                     source="x", source_config=source, source_split="test", source_index=0)


def embed(pool: graph.CandidatePool, similar: dict[str, tuple[str, float]]) -> np.ndarray:
    """One orthogonal direction per text; ``similar[t] = (u, c)`` puts t at cosine c from u's direction."""
    vectors = np.eye(2 * len(pool.texts), dtype=np.float32)[: len(pool.texts)]
    for text, (anchor, cosine) in similar.items():
        i, j = pool.texts.index(text), pool.texts.index(anchor)
        vectors[i] = cosine * vectors[j] + np.sqrt(1 - cosine**2) * np.eye(vectors.shape[1], dtype=np.float32)[len(pool.texts) + i]
    return vectors


def edge_set(pool: graph.CandidatePool, edges: graph.Edges) -> dict[tuple[str, str], tuple[float, float]]:
    return {(pool.records[a].id, pool.records[b].id): (round(float(s), 4), round(float(t), 4))
            for a, b, s, t in zip(edges.first, edges.second, edges.first_similarity, edges.second_similarity, strict=True)}


def test_an_edge_needs_equivalence_in_both_directions():
    records = [
        record("a", "alpha", "beta"),
        record("b", "beta", "alpha"),  # a <-> b: exact texts both ways
        record("c", "gamma", "alpha"),  # gamma is no distractor of a: one direction only
        record("d", "delta", "eps~"),
        record("e", "epsilon", "delta~"),  # d <-> e through near-equivalents (0.90 and 0.87)
        record("f", "phi", "delta^"),
        record("g", "gee", "phi"),  # f -> g yes, but delta^ is only 0.84 from delta: no edge
    ]
    similar = {"eps~": ("epsilon", 0.90), "delta~": ("delta", 0.87), "delta^": ("gee", 0.84)}
    expected = {("a", "b"): (1.0, 1.0), ("d", "e"): (0.87, 0.9)}
    for order in (records, records[::-1]):
        pool = graph.make_pool(order, cross_source=True, cross_split=False)
        edges = graph.find_edges(pool, embed(pool, similar), 0.85)
        assert edge_set(pool, edges) == expected  # the same edges, whichever vertex comes first


def test_no_edge_between_same_or_equivalent_golds_or_copies_of_a_question():
    records = [
        record("p", "x", "x~"), record("q", "X ", "x^"),  # the same gold after normalisation
        record("r", "y", "yy~"), record("s", "yy", "y~"),  # golds y and yy are equivalent (0.9)
        record("t", "u", "v", question="same?"), record("w", "v", "u", question="Same? "),  # one question twice
        record("k", "kappa", "lam"), record("l", "lam", "kappa"),  # the control: an edge
    ]
    similar = {"x~": ("x", 0.95), "x^": ("x", 0.9), "yy": ("y", 0.9), "y~": ("y", 0.95), "yy~": ("yy", 0.95)}
    pool = graph.make_pool(records, cross_source=True, cross_split=False)
    edges = graph.find_edges(pool, embed(pool, similar), 0.85)
    assert edge_set(pool, edges) == {("k", "l"): (1.0, 1.0)}
    assert len(graph.candidate_pairs(pool, embed(pool, similar), 0.85)[0]) == 4  # the rules, not the products, refuse them


def test_blocks_keep_sources_apart_only_without_cross_source():
    records = [record("a", "alpha", "beta", source="one"), record("b", "beta", "alpha", source="two")]
    for cross_source, expected in [(True, 1), (False, 0)]:
        pool = graph.make_pool(records, cross_source=cross_source, cross_split=False)
        assert len(graph.find_edges(pool, embed(pool, {}), 0.85)) == expected


# ---- maximum matching ---------------------------------------------------------------------------------


def brute_force(edges: list[tuple[int, int]], weights: list[int]) -> tuple[int, int]:
    """(maximum cardinality, maximum weight among the matchings of that cardinality), by enumeration."""
    best = (0, 0)
    for size in range(len(edges), 0, -1):
        for chosen in itertools.combinations(range(len(edges)), size):
            vertices = [v for e in chosen for v in edges[e]]
            if len(set(vertices)) == len(vertices):
                best = max(best, (size, sum(weights[e] for e in chosen)))
        if best[0]:
            return best
    return best


def heaviest_first(edges: list[tuple[int, int]], weights: list[int]) -> int:
    used, size = set(), 0
    for e in sorted(range(len(edges)), key=lambda e: -weights[e]):
        if not used & set(edges[e]):
            used |= set(edges[e])
            size += 1
    return size


def run_matching(n: int, edges: list[tuple[int, int]], weights: list[int]) -> list[tuple[int, int]]:
    first = np.array([a for a, _ in edges], dtype=np.int64)
    second = np.array([b for _, b in edges], dtype=np.int64)
    matching = graph.maximum_matching(n, first, second, np.array(weights, dtype=np.int64))
    chosen = [edges[e] for e in matching.edges]
    vertices = [v for edge in chosen for v in edge]
    assert len(set(vertices)) == len(vertices)  # a matching
    return chosen


def test_greedy_is_wrong_on_a_path_and_the_matching_is_not():
    # 0-1-2-3 with the middle edge heaviest: heaviest-first takes (1, 2) and stops at one pair.
    edges, weights = [(0, 1), (1, 2), (2, 3)], [5, 9, 5]
    assert heaviest_first(edges, weights) == 1
    assert sorted(run_matching(4, edges, weights)) == [(0, 1), (2, 3)]


def test_matching_is_maximum_against_brute_force_on_random_graphs():
    rng = np.random.default_rng(2024)
    greedy_wrong = 0
    for _ in range(300):
        n = int(rng.integers(3, 10))
        pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.35][:12]
        weights = [int(w) for w in rng.integers(1, 20, len(pairs))]
        chosen = run_matching(n, pairs, weights)
        size, weight = brute_force(pairs, weights)
        assert len(chosen) == size
        assert sum(weights[pairs.index(e)] for e in chosen) == weight
        assert len(run_matching(n, pairs, [1] * len(pairs))) == size  # --tie-break none
        greedy_wrong += heaviest_first(pairs, weights) < size
    assert greedy_wrong >= 20  # the random graphs include many where the greedy choice is wrong


def test_components_are_counted():
    matching = graph.maximum_matching(7, np.array([0, 1, 4]), np.array([1, 2, 5]), np.ones(3, dtype=np.int64))
    assert matching.component_size.tolist() == [3, 3, 3, 1, 2, 2, 1]
    assert graph.component_size_table(matching, np.array([0, 1, 4, 5])) == [("2", 1, 2, 2), ("3", 1, 3, 2)]


def test_balanced_flags_put_exactly_half_at_a():
    keys = [f"pair-{i}" for i in range(10)]
    flags = transform.balanced_flags(keys, 0, "pair_order")
    assert sum(flags.values()) == 5
    assert transform.balanced_flags(keys[::-1], 0, "pair_order") == flags
    assert transform.balanced_flags(keys, 1, "pair_order") != flags
    assert sum(transform.balanced_flags(keys + ["pair-10"], 0, "pair_order").values()) in (5, 6)


# ---- the embedding cache -----------------------------------------------------------------------------


def test_embedding_cache_hits_on_the_second_run_and_is_keyed_by_model(tmp_path):
    embedder = embeddings.resolve_embedder(None)
    assert embedder.id == "sentence-transformers/all-MiniLM-L6-v2" and embedder.revision.startswith("sha256:")
    cache = embeddings.EmbeddingCache(tmp_path, embedder)
    first, stats = embeddings.embed_texts(["a cat", "a dog"], embedder, cache)
    assert (stats.from_cache, stats.embedded) == (0, 2)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    # the same (model, revision): no model is needed at all, so a wrong path cannot matter
    offline = embeddings.Embedder(embedder.id, embedder.revision, str(tmp_path / "no-model-here"))
    second, stats = embeddings.embed_texts(["a dog", "a cat"], offline, embeddings.EmbeddingCache(tmp_path, offline))
    assert (stats.from_cache, stats.embedded) == (2, 0)
    assert np.array_equal(second, first[::-1])
    with pytest.raises(UserError, match="cannot load embedder"):  # a miss must load the model
        embeddings.embed_texts(["a bird"], offline, embeddings.EmbeddingCache(tmp_path, offline))
    other = embeddings.Embedder(embedder.id, "sha256:another-revision", embedder.path)
    _, stats = embeddings.embed_texts(["a cat"], other, embeddings.EmbeddingCache(tmp_path, other))
    assert (stats.from_cache, stats.embedded) == (0, 1)


# ---- the builder on the fixture -----------------------------------------------------------------------


def counts(build) -> dict[str, dict[str, int]]:
    return {config: {split: len(records) for split, records in splits.items()} for config, splits in build.configs.items()}


def test_four_configs_with_exact_counts_and_exclusions(tmp_path, cache_dir):
    build = build_fixture(tmp_path, cache_dir)
    assert counts(build) == {config: {"train": 2, "test": 8} for config in CONFIGS}
    assert list(build.configs) == CONFIGS
    report = validate(build)
    assert report.passed and report.counts["contrast"]["test"] == {"in": 11, "out": 8, "excluded": 3}
    assert report.exclusion_reasons == {
        "test": {"no_contrast_partner": 1, "position_dependent_gold": 1, "unmatched_in_maximum_matching": 1},
        "train": {"no_contrast_partner": 1},
    }
    excluded = {e.id for e in build.exclusions.entries}
    assert {uid("sci", "test", 5), uid("misc", "test", 3), uid("misc", "train", 0)} < excluded
    assert len(excluded & {uid("misc", "test", 1), uid("misc", "test", 4)}) == 1
    graph = build.release.card_context["graph"]
    assert (graph["vertices"], graph["edges"], graph["components"], graph["pairs"]) == (13, 7, 4, 5)
    assert (graph["questions"], graph["yield_percent"], graph["cross_source_pairs"]) == (10, 71.43, 1)


def test_contrast_pairs_share_their_options_and_differ_in_gold(tmp_path, cache_dir):
    build = build_fixture(tmp_path, cache_dir)
    contrast = {r.id: r for records in build.configs["contrast"].values() for r in records}
    expected_pairs = {
        (uid("sci", "test", 0), uid("sci", "test", 2)): {"Mars", "Jupiter"},  # not (0, 1): the path is matched fully
        (uid("sci", "test", 1), uid("sci", "test", 3)): {"Venus", "Saturn"},
        (uid("misc", "test", 2), uid("sci", "test", 4)): {"Earth", "Mars"},
        (uid("sci", "train", 0), uid("sci", "train", 1)): {"Venus", "Mars"},
    }
    for (a, b), options in expected_pairs.items():
        first, second = contrast[a], contrast[b]
        assert first.choices == second.choices and set(first.choices) == options
        assert first.metadata["pair_id"] == second.metadata["pair_id"] == transform.pair_id(a, b)
        assert (first.metadata["partner_id"], second.metadata["partner_id"]) == (b, a)
        assert first.answer != second.answer and first.gold != second.gold
        assert first.metadata["gold_similarity"] == pytest.approx(1.0, abs=1e-5)
    assert contrast[uid("misc", "test", 2)].metadata["cross_source"] is True
    assert contrast[uid("sci", "test", 0)].metadata["replaced_distractor"] == "Jupiter"
    assert contrast[uid("sci", "test", 2)].metadata["component_size"] == 4
    assert sum(r.answer == 0 for r in contrast.values()) == 5
    firsts_at_a = sum(r.answer == 0 for r in contrast.values() if r.metadata["pair_member"] == 0)
    assert firsts_at_a in (2, 3) and build.release.card_context["pair_balance"] == {"total": 5, "at_a": firsts_at_a}


def test_the_other_configs_hold_the_same_questions(tmp_path, cache_dir):
    build = build_fixture(tmp_path, cache_dir)
    contrast = {r.id: r for records in build.configs["contrast"].values() for r in records}
    originals = {(s, split): rows for (s, split), rows in UNIFIEDQA.items()}
    for record in build.configs["contrast_subset_original"]["test"]:
        _, source, split, index = record.id.split("/")
        assert list(record.choices) == originals[(source, split)][int(index)]["choices"]
        assert record.metadata["pair_id"] == contrast[record.id].metadata["pair_id"]
    for records in build.configs["choices_only"].values():
        for record in records:
            assert record.question == "" and record.choices == contrast[record.id].choices
            assert record.answer == contrast[record.id].answer
    golds_of_test = {"Mars", "Venus", "Jupiter", "Saturn", "blue", "green", "Earth"}  # of the mined test vertices
    for record in build.configs["random_pairs"]["test"]:
        assert len(record.choices) == 2 and record.gold == contrast[record.id].gold
        other = record.choices[1 - record.answer]
        assert other != record.gold and other in golds_of_test
        assert record.metadata["random_partner_id"] != record.id


def test_no_cross_source_drops_the_cross_source_pair(tmp_path, cache_dir):
    build = build_fixture(tmp_path, cache_dir, "--no-cross-source")
    assert counts(build)["contrast"] == {"train": 2, "test": 6}
    assert build.release.card_context["graph"]["cross_source_pairs"] == 0 and validate(build).passed


def test_validation_refuses_pairs_that_do_not_share_options(tmp_path, cache_dir):
    from builders.core.errors import ValidationFailed

    build = build_fixture(tmp_path, cache_dir)
    records = build.configs["contrast"]["test"]
    records[0] = records[0].replace(choices=(records[0].choices[0], "Pluto"))
    with pytest.raises(ValidationFailed, match="pair_shares_options"):
        validate(build)


@pytest.mark.parametrize("broken, check", [(dict(choices=("Pluto",), answer=0), "at_least_two_choices"),
                                           (dict(answer=7), "answer_in_range")])
def test_a_malformed_item_fails_validation_before_the_audit_reads_it(tmp_path, cache_dir, broken, check):
    """The audit and the choices-only model read every item as well-formed: given a one-option item they raised
    ZeroDivisionError (a traceback), not the validator's message naming the check."""
    build = build_fixture(tmp_path, cache_dir)
    records = build.configs["random_pairs"]["test"]
    records[0] = records[0].replace(**broken)
    with pytest.raises(ValidationFailed, match=f"validation failed, nothing written: {check} \\(1: "):
        validate(build)


def _release_digests(folder: Path) -> dict[str, str]:
    files = sorted(folder.rglob("*.parquet")) + [folder / "contrast_edges.jsonl"]
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.slow
def test_release_is_byte_identical_cold_or_warm_and_loads(tmp_path):
    source = str(write_unifiedqa(tmp_path))
    embedded = {}
    for run, cache in [("cold1", "cache1"), ("cold2", "cache2"), ("warm", "cache1")]:
        before = embeddings.COUNTS["embedded"]
        assert cs.main(["--source", source, "--cache-dir", str(tmp_path / cache), "--output", str(tmp_path / run)]) == 0
        embedded[run] = embeddings.COUNTS["embedded"] - before
    assert embedded["cold1"] == embedded["cold2"] > 0 and embedded["warm"] == 0  # the second build embeds nothing
    digests = [_release_digests(tmp_path / run) for run in ("cold1", "cold2", "warm")]
    assert digests[0] == digests[1] == digests[2] and len(digests[0]) == 9
    loaded = datasets.load_dataset(str(tmp_path / "cold1"), "choices_only")
    assert loaded["test"].num_rows == 8 and loaded["train"].num_rows == 2 and set(loaded["test"]["question"]) == {""}
    edges = [json.loads(line) for line in (tmp_path / "cold1" / "contrast_edges.jsonl").read_text().splitlines()]
    assert len(edges) == 7 and sum(e["matched"] for e in edges) == 5
    card = (tmp_path / "cold1" / "README.md").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in card and "a matching of **5 pairs**" in card
    every = "all 4 configs"  # every matched row is a question of each config; the rest are excluded
    assert outcome_rows(card) == [
        (every, "train", "altered", "–", 2), (every, "train", "excluded", "no_contrast_partner", 1),
        (every, "test", "altered", "–", 8), (every, "test", "excluded", "no_contrast_partner", 1),
        (every, "test", "excluded", "position_dependent_gold", 1),
        (every, "test", "excluded", "unmatched_in_maximum_matching", 1)]


@pytest.mark.slow
def test_publish_to_the_hub_and_load_back(local_hub, tmp_path, cache_dir):
    source = str(write_unifiedqa(tmp_path))
    repo = "mcqforge/contrast-sets-fixture"
    assert cs.main(["--source", source, "--cache-dir", str(cache_dir), "--push", repo, "--version", "1.0.0"]) == 0
    assert local_hub.tags(repo) == ["v1.0.0"]
    for config in CONFIGS:
        loaded = datasets.load_dataset(repo, config, revision="v1.0.0")
        assert (loaded["test"].num_rows, loaded["train"].num_rows) == (8, 2)
    contrast = datasets.load_dataset(repo, "contrast", revision="v1.0.0")["train"].to_list()
    assert [len(row["choices"]) for row in contrast] == [2, 2] and contrast[0]["choices"] == contrast[1]["choices"]
    assert contrast[0]["metadata"]["partner_id"] == contrast[1]["id"]


def test_token_batches_hold_one_length_and_bound_the_tokens():
    lengths = np.array([300, 200, 10, 10, 10, 10, 10, 9, 8])
    batches = embeddings.token_batches(lengths, embeddings.Encoding(max_texts=4, max_tokens=400))
    assert batches == [slice(0, 1), slice(1, 2), slice(2, 6), slice(6, 7), slice(7, 8), slice(8, 9)]
    assert embeddings.token_batches(np.full(9, 100), embeddings.Encoding(max_texts=8, max_tokens=400)) == [
        slice(0, 4), slice(4, 8), slice(8, 9)]
    assert embeddings.token_batches(np.array([900]), embeddings.Encoding(max_texts=4, max_tokens=400)) == [slice(0, 1)]


def test_a_split_without_pairs_is_left_out_and_no_pair_at_all_is_an_error(tmp_path, cache_dir, capsys):
    for (source, split), rows in UNIFIEDQA.items():
        if (source, split) != ("sci", "train"):  # the train split keeps only the bees, who have no partner
            write_jsonl(tmp_path / "a" / source / f"{split}.jsonl", rows)
    build = make(load_source(BENCHMARKS["unifiedqa"], str(tmp_path / "a")), builder_options(cache_dir))
    assert counts(build) == {config: {"test": 8} for config in CONFIGS}
    assert validate(build).counts["contrast"] == {"test": {"in": 11, "out": 8, "excluded": 3}}
    write_jsonl(tmp_path / "b" / "misc" / "train.jsonl", UNIFIEDQA[("misc", "train")])
    assert cs.main(["--source", str(tmp_path / "b"), "--cache-dir", str(cache_dir), "--output", str(tmp_path / "out")]) == 2
    assert "error: no contrast pair among 1 items (0 edges)" in capsys.readouterr().err


# ---- the threshold: calibrated for the packaged MiniLM ------------------------------

# Option pairs in the style of the UnifiedQA sources, labelled by hand: paraphrases, inflections and synonyms
# (equivalent) against co-hyponyms, antonyms and near-misses (not equivalent).
EQUIVALENT = [
    ("the sun", "sunlight"), ("evaporation", "evaporating"), ("photosynthesis", "the process of photosynthesis"),
    ("a lightning strike", "lightning"), ("to save money", "so they could save money"), ("a magnet", "magnets"),
    ("two", "2"), ("buy a new car", "purchase a new car"), ("gravity", "gravitational force"),
    ("heat energy", "heat"), ("erosion", "soil erosion"), ("plants", "plant life"),
    ("a thermometer", "thermometers"), ("friction", "frictional force"), ("cells", "cell"),
    ("a car", "an automobile"), ("doctor", "physician"), ("ocean", "the sea"), ("carbon dioxide", "CO2"),
    ("go to sleep", "fall asleep"), ("fossil fuels", "fossil fuel"), ("solar energy", "energy from the sun"),
    ("a seed", "seeds"), ("vibrations", "vibration"), ("to get some exercise", "exercise"), ("wind", "the wind"),
    ("sound waves", "sound"), ("they would feel grateful", "grateful"), ("melting", "it melts"),
    ("temperature", "the temperature"), ("the heart", "heart"), ("water vapor", "steam"), ("happy", "glad"),
    ("oxygen", "O2"), ("a store", "a shop"), ("sick", "ill"), ("rocks", "stones"), ("big", "large"),
    ("to be polite", "politeness"), ("an earthquake", "earthquakes"),
]
NOT_EQUIVALENT = [
    ("Mars", "Venus"), ("Saturn", "Jupiter"), ("Earth", "Mars"), ("blue", "red"), ("blue", "green"),
    ("red", "green"), ("increases", "decreases"), ("increase", "decrease"), ("hot", "cold"), ("north", "south"),
    ("evaporation", "condensation"), ("mitosis", "meiosis"), ("oxygen", "carbon dioxide"),
    ("kinetic energy", "potential energy"), ("a thermometer", "a barometer"), ("sell the car", "buy the car"),
    ("the moon", "the sun"), ("water", "water vapor"), ("10", "12"), ("solid", "liquid"), ("liquid", "gas"),
    ("weathering", "erosion"), ("herbivore", "carnivore"), ("a mammal", "a reptile"), ("summer", "winter"),
    ("sound", "light"), ("conduction", "convection"), ("predator", "prey"),
    ("they would feel sad", "they would feel happy"), ("open the window", "close the window"),
    ("an increase in temperature", "a decrease in temperature"), ("the left side", "the right side"),
    ("more", "less"), ("bacteria", "viruses"), ("an hour", "a minute"), ("warm clothes", "a swimsuit"),
    ("honey", "milk"), ("happy", "sad"), ("mitochondria", "chloroplasts"), ("a week", "a year"),
]


def test_the_default_threshold_is_the_calibration_of_the_packaged_embedder(tmp_path, cache_dir):
    rows = [{"first": a, "second": b, "equivalent": True} for a, b in EQUIVALENT] + \
           [{"first": a, "second": b, "equivalent": False} for a, b in NOT_EQUIVALENT]
    write_jsonl(tmp_path / "pairs.jsonl", rows)
    pairs = calibration.read_pairs(tmp_path / "pairs.jsonl")
    embedder = embeddings.resolve_embedder(None)
    result = calibration.calibrate(pairs, embedder, embeddings.EmbeddingCache(cache_dir, embedder))
    assert result.threshold == calibration.DEFAULT_THRESHOLD == 0.78
    assert result.summary(embedder.id, pairs) == calibration.MEASURED  # the figures the card quotes
    # the paper's examples are edges at the default and not at the paper's 0.85
    assert result.paper_examples == {"rain / rainfall": 0.80, "sun / sunlight": 0.83}
    assert all(calibration.DEFAULT_THRESHOLD <= v < calibration.PAPER_THRESHOLD for v in result.paper_examples.values())
    # the calibration beats the paper's threshold on the labelled set
    assert (result.recall + result.rejection) / 2 > (result.paper_threshold_recall + result.paper_threshold_rejection) / 2
    assert builder_args(cache_dir).threshold is None  # the arguments as parsed: the options derive the default
    assert builder_options(cache_dir).threshold == 0.78


def test_the_papers_examples_make_an_edge_at_the_default_threshold(tmp_path, cache_dir):
    """rain/rainfall (0.80) and sun/sunlight (0.83) were no edge at 0.85 with MiniLM."""
    rows = [
        {"question": "What falls from storm clouds as liquid water?", "choices": ["rain", "sunlight", "wind"], "answer": "A"},
        {"question": "What does a solar panel turn into electricity?", "choices": ["rainfall", "sun", "snow"], "answer": "B"},
    ]
    write_jsonl(tmp_path / "uqa" / "sci" / "test.jsonl", rows)
    source = load_source(BENCHMARKS["unifiedqa"], str(tmp_path / "uqa"))
    build = make(source, builder_options(cache_dir))
    [first, second] = build.configs["contrast"]["test"]
    assert set(first.choices) == set(second.choices) == {"rain", "sun"}
    assert (first.metadata["gold_similarity"], second.metadata["gold_similarity"]) == \
           (pytest.approx(0.80), pytest.approx(0.83))
    assert first.metadata["replaced_distractor"] == "sunlight" and second.metadata["replaced_distractor"] == "rainfall"
    graph_summary = build.release.card_context["graph"]
    assert (graph_summary["edges"], graph_summary["edges_identical_texts"], graph_summary["edges_identical_texts_percent"]) == (1, 0, 0.0)
    with pytest.raises(UserError, match="no contrast pair among 2 items"):
        make(source, builder_options(cache_dir, "--threshold", "0.85"))


def test_threshold_options_are_checked():
    for argv, message in [(["--threshold", "0.855"], "at most 2 decimals"), (["--threshold", "1.5"], r"argument --threshold: must be a finite number above 0 and at most 1, got 1\.5"),
                          (["--embedder", "some/model"], "--embedder needs --threshold")]:
        with pytest.raises(UserError, match=message):
            cs.BUILDER.options_from(argv)


def test_the_card_reports_identical_edges_and_the_yield_against_the_paper(tmp_path, cache_dir):
    build = build_fixture(tmp_path, cache_dir)
    graph_summary = build.release.card_context["graph"]
    assert (graph_summary["edges_identical_texts"], graph_summary["edges_identical_texts_percent"]) == (7, 100.0)
    assert (graph_summary["kept_edges_identical_texts_percent"], graph_summary["paper_yield_percent"]) == (100.0, 10.77)
    table = build.release.statistics["Similarity of the edges"]
    assert table.row("all edges")["identical texts"] == 14 and table.row("all edges")["values"] == 14
    cs.main(["--source", str(tmp_path / "unifiedqa"), "--cache-dir", str(cache_dir), "--output", str(tmp_path / "out")])
    card = (tmp_path / "out" / "README.md").read_text()
    assert "**100.0% of the edges**\n(7 of 7)" in card and "against the paper's 10.77%" in card
    assert "calibrated for this embedder" in card and "at least **0.78**" in card
    # the random partner's window is the builder's, and no figure of another build is printed as this one's
    assert f"drawn among the {2 * mining.LENGTH_WINDOW} questions of its source" in card and "77-81%" not in card


# ---- determinism: the bytes do not depend on the embedding batches -------------------


def test_edges_do_not_move_when_the_embeddings_move_by_float_noise():
    records = [record("a", "alpha", "beta"), record("b", "beta", "alpha"), record("d", "delta", "eps~"),
               record("e", "epsilon", "delta~")]
    pool = graph.make_pool(records, cross_source=True, cross_split=False)
    vectors = embed(pool, {"eps~": ("epsilon", 0.90), "delta~": ("delta", 0.87)})
    noisy = vectors + np.random.default_rng(0).normal(0, 3e-7, vectors.shape).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    assert not np.array_equal(noisy, vectors)
    clean, moved = graph.find_edges(pool, vectors, 0.85), graph.find_edges(pool, noisy, 0.85)
    for name in clean.__dataclass_fields__:
        assert getattr(clean, name).tolist() == getattr(moved, name).tolist(), name
    assert clean.first_similarity.tolist() == [1.0, 0.87]  # identical texts: exactly 1.0


@pytest.mark.slow
def test_release_bytes_do_not_depend_on_the_batch_size(tmp_path):
    source = str(write_unifiedqa(tmp_path))
    for run, batch in [("large", ["--batch-size", "256", "--batch-tokens", "1024"]),
                       ("small", ["--batch-size", "1", "--batch-tokens", "8"])]:
        assert cs.main(["--source", source, "--cache-dir", str(tmp_path / f"cache-{run}"), "--output",
                        str(tmp_path / run), *batch]) == 0
    large, small = _release_digests(tmp_path / "large"), _release_digests(tmp_path / "small")
    assert large == small and len(large) == 9


# ---- items with duplicated options are left out of the pool, and counted ------------


def test_items_with_duplicated_options_are_counted_not_mined(tmp_path, cache_dir):
    rows = [
        {"question": "Which planet is called the red planet?", "choices": ["Mars", "Venus", "Jupiter"], "answer": "A"},
        {"question": "Which planet has the Great Red Spot?", "choices": ["Pluto", "Jupiter", "Mars"], "answer": "B"},
        {"question": "Which planet is the hottest?", "choices": ["Venus", "Mars", " Mars "], "answer": "A"},  # duplicated
        {"question": "Which numeral is two in lower case?", "choices": ["ii", "II", "iv"], "answer": "A"},  # case differs: kept
    ]
    write_jsonl(tmp_path / "uqa" / "sci" / "test.jsonl", rows)
    build = make(load_source(BENCHMARKS["unifiedqa"], str(tmp_path / "uqa")), builder_options(cache_dir))
    summary = build.release.card_context["graph"]
    assert (summary["rows_in"], summary["not_mined_duplicate_choices"], summary["vertices"], summary["pairs"]) == (4, 1, 3, 1)
    report = validate(build)
    assert report.exclusion_reasons == {"test": {"duplicate_choices": 1, "no_contrast_partner": 1}}
    duplicate = next(e for e in build.exclusions.entries if e.reason == "duplicate_choices")
    assert duplicate.id == uid("sci", "test", 2) and duplicate.field == "choices[2]"
    assert report.counts["contrast"]["test"] == {"in": 4, "out": 2, "excluded": 2}


# ---- the embedded sample and the lm-eval tasks ---------------------------------


def test_the_embedded_sample_builds_with_no_option(sample_releases):
    out = sample_releases.release("contrast_sets")
    for config in CONFIGS:
        loaded = datasets.load_dataset(str(out), config)
        assert (loaded["test"].num_rows, loaded["train"].num_rows) == (14, 2)
    edges = [json.loads(line) for line in (out / "contrast_edges.jsonl").read_text().splitlines()]
    assert len(edges) == 8 and all(e["matched"] for e in edges)
    # one pair joins two sources through rain / rainfall (0.80), not through identical texts
    cross = [e for e in edges if e["first"].split("/")[1] != e["second"].split("/")[1]]
    assert [(e["first"], e["second"], e["second_similarity"]) for e in cross] == \
           [("unifiedqa/arc/test/6", "unifiedqa/qasc/test/3", 0.8)]
    manifest = json.loads((out / "lm_eval" / "manifest.json").read_text())
    assert [(t["task"], t["config"], t["split"], t["role"]) for t in manifest["tasks"]] == [
        ("contrast_sets_question_and_choices", "contrast", "test", "question_and_choices"),
        ("contrast_sets_choices_only", "choices_only", "test", "choices_only")]


def test_real_lm_eval_loads_both_tasks_of_the_release(sample_releases):
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(sample_releases.release("contrast_sets") / "lm_eval"), include_defaults=False)
    loaded = manager.load(["contrast_sets"])
    assert sorted(loaded["group_map"]["contrast_sets"]) == ["contrast_sets_choices_only",
                                                             "contrast_sets_question_and_choices"]
    tasks = loaded["tasks"]
    full, only = tasks["contrast_sets_question_and_choices"], tasks["contrast_sets_choices_only"]
    full_docs, only_docs = list(full.test_docs()), list(only.test_docs())
    assert len(full_docs) == len(only_docs) == 14
    doc = full_docs[0]
    options = f"A. {doc['choices'][0]}\nB. {doc['choices'][1]}\nAnswer:"
    assert full.doc_to_text(doc) == f"{doc['question']}\n{options}"
    assert only.doc_to_text(only_docs[0]) == options and only_docs[0]["question"] == ""
    assert full.doc_to_choice(doc) == ["A", "B"] and full.doc_to_target(doc) == doc["answer"]
    assert only.fewshot_context(only_docs[0], 0).startswith("The following are the options of multiple choice")
    # the two questions of a pair are one choices-only input with two different golds
    by_pair = defaultdict(list)
    for d in only_docs:
        by_pair[d["metadata"]["pair_id"]].append(d)
    assert all(len(p) == 2 and only.doc_to_text(p[0]) == only.doc_to_text(p[1]) and p[0]["answer"] != p[1]["answer"]
               for p in by_pair.values())


def test_a_blank_question_is_a_malformed_row_never_mined(tmp_path, cache_dir):
    """Regression (adversarial review): a blank question was mined, and could be matched into a contrast pair
    whose first question asks nothing. Every source adapter now excludes it as a malformed row."""
    rows = [
        {"question": "Which planet is called the red planet?", "choices": ["Mars", "Venus", "Jupiter"], "answer": "A"},
        {"question": "Which planet has the Great Red Spot?", "choices": ["Pluto", "Jupiter", "Mars"], "answer": "B"},
        {"question": "   ", "choices": ["Jupiter", "Mars"], "answer": "A"},  # would make an edge with the first
    ]
    write_jsonl(tmp_path / "uqa" / "sci" / "test.jsonl", rows)
    build = make(load_source(BENCHMARKS["unifiedqa"], str(tmp_path / "uqa")), builder_options(cache_dir))
    summary = build.release.card_context["graph"]
    assert (summary["rows_in"], summary["vertices"], summary["pairs"]) == (3, 2, 1)
    report = validate(build)
    assert report.exclusion_reasons == {"test": {"malformed_row": 1}}
    [blank] = build.exclusions.entries
    assert (blank.id, blank.field, blank.detail) == (uid("sci", "test", 2), "question", "empty question")
    assert sorted(r.id for r in build.configs["contrast"]["test"]) == [uid("sci", "test", 0), uid("sci", "test", 1)]


# ---- equivalences the embedder cannot judge; the random partner's length ----------


@pytest.mark.parametrize("first, second, reason", [
    # replaced distractors read on the real UnifiedQA build
    ("1", "3", "numbers"), ("27°C", "0°C", "numbers"), ("104 grams", "32.0 grams", "numbers"),
    ("liquid into a gas", "Gas changes to liquid", "reversed"),
    # forms in no fixture
    ("about 1,200 km", "about 1,500 km", "numbers"), ("two moons", "three moons", "numbers"),
    ("It is not a mammal", "It is a mammal", "negation"), ("Plants can't move", "Plants can move", "negation"),
    ("The pressure increases", "The pressure decreases", "antonym"), ("warmer water", "colder water", "antonym"),
    ("heat flows from the pan to the hand", "heat flows from the hand to the pan", "reversed"),
    ("Earth rotates on its axis.", "Earth is tilted on its axis.", "substituted"),  # unifiedqa/arc/train/243
    ("friend's house", "neighbor's house", "substituted"), ("life and death", "death", "conjunction"),
    ("digestive and muscular", "digestive", "conjunction"),
])
def test_texts_that_differ_in_number_negation_antonym_or_direction_never_match(first, second, reason):
    assert contradicts(first, second) == reason
    assert contradicts(second, first) == reason


@pytest.mark.parametrize("first, second", [
    ("rain", "rainfall"), ("sun", "sunlight"), ("32 grams", "32.0 grams"), ("three", "3"), ("sunlight", "the sun"),
    ("a circuit that is closed", "a circuit was closed"), ("becoming tired", "tiredness"),
    ("Rain and snow", "snow and rain"), ("A dozen eggs", "12 eggs"), ("Evaporation", "evaporation."),
])
def test_paraphrases_still_match(first, second):
    assert contradicts(first, second) is None


def test_a_contradicting_distractor_is_never_the_equivalence_of_an_edge():
    """The embedder puts "104 grams" at 0.95 from "32.0 grams": no edge; the same layout with a paraphrase is one."""
    records = [record("a", "104 grams", "a rock"), record("b", "a stone", "32.0 grams"),
               record("c", "liquid into a gas", "ice"), record("d", "frozen water", "Gas changes to liquid")]
    similar = {"32.0 grams": ("104 grams", 0.95), "a stone": ("a rock", 0.95),
               "gas changes to liquid": ("liquid into a gas", 0.95), "frozen water": ("ice", 0.95)}
    pool = graph.make_pool(records, cross_source=True, cross_split=False)
    assert edge_set(pool, graph.find_edges(pool, embed(pool, similar), 0.85)) == {}
    records[1] = record("b", "a stone", "104.0 grams")
    similar["104.0 grams"] = similar.pop("32.0 grams")
    pool = graph.make_pool(records, cross_source=True, cross_split=False)
    assert edge_set(pool, graph.find_edges(pool, embed(pool, similar), 0.85)) == {("a", "b"): (0.95, 0.95)}


def test_the_validator_refuses_a_replacement_that_contradicts_when_the_miner_s_veto_is_blinded(tmp_path, cache_dir,
                                                                                               monkeypatch):
    result = build_fixture(tmp_path, cache_dir)
    validate(result)
    records = result.configs["contrast"]["train"] if "train" in result.configs["contrast"] else next(
        iter(result.configs["contrast"].values()))
    record_ = records[0]
    records[0] = record_.with_metadata(replaced_distractor="not " + record_.choices[1 - record_.answer])
    with pytest.raises(ValidationFailed, match="replacement_keeps_meaning"):
        validate(result)


def test_a_random_partner_comes_from_the_same_source_with_a_gold_of_similar_length():
    """Before, "pick the shorter option" was right 77-81% of the time in random_pairs on UnifiedQA: partners came
    from any source. Now the partner's gold is shorter about half of the time, in every source."""
    rng = np.random.default_rng(0)
    records = []
    for source, scale in (("short", 1), ("long", 8)):
        for i in range(300):
            gold = "w" * int(scale * rng.integers(3, 30)) + f" {source} {i}"
            records.append(record(f"{source}{i:03d}", gold, f"d{source}{i}", source=source))
    pool = graph.make_pool(records, cross_source=True, cross_split=False)
    embeddings = np.eye(len(pool.texts), dtype=np.float32)
    partners = mining.random_partners(pool, embeddings, 0.78, range(len(pool)), seed=0)
    assert all(graph.source_name(pool.records[v]) == graph.source_name(pool.records[p]) for v, p in partners.items())
    length = [len(pool.texts[g]) for g in pool.gold]
    # "pick the shorter option", a tie counting half: at chance
    shorter = np.mean([(length[v] < length[p]) + 0.5 * (length[v] == length[p]) for v, p in partners.items()])
    assert 0.45 <= shorter <= 0.55


def test_questions_left_unpaired_by_the_mining_do_not_count_against_max_excluded(tmp_path, cache_dir):
    """Counting every exclusion against --max-excluded stopped `contrast_sets --benchmark unifiedqa` on the full
    data (93% of the questions have no partner, by design); unpaired questions are the method's selection."""
    from builders.core.pipeline.cli import check_excluded_share
    result = build_fixture(tmp_path, cache_dir)
    reasons = {e.reason for e in result.exclusions.entries}
    assert {"no_contrast_partner"} <= reasons
    check_excluded_share(result, 0.1, cs.BUILDER.selection_reasons)  # 1 of 14 not mined, the rest unpaired
    with pytest.raises(UserError, match="would be left out"):
        check_excluded_share(result, 0.1)
