"""The model: built from the ``[model]`` and ``[loss]`` settings and the vocabularies alone.

Read in this order: ``settings`` (ModelConfig, LossConfig), ``tagger`` (embedder → BiLSTM → decoder →
output layer, Eq. 6), ``embedder`` (§5.1's word and affix features), ``encoder`` (the BiLSTM), ``sketch``
(the reference sketch-refinement decoder, Alg. 2 and Eqs. 1–7), ``crf`` (§5.2) and ``heads`` (extra
outputs, e.g. WMT18–20's gaps and source words). This is the reference for every setting; easyfirst.backends computes parts of it
faster for the settings each backend declares, and imports nothing from here.

May import: ``ops``, ``data`` (vocabularies, batches, features), ``losses`` and the bottom layer; never
``config``, ``tasks``, ``backends`` or anything above them.
"""
