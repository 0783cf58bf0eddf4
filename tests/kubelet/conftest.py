# The fixtures live in harness.py, beside the helpers the tests import.
from harness import kubelet, make_kubelet  # noqa: F401
