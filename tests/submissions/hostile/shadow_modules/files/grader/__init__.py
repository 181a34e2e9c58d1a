print("SHADOW grader package imported")
__version__ = "666"
