"""``python -m memlab``: the ``memlab`` command (see :mod:`memlab.cli`)."""
import sys

from .cli import main

sys.exit(main())
