"""Test-session setup: the numeric libraries capped as the command line caps them
(``corpusmix.numerics.configure``, before numpy and torch load), so a run inside the test process and
a ``corpusmix`` subprocess compute the same bits."""

import sys

from corpusmix import numerics

assert "numpy" not in sys.modules and "torch" not in sys.modules, "numpy/torch loaded before the caps"
numerics.configure()
