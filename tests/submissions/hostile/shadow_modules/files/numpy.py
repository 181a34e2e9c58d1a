print("SHADOW numpy.py imported")
raise ImportError("shadowed numpy")
