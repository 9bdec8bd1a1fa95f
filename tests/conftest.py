import os

from hypothesis import settings

# CI=true makes Hypothesis load its built-in derandomised "ci" profile (docs/decisions.md#hypothesis-seeds).
settings.register_profile("dev", deadline=None, max_examples=40)
if not os.environ.get("CI"):
    settings.load_profile("dev")
