

# ---- attack: return values too big to send ----------------------------------------------------------
# A tensor of 1e8 elements (400 MB), a list nested 100000 deep, a list of a million items.
def hvp(f, x, v):
    return torch.zeros(10**8)


def jacobian_rows(f, x):
    nested = []
    for _ in range(100_000):
        nested = [nested]
    return nested


def nth_derivative(f, x, n):
    return list(range(10**6))
