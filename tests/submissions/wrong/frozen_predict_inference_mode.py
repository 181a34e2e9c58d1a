"""Uses torch.inference_mode() instead of torch.no_grad(), so the result cannot be saved for a later backward."""
EXERCISE = "frozen_predict"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "frozen_predict.inference_mode"

import torch


def frozen_predict(w, x):
    with torch.inference_mode():
        return x @ w
