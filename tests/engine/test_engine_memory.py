"""The allocator setting of the ``relulab`` command (relulab.engine.memory)."""

import sys

import pytest

from relulab.engine.memory import MMAP_THRESHOLD_MAX, retain_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_glibc_accepts_the_settings_and_accepts_them_again():
    assert retain_freed_memory() is True
    assert retain_freed_memory(MMAP_THRESHOLD_MAX * 4, 2**40) is True  # clamped, not refused


def test_elsewhere_it_is_a_no_op(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert retain_freed_memory() is False
