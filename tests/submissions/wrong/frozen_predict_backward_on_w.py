"""Calls backward on the prediction "to check the graph", which writes into the caller's w.grad."""
EXERCISE = "frozen_predict"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "frozen_predict.argument_grad_set"


def frozen_predict(w, x):
    y = x @ w
    y.sum().backward()
    return y.detach()
