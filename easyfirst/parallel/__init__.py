"""Processes on the cores of one machine, shared by training and tagging: which cores this process may
use and how many processes a call gets (``cores``, free of torch), and forked workers that inherit the
model at the fork and run one function per message (``workers``; Hogwild's workers in
``easyfirst.training.hogwild`` and the tagging pool in ``easyfirst.tagging.pool`` are both built on it).

May import: ``atomic`` (signals held over forks and ends) and ``errors``.
"""
