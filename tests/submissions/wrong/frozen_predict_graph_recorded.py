"""Computes x @ w with grad enabled, so the result is attached to w's graph."""
EXERCISE = "frozen_predict"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "frozen_predict.not_detached"


def frozen_predict(w, x):
    return x @ w
