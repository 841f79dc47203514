"""easyfirst: neural easy-first sequence taggers."""

__version__ = "0.1.0"
