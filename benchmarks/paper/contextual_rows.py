"""The rows of issue #61's study: the registry's MiniLM (``--transformer all-minilm-l6-v2``) under the
easy-first decoder, beside the English recipes, for attention_study.py to train and keep.

    python benchmarks/paper/attention_study.py --rows pos-minilm pos-bilstm-minilm --seeds 1 2 3 4 5
    python benchmarks/paper/attention_study.py --report

Each row is the English recipe of its task (POS: the POS defaults with GloVe 6B 50-d, temperature 0.25
with vectors; NER: the NER defaults with GloVe, ``--task ner --pretrained glove-6b-50d``) with MiniLM's
vectors added under the BiLSTM, frozen, mean of each word's sub-words, unless the row varies one of
them. The first POS rows (``pos-minilm`` and ``pos-bilstm-minilm``) read MiniLM's
last hidden state (``--transformer-layers -1``, the default when they were defined and run); the rows
defined after a linear probe found the last state the poorest for both tasks
(benchmarks/analyses/layer_probe.py) read today's default, the last four, unless they vary the layers.
attention_study.py trains each row in one process on one thread, continues an interrupted row from its
checkpoint, skips a finished one, and writes
benchmarks/results/attention-study/ROW[-seedK].json, from which ``--report`` rebuilds the tables.
"""

from __future__ import annotations

MINILM = ["--transformer", "all-minilm-l6-v2"]
POS_RECIPE = ["--pretrained", "glove-6b-50d", *MINILM]
POS_LAST = [*POS_RECIPE, "--transformer-layers", "-1"]  # the state the POS rows were run on
NER_RECIPE = ["--pretrained", "glove-6b-50d", *MINILM]
# the fine-tuning rows: 16 sentences per update, the loss averaged, shuffled, Adam
BATCHES_OF_16 = [
    *("--batch-size", "16", "--reduction", "mean", "--shuffle"),
    *("--optimizer", "adam", "--lr", "0.001"),
]

# row → (what it varies, flags, epochs)
POS_ROWS: dict[str, tuple[str, list[str], int]] = {
    "pos-minilm": (
        "NEF-F, N = L, the POS English recipe with MiniLM (frozen, last layer, mean)",
        POS_LAST,
        20,
    ),
    "pos-bilstm-minilm": ("BiLSTM (N = 0), the same with MiniLM", [*POS_LAST, "--model", "bilstm"], 20),
    # the pooling rows read today's default layers, against pos-minilm-last4 (mean pooling, the default)
    "pos-minilm-first": ("MiniLM, first sub-word", [*POS_RECIPE, "--transformer-pooling", "first"], 20),
    "pos-minilm-last": ("MiniLM, last sub-word", [*POS_RECIPE, "--transformer-pooling", "last"], 20),
    "pos-minilm-first-last": (
        "MiniLM, first and last sub-words",
        [*POS_RECIPE, "--transformer-pooling", "first_last"],
        20,
    ),
    "pos-minilm-last4": (
        "MiniLM, layers -4..-1 averaged",
        [*POS_RECIPE, "--transformer-layers", "-4,-3,-2,-1"],
        20,
    ),
    "pos-bilstm-minilm-last4": (
        "BiLSTM (N = 0), the same on layers -4..-1",
        [*POS_RECIPE, "--transformer-layers", "-4,-3,-2,-1", "--model", "bilstm"],
        20,
    ),
    # a linear probe on each hidden state (benchmarks/analyses/layer_probe.py) finds EWT's tags best in
    # state 2 and worst in the last, which the recipe reads
    "pos-minilm-layer2": (
        "MiniLM, hidden state 2 (the probe's best)",
        [*POS_RECIPE, "--transformer-layers", "2"],
        20,
    ),
    "pos-bilstm-minilm-layer2": (
        "BiLSTM (N = 0), the same on hidden state 2",
        [*POS_RECIPE, "--transformer-layers", "2", "--model", "bilstm"],
        20,
    ),
    "pos-minilm-mix": (
        "MiniLM, a learned mix of all 7 hidden states",
        [
            *POS_RECIPE,
            *("--transformer-layers", "0,1,2,3,4,5,6", "--transformer-mix"),
            # seven states a word: EWT train and dev take 2.2 GB, past the default 2 GB the cache
            # would drop and recompute every sentence each epoch
            *("--transformer-cache-mb", "4096"),
        ],
        20,
    ),
    # fine-tuning costs the transformer's backward pass at every update (about 300 training words per
    # second of a shared core, against MiniLM's ~1,500 words/s forward): 16 sentences per update, Adam,
    # 5 epochs; the frozen row beside it trains the same way, so that the two differ in fine-tuning alone
    "pos-minilm-finetune": (
        "MiniLM fine-tuned (lr 2e-5; the last four states), 16 sentences per update, Adam lr 0.001",
        [*POS_RECIPE, "--transformer-finetune", *BATCHES_OF_16],
        5,
    ),
    "pos-minilm-b16": (
        "MiniLM frozen (the last four states), trained as pos-minilm-finetune is",
        [*POS_RECIPE, *BATCHES_OF_16],
        5,
    ),
}
NER_ROWS: dict[str, tuple[str, list[str], int]] = {
    "ner-minilm": (
        "NEF-CRF-F, N = 5, the NER English recipe with MiniLM (the last four states)",
        NER_RECIPE,
        50,
    ),
    "ner-bilstm-crf-minilm": ("BiLSTM-CRF, the same with MiniLM", [*NER_RECIPE, "--model", "bilstm"], 50),
    # what the uncased model costs: GloVe 6B and MiniLM are both uncased, so without the case feature,
    # the characters and the affix n-grams (which keep their case) no input sees a capital letter
    "ner-minilm-nocase": (
        "NER with MiniLM and no input that sees case: no case feature, characters or affix n-grams",
        [*NER_RECIPE, "--set", "model.case_dim=0", "--char-dim", "0", "--affix-dim", "0"],
        50,
    ),
}
