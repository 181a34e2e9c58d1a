# The content of the archive members that try to climb out of the extraction folder. Were it
# extracted and imported, it would be the grad.py graded (and a file planted next to the
# submissions). Its functions return zeros.
import torch


def hvp(f, x, v):
    return torch.zeros_like(x)
