

# ---- attack: exit while being imported (os._exit: the worker is gone, no exception) -----------------
import os

os._exit(0)
