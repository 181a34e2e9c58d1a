

# ---- attack: one function never returns -------------------------------------------------------------
def jacobian_rows(f, x):
    while True:
        pass
