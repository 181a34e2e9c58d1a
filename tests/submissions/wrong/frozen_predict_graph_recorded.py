"""Computes x @ w with grad enabled, so the result is attached to w's graph."""
EXERCISE = "frozen_predict"
MODULE = "extensions.py"
PUBLIC = "fail"


def frozen_predict(w, x):
    return x @ w
