

# ---- attack: an object that says it equals anything ---------------------------------------
# otter-grader 7.0.0 gives this full marks: its assertions compare with == in the student's
# interpreter. Here the value crosses to the grader as data: it is not a torch.Tensor.
class AlwaysEqual:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __abs__(self): return 0.0
    def __sub__(self, other): return self
    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = __sub__
    def __lt__(self, other): return True
    __le__ = __lt__
    def __gt__(self, other): return False
    __ge__ = __eq__
    def __float__(self): return 0.0
    def __len__(self): return 2
    def __getitem__(self, i): return self
    def __iter__(self): return iter([self, self])
    def __hash__(self): return 0
    def __getattr__(self, name): return lambda *a, **k: self  # .all(), .allclose(), .item(), .shape...
    def __repr__(self): return "tensor([6., 12.])"


def hvp(f, x, v):
    return AlwaysEqual()
