"""The CUDA tests run in Numba's simulator (tests/conftest.py sets NUMBA_ENABLE_CUDASIM=1 before
numba is imported) or on a GPU; with neither, they are skipped, saying why."""
import pytest

import memlab.cuda as mc


def pytest_collection_modifyitems(config, items):
    if mc.available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU and the simulator is off (NUMBA_ENABLE_CUDASIM)")
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
