

# ---- a syntax error at the end of an otherwise correct module ----------------------------------------------
def broken(x:
    return x
