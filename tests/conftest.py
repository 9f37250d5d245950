import pytest
import torch


@pytest.fixture(autouse=True, scope="session")
def _single_thread():
    """Tiny problems: one thread is fastest and makes timings independent of the CI box."""
    torch.set_num_threads(1)
