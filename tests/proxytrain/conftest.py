"""Shared fixtures of the proxytrain tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: these models are tiny, and on a shared 2-core machine OpenMP barriers
    between busy threads cost more than the second thread gains."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
