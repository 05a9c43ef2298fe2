"""Settings for every test and doctest of the repository."""

import os
import shutil
import tempfile


def pytest_configure(config):
    """The tests never read or write the user's own cache (downloaded banks, computed LP bounds): one of their own."""
    config.test_cache = tempfile.mkdtemp(prefix="spherecodes-test-cache-")
    os.environ["SPHERECODES_CACHE"] = config.test_cache


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "test_cache", ""), ignore_errors=True)
