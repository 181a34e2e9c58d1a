"""Turns gradient recording off with torch.set_grad_enabled(False) instead of a with torch.no_grad() block, and never turns it back on."""
EXERCISE = "frozen_predict"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "frozen_predict.grad_left_disabled"

import torch


def frozen_predict(w, x):
    torch.set_grad_enabled(False)
    return x @ w
