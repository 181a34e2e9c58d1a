

# ---- attack: a torch.Tensor subclass whose __torch_function__ wins every comparison ------------
# Wrong values (zeros) that answer True to ==, allclose, isclose, equal, all... in any process
# that compares them with torch. The grader accepts exact torch.Tensor only.
class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "isclose", "eq", "__eq__", "all", "any", "__bool__", "is_nonzero"):
            return True
        if name in ("ne", "__ne__"):
            return False
        return super().__torch_function__(func, types, args, kwargs or {})


def hvp(f, x, v):
    return torch.zeros_like(x).as_subclass(Liar)
