"""Shared test set-up: headless matplotlib, hypothesis profiles."""
import os

os.environ.setdefault("MPLBACKEND", "Agg")

from hypothesis import settings  # noqa: E402

settings.register_profile("memlab", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("memlab")
