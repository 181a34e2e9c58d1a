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
