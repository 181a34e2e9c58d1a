import torch


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, eps):
        ctx.save_for_backward(inp)
        ctx.eps = eps
        return (inp.pow(2) + eps).sqrt()

    @staticmethod
    def backward(ctx, g):
        inp, = ctx.saved_tensors
        denom = torch.sqrt(inp ** 2 + ctx.eps)
        return g * (inp / denom), None


def numerical_gradient(f, x, eps=1e-6):
    base = x.detach().double()
    flat = base.flatten()
    out = []
    with torch.no_grad():
        for k in range(flat.numel()):
            up = flat.clone()
            down = flat.clone()
            up[k] += eps
            down[k] -= eps
            out.append((f(up.view_as(base)) - f(down.view_as(base))) / (2 * eps))
    return torch.stack(out).reshape(x.shape).to(x.dtype) if out else torch.zeros_like(x)


def frozen_predict(w, x):
    return torch.matmul(x.detach(), w.detach())
