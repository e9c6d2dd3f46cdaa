"""One `./sanlens demo` at a time on a stack (sanlensctl/demo.py): a second one would replace the first one's span
while it plays."""

from __future__ import annotations

import os

import pytest

from sanlensctl import config, demo
from sanlensctl.errors import SanlensError


def test_a_second_demo_on_the_same_stack_is_refused_with_the_first_one_s_pid(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "RUN", tmp_path / "run")
    first = demo._only_demo()
    with pytest.raises(SanlensError, match=f"another ./sanlens demo \\(pid {os.getpid()}\\) is playing"):
        demo._only_demo()
    first.close()  # the first demo ended
    demo._only_demo().close()
