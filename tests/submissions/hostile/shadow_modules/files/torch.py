# A module named like the library the grader needs: if it were imported instead, nothing works.
print("SHADOW torch.py imported")
raise ImportError("shadowed torch")
