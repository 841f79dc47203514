"""The speed paths of the decoder and the BiLSTM: the same function as the reference, computed faster.

Read the reference first: :class:`easyfirst.model.sketch.SketchDecoder`'s generic step loop (Alg. 2,
Eqs. 1–7, every attention choice) and ``nn.LSTM`` in :mod:`easyfirst.model.encoder`. Then:

- ``fused`` runs instead of the generic loop for a **batch** whenever the attention is csoftmax (the
  default): the whole step loop as one autograd Function with Prop. 1's backward written out, so that
  autograd records one node instead of dozens per step (``SketchDecoder.forward`` decides).
- ``lean`` runs instead of both the batched BiLSTM and the decoder for **one sentence on the CPU** in
  float32 or float64 (``lean_applies``): the paper's regime of one sentence per update, and tagging a
  single sentence, in NumPy, with ``lstm`` (backpropagation through time by hand) and ``rows`` (one
  row's attention and its backward). ``lean.enabled = False`` turns it off.
- ``kernels`` are ``lean``'s time loops compiled by Numba (the extra ``fast``), taken in training when
  Numba is installed (``lean.compiled = False`` keeps the NumPy loops).

What keeps them equal to the reference: tests/test_fused_sketch.py and tests/test_lean.py compare outputs
and gradients of every path with the generic loop in float64 (csoftmax, sparsemax, softmax, the
prescribed orders and hard attention; NEF-S and NEF-F; N fixed and N = L; temperature and coverage), and
the compiled kernels with the NumPy loops.

May import: ``ops`` (csoftmax, the window map) only.
"""
