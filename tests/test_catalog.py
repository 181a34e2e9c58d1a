"""points.yaml matches the spec's exercises and the test files, and bad catalogues are refused."""

import ast

import pytest

from grader import catalog
from grader.catalog import CatalogError

from conftest import SOLUTIONS

SPEC_EXERCISES = {
    "graph.py": ["graph_node_counts", "make_leaf", "intermediate_grads", "dynamic_doubling"],
    "backward.py": ["two_losses_grad", "weighted_backward"],
    "grad.py": ["partial_grads", "nth_derivative", "hvp", "jacobian_rows"],
    "accumulation.py": ["grads_per_step", "accumulate_microbatches", "gd_fit"],
    "inplace.py": ["add_into", "safe_add_", "shifted_sigmoid_and_grad"],
    "extensions.py": ["SmoothAbs", "numerical_gradient", "frozen_predict"],
}


def test_catalog_lists_the_19_exercises_of_the_spec():
    cat = catalog.load()
    listed = {}
    for e in cat.exercises:
        listed.setdefault(e.module, []).append(e.name)
    assert listed == SPEC_EXERCISES


def test_solution_modules_define_every_exercise():
    for module, names in SPEC_EXERCISES.items():
        tree = ast.parse((SOLUTIONS / module).read_text())
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert set(names) <= defined


def test_every_exercise_has_public_and_hidden_tests():
    for e in catalog.load().exercises:
        assert {t.folder for t in e.tests} == {"public", "hidden"}, e.name
        assert e.max_score > 0


def test_test_functions_and_yaml_agree():
    cat = catalog.load()
    for folder in ("public", "hidden"):
        defined = set()
        for path in (catalog.CASES_DIR / folder).glob("test_*.py"):
            tree = ast.parse(path.read_text())
            defined |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
        listed = {t.name for e in cat.exercises for t in e.tests if t.folder == folder}
        assert defined == listed, folder


@pytest.mark.parametrize("data, message", [
    ({}, "must map"),
    ({"x": {"public": {"t": 1}}}, "module"),
    ({"x": {"module": "a.py"}}, "lists no tests"),
    ({"x": {"module": "a.py", "public": {"t": -1}}}, "points"),
    ({"x": {"module": "a.py", "public": {"t": 1}}, "y": {"module": "a.py", "public": {"t": 1}}}, "both"),
])
def test_bad_catalogues_are_refused(data, message):
    with pytest.raises(CatalogError, match=message):
        catalog.parse(data)


@pytest.mark.parametrize("data, message", [
    ({"x": {"module": "a.py", "general": "t", "public": {"t": 1}}}, "list of test names"),
    ({"x": {"module": "a.py", "general": ["nope"], "public": {"t": 1}}}, "general names tests it does not list: nope"),
    ({"x": {"module": "a.py", "public": {"t": True}}}, "points"),
])
def test_bad_general_cases_are_refused(data, message):
    with pytest.raises(CatalogError, match=message):
        catalog.parse(data)


def test_every_exercise_has_a_docstring_check_worth_nothing():
    for e in catalog.load().exercises:
        checks = [t for t in e.tests if t.name.endswith("_docstring")]
        assert len(checks) == 1 and checks[0].folder == "public" and checks[0].points == 0, e.name


def test_examples_file_matches_the_stubs():
    """grader/cases/public/examples.json is what the stubs' docstrings hold (python -m grader.cases.examples)."""
    from grader.cases import examples

    assert examples.EXAMPLES_FILE.read_text(encoding="utf-8") == examples.render(examples.extract())
    assert set(examples.load()) == {e.name for e in catalog.load().exercises}, "every exercise shows an example"


@pytest.mark.parametrize("data, message", [
    ({"hvp": {}}, "'common'"),
    ({"common": {}, "nope": {}}, "neither 'common' nor an exercise"),
    ({"common": {"Bad-Key": {"en": "a", "zh": "b"}}}, "lower_case identifiers"),
    ({"common": {"k": {"en": "a"}}}, "needs 'en' and 'zh'"),
    ({"common": {"k": {"en": "a", "zh": "b", "hint": "c"}}}, "unknown fields"),
])
def test_bad_mistake_catalogues_are_refused(data, message):
    with pytest.raises(CatalogError, match=message):
        catalog.parse_mistakes(data, {"hvp"})


def test_every_mistake_key_the_cases_name_is_in_the_catalogue():
    """Keys named in the cases (mistake="...", mistakes={...}, errors={...}) resolve for their exercise."""
    import re

    listed = {key for section in catalog.load_mistakes().values() for key in section}
    named = set()
    for path in catalog.CASES_DIR.rglob("test_*.py"):
        text = path.read_text()
        named |= set(re.findall(r'mistake="([a-z_0-9]+)"', text))
        named |= set(re.findall(r'"([a-z_0-9]+)": (?:oracle|want|v \*|u \*|torch|sig|\(sig)', text))
        named |= set(re.findall(r'": "([a-z_0-9]+)"', text))
    assert named and named <= listed, sorted(named - listed)


def test_the_tests_fingerprint_follows_the_cases(tmp_path):
    import shutil

    copy = tmp_path / "cases"
    shutil.copytree(catalog.CASES_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert catalog.tests_sha256(copy) == catalog.tests_sha256()
    (copy / "points.yaml").write_text((copy / "points.yaml").read_text() + "\n# a comment\n")
    assert catalog.tests_sha256(copy) != catalog.tests_sha256()
