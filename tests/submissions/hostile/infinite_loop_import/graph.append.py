

# ---- attack: importing this module never finishes ---------------------------------------------------
while True:
    pass
