import torch


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        r = torch.hypot(x, torch.full_like(x, eps) ** 0.5)
        ctx.save_for_backward(x, r)
        return r

    @staticmethod
    def backward(ctx, upstream):
        x, r = ctx.saved_tensors
        return torch.div(x, r).mul(upstream), None


def numerical_gradient(f, x, eps=1e-6):
    x64 = x.detach().to(dtype=torch.float64)
    basis = torch.eye(x64.numel(), dtype=torch.float64, device=x.device) * eps
    with torch.no_grad():
        diffs = [f(x64 + b.view(x64.shape)) - f(x64 - b.view(x64.shape)) for b in basis]
    g = torch.tensor(diffs, dtype=torch.float64, device=x.device) / (2 * eps) if diffs else torch.zeros_like(x64)
    return g.view(x.shape).to(x.dtype)


@torch.no_grad()
def frozen_predict(w, x):
    y = (x.unsqueeze(-1) * w).sum(-2)
    return y
