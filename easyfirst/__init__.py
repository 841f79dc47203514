"""easyfirst: neural easy-first sequence taggers (Martins & Kreutzer, EMNLP 2017).

>>> from easyfirst import Tagger
>>> Tagger.load().tag([["She", "reads", "a", "book", "."]])[0].tags
['PRON', 'VERB', 'DET', 'NOUN', 'PUNCT']
"""

__version__ = "0.3.0"  # CHANGELOG.md's latest entry (tests/package/test_docs.py); pyproject.toml reads it

__all__ = ["Tagger", "__version__"]


def __getattr__(name):  # import torch only when the API is used, so `easyfirst --help` stays fast
    if name == "Tagger":
        from easyfirst.api import Tagger

        return Tagger
    raise AttributeError(name)
