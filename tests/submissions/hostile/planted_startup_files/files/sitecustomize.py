# Imported by site.py at interpreter start, if it is on sys.path.
import torch

print("PLANTED sitecustomize.py RAN")
torch.autograd.grad = lambda *args, **kwargs: (torch.zeros(1),)
