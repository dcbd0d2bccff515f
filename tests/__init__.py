"""Test suite for scifig (a regular package, so it wins over the ``tests`` package latex2sympy2 installs)."""
