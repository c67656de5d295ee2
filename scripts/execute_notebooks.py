"""Re-execute notebooks in place so they are stored with fresh outputs.

    .venv/bin/python scripts/execute_notebooks.py lessons/01_*.ipynb

Runs each notebook top to bottom in its own folder with this environment's
kernel, stores outputs and widget state, and fails on the first cell error.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# One BLAS thread, as in the tests (tests/conftest.py): stored outputs must not depend on the cores.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 300) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.time()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                   store_widget_state=True).execute()
    nb.metadata.pop("widgets", None) if not any(
        "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])) else None
    nbformat.write(nb, path)
    return time.time() - start


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        p = Path(arg)
        print(f"{p}: {execute(p):.1f} s", flush=True)
