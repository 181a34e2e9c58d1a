

# ---- attack: exit while being imported (SystemExit: the import raises) -------------------------------
import sys

sys.exit(0)
