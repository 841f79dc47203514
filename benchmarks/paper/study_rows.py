"""The rows of the attention study (attention_study.py): each a name → (what it varies, the flags of
`easyfirst train`, epochs). The paper's Table 1 and Table 4 rows in its reference regime, the factors
that make the attention sharp, the NER recipes measured on the way to the English recipe, the POS
recipe with Ma & Hovy's settings, and the contextual rows of contextual_rows.py; NER_ROWS are the
ones trained and scored on CoNLL-2003, ROWS all of them.
"""

from __future__ import annotations

from pathlib import Path

from contextual_rows import NER_ROWS as CONTEXTUAL_NER_ROWS
from contextual_rows import POS_ROWS as CONTEXTUAL_POS_ROWS
from pos_table import BATCHED, NER_SECTION_5_2

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ["--config", str(ROOT / "configs" / "pos-reference.toml")]

# row → (what it varies, flags, epochs)
ROWS: dict[str, tuple[str, list[str], int]] = {
    # Table 1 (English) at the paper's budget, in the reference regime
    "ref-bilstm": ("BiLSTM (N = 0)", [*REFERENCE, "--model", "bilstm"], 20),
    "ref-csoftmax": ("NEF-F csoftmax, N = L", REFERENCE, 20),
    "ref-sparsemax": ("NEF-F sparsemax, N = L", [*REFERENCE, "--attention", "sparsemax"], 20),
    "ref-nef-s": ("NEF-S csoftmax, N = L", [*REFERENCE, "--model", "nef-s"], 20),
    "ref-softmax": ("NEF-F softmax, N = L", [*REFERENCE, "--attention", "softmax"], 20),
    "ref-hard": ("vanilla easy-first (hard attention), N = L", [*REFERENCE, "--attention", "hard"], 20),
    "b16-csoftmax": (
        "NEF-F csoftmax, 16 sentences/update",
        [*BATCHED, "--attention-temperature", "1"],
        20,
    ),
    # Table 4 (the paper's ablations, §5.4: NER there, POS here) at the paper's budget, in the reference regime
    "ref-csoftmax-5": ("NEF-F csoftmax, N = 5", [*REFERENCE, "--sketch-steps", "5"], 20),
    "ref-no-concat-5": ("NEF-F w/out concat, N = 5", [*REFERENCE, "--sketch-steps", "5", "--no-concat"], 20),
    "ref-uniform-5": (
        "uniform attention, N = 5",
        [*REFERENCE, "--sketch-steps", "5", "--attention", "uniform"],
        20,
    ),
    "ref-hard-5": (
        "vanilla easy-first, N = 5",
        [*REFERENCE, "--sketch-steps", "5", "--attention", "hard"],
        20,
    ),
    "ref-left-to-right": ("left-to-right, N = L", [*REFERENCE, "--attention", "left-to-right"], 20),
    "ref-right-to-left": ("right-to-left, N = L", [*REFERENCE, "--attention", "right-to-left"], 20),
    # the factors of the study, ≥ 10 epochs
    "ref-b4": ("4 sentences/update (summed)", [*REFERENCE, "--batch-size", "4"], 10),
    "ref-lr0.05": ("lr 0.05", [*REFERENCE, "--lr", "0.05"], 20),
    "ref-lr0.2": ("lr 0.2", [*REFERENCE, "--lr", "0.2"], 10),
    # the other two models of Table 1 at lr 0.05 (with ref-lr0.05: the POS defaults since the study)
    "ref-lr0.05-bilstm": ("BiLSTM (N = 0), lr 0.05", [*REFERENCE, "--lr", "0.05", "--model", "bilstm"], 20),
    "ref-lr0.05-nef-s": (
        "NEF-S csoftmax, N = L, lr 0.05",
        [*REFERENCE, "--lr", "0.05", "--model", "nef-s"],
        20,
    ),
    "ref-temp0.5": (
        "attention temperature 0.5 (scores × 2)",
        [*REFERENCE, "--attention-temperature", "0.5"],
        10,
    ),
    "ref-temp0.25": (
        "attention temperature 0.25 (scores × 4)",
        [*REFERENCE, "--attention-temperature", "0.25"],
        20,
    ),
    "ref-lr0.05-temp0.25": (
        "lr 0.05 and attention temperature 0.25",
        [*REFERENCE, "--lr", "0.05", "--attention-temperature", "0.25"],
        20,
    ),
    # issue #26: recipes that aim at sharp attention and the default's accuracy at once
    "ref-lr0.05-temp0.5": (
        "lr 0.05 and attention temperature 0.5",
        [*REFERENCE, "--lr", "0.05", "--attention-temperature", "0.5"],
        20,
    ),
    "ref-lr0.05-temp0.35": (
        "lr 0.05 and attention temperature 0.35",
        [*REFERENCE, "--lr", "0.05", "--attention-temperature", "0.35"],
        20,
    ),
    "ref-lr0.05-anneal8": (
        "lr 0.05, temperature annealed 1 → 0.25 over epochs 1-8",
        [*REFERENCE, "--lr", "0.05", "--anneal-epochs", "8", "--anneal-from", "1", "--anneal-to", "0.25"],
        20,
    ),
    "b16-temp0.25": (
        "16/update, attention temperature 0.25",
        [*BATCHED, "--attention-temperature", "0.25"],
        20,
    ),
    "b16-temp0.5": ("16/update, attention temperature 0.5", [*BATCHED, "--attention-temperature", "0.5"], 20),
    "ref-vinit4": ("v initialised × 4", [*REFERENCE, "--v-init", "4"], 10),
    "ref-vinit16": ("v initialised × 16", [*REFERENCE, "--v-init", "16"], 10),
}
# issue #26, item 4: the same question for NER, the NER defaults of then (NEF-CRF-F, N = 5, the §5.2
# values: 16 sentences per update, lr 0.1) with the candidate recipes; scored (F1) and analysed on
# CoNLL-2003 dev (eng.testa). The rows up to the English recipe train the §5.2 values spelled out
# (NER_SECTION_5_2), which were the task's defaults when they were measured
NER_ROWS: dict[str, tuple[str, list[str], int]] = {
    "ner-default": ("NEF-CRF-F, N = 5 (the NER defaults)", NER_SECTION_5_2, 20),
    "ner-temp0.25": ("attention temperature 0.25", [*NER_SECTION_5_2, "--attention-temperature", "0.25"], 20),
    "ner-anneal8": (
        "temperature annealed 1 → 0.25 over epochs 1-8",
        [*NER_SECTION_5_2, "--anneal-epochs", "8", "--anneal-from", "1", "--anneal-to", "0.25"],
        20,
    ),
}
# issue #44: the classic BiLSTM-CRF recipes (Ma & Hovy 2016; Reimers & Gurevych 2017) with the registry's
# GloVe 6B 50-d: characters, 100 units, two layers, locked dropout, Nadam, 32 sentences per update,
# gradient norm 1, BIOES; the same recipe for NEF-CRF-F and the BiLSTM-CRF
RECIPE_R1 = [
    *NER_SECTION_5_2,
    *("--pretrained", "glove-6b-50d", "--char-dim", "30", "--char-filters", "50", "--hidden-dim", "100"),
    *("--encoder-layers", "2", "--dropout-kind", "locked", "--dropout", "0.5", "--optimizer", "nadam"),
    *("--lr", "0.002", "--batch-size", "32", "--clip", "1", "--scheme", "bioes"),
]
# the untuned probe: one layer, naive dropout, Adam, BIO
RECIPE_PROBE = [
    *NER_SECTION_5_2,
    *("--pretrained", "glove-6b-50d", "--char-dim", "30", "--char-filters", "50", "--hidden-dim", "100"),
    *("--dropout", "0.5", "--optimizer", "adam", "--lr", "0.002", "--batch-size", "32"),
]
# Ma & Hovy (2016)'s BLSTM-CNN-CRF settings as published (their §3.1-3.2: 30 CNN filters, 200 units,
# SGD with momentum 0.9 at lr 0.015 decayed by 1 / (1 + 0.05 t), 10 sentences per update, clipping at
# 5, dropout 0.5, BIOES), with the registry's GloVe: SGD moves a fine-tuned word by its gradient, where
# Nadam moves every trained word by about its rate whatever the gradient (the loss averaged, as §5.2 had it)
MH_SETTINGS = [
    *("--char-dim", "30", "--char-filters", "30", "--hidden-dim", "200", "--dropout", "0.5"),
    *("--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.015", "--lr-decay", "0.05"),
    *("--batch-size", "10", "--clip", "5", "--scheme", "bioes"),
]
RECIPE_MH = [*NER_SECTION_5_2, "--pretrained", "glove-6b-50d", *MH_SETTINGS]
# the English recipe with the vectors' first 200,000 words (row ner-recipe-pw200k), the task's default since
RECIPE_PW200K = ["--pretrained", "glove-6b-50d", "--pretrained-words", "200000"]
NER_ROWS |= {
    "ner-mh-bilstm": ("BiLSTM-CRF, Ma & Hovy's settings (GloVe 50-d)", [*RECIPE_MH, "--model", "bilstm"], 30),
    "ner-mh": ("NEF-CRF-F, N = 5, Ma & Hovy's settings (GloVe 50-d)", RECIPE_MH, 30),
    # the same with the loss summed over the update's sentences (the NER default averages it): ten
    # times the step at lr 0.015
    "ner-mh-sum": (
        "NEF-CRF-F, N = 5, Ma & Hovy's settings, loss summed over the batch",
        [*RECIPE_MH, "--reduction", "sum"],
        30,
    ),
    "ner-mh-bilstm-sum": (
        "BiLSTM-CRF, Ma & Hovy's settings, loss summed over the batch",
        [*RECIPE_MH, "--reduction", "sum", "--model", "bilstm"],
        30,
    ),
    # the English recipe (issue #44): Ma & Hovy's settings with the loss summed, 50 epochs, which were
    # the defaults of `--task ner --pretrained glove-6b-50d` until ner-recipe-pw200k; seeds 1-4 were trained as ner-mh-sum (30
    # epochs) and trained on to 50 with `easyfirst train --resume RUN --epochs 50`, which gives what a
    # fresh 50-epoch run gives (model.pt byte-identical, checked on 400 sentences)
    "ner-recipe": (
        "NEF-CRF-F, N = 5, the English recipe (Ma & Hovy's settings, loss summed, 50 epochs)",
        ["--pretrained", "glove-6b-50d"],
        50,
    ),
    "ner-recipe-bilstm": (
        "BiLSTM-CRF, the English recipe (Ma & Hovy's settings, loss summed, 50 epochs)",
        ["--pretrained", "glove-6b-50d", "--model", "bilstm"],
        50,
    ),
    # the English recipe's settings that do not depend on vectors, without them (the affixes kept): what
    # they give where the Dutch rows (nl-mh-sum) showed them paying; the `--task ner` defaults since
    "ner-mh-sum-novec": (
        "NEF-CRF-F, N = 5, Ma & Hovy's settings, loss summed, 30 epochs, no vectors, the affixes kept",
        [*MH_SETTINGS, "--reduction", "sum"],
        30,
    ),
    # item 4: a sharp attention under the recipe? Temperature did not sharpen R1's (0.31 -> 0.35 at 0.25):
    # the constrained sparsemax (§4), whose attention is sparse by construction
    "ner-mh-sum-csparsemax": (
        "NEF-CRF-F, N = 5, Ma & Hovy's settings, loss summed, constrained sparsemax attention",
        [*RECIPE_MH, "--reduction", "sum", "--attention", "csparsemax"],
        30,
    ),
    # the levers Reimers & Gurevych (2017) measured that the English recipe lacks, each at 30 epochs
    # against ner-mh-sum: variational dropout (one mask over the time steps), then with two stacked layers
    "ner-recipe-locked": (
        "NEF-CRF-F, N = 5, the English recipe at 30 epochs, variational (locked) dropout",
        ["--pretrained", "glove-6b-50d", "--dropout-kind", "locked"],
        30,
    ),
    "ner-recipe-locked-2l": (
        "NEF-CRF-F, N = 5, the English recipe at 30 epochs, locked dropout, two BiLSTM layers",
        ["--pretrained", "glove-6b-50d", "--dropout-kind", "locked", "--encoder-layers", "2"],
        30,
    ),
    # word dropout (a word seen c times → UNK w.p. 0.25 / (0.25 + c)), a NER default Ma & Hovy do not have:
    # does it cost the recall of unseen names, which with the vectors have their own embeddings?
    "ner-recipe-wd0": (
        "NEF-CRF-F, N = 5, the English recipe at 30 epochs without word dropout",
        ["--pretrained", "glove-6b-50d", "--word-dropout", "0"],
        30,
    ),
    # item 4: the constrained sparsemax was sharp on one seed of two (largest α 0.504, 0.445): with a
    # lower attention temperature (scores × 2), which sharpened the POS attention (ref-temp0.5)
    "ner-mh-sum-csparsemax-t0.5": (
        "NEF-CRF-F, N = 5, the English recipe at 30 epochs, constrained sparsemax at temperature 0.5",
        [*RECIPE_MH, "--reduction", "sum", "--attention", "csparsemax", "--attention-temperature", "0.5"],
        30,
    ),
    # en-ner's tagging speed (0.41x the model before, issue #44 asks within 20%): half the units
    "ner-recipe-h100": (
        "NEF-CRF-F, N = 5, the English recipe at 30 epochs with 100 units per direction",
        ["--pretrained", "glove-6b-50d", "--hidden-dim", "100"],
        30,
    ),
    # the vectors' words past their first 50,000 (the default until this row): 10.8% of eng.testb's entity
    # words are there against 6.5% of eng.testa's, and UNK without them; kept as read beside the trained
    # table (easyfirst.model.embedder), they cost training nothing. `--task ner --pretrained glove-6b-50d`
    # trains this row since
    "ner-recipe-pw200k": (
        "NEF-CRF-F, N = 5, the English recipe with GloVe's first 200,000 words in the vocabulary",
        RECIPE_PW200K,
        50,
    ),
    "ner-recipe-pw200k-bilstm": (
        "BiLSTM-CRF, the English recipe with GloVe's first 200,000 words in the vocabulary",
        [*RECIPE_PW200K, "--model", "bilstm"],
        50,
    ),
    # en-ner's speed again (0.42x the model before #44 with 200 units and the character CNN; untrained
    # models of the same vocabulary timed: 100 units without characters 0.75x, 50 units with them 0.73x):
    # what a smaller model costs in F1 once the vectors' rarer words are in
    "ner-recipe-pw200k-h100-nochars": (
        "NEF-CRF-F, N = 5, the English recipe, 200,000 words, 100 units, no character CNN",
        [*RECIPE_PW200K, "--hidden-dim", "100", "--char-dim", "0"],
        50,
    ),
    "ner-recipe-pw200k-h50": (
        "NEF-CRF-F, N = 5, the English recipe, 200,000 words, 50 units per direction",
        [*RECIPE_PW200K, "--hidden-dim", "50"],
        50,
    ),
    "ner-r1": ("NEF-CRF-F, N = 5, recipe R1 (GloVe)", RECIPE_R1, 30),
    "ner-r1-bilstm": ("BiLSTM-CRF, recipe R1 (GloVe)", [*RECIPE_R1, "--model", "bilstm"], 30),
    # item 4: the sharp NER attention the paper's Figure 3 shows, at temperature 0.25 (without vectors
    # it gave a largest α of 0.68-0.83 at the defaults: rows ner-temp0.25)
    "ner-r1-t0.25": (
        "NEF-CRF-F, N = 5, recipe R1, temperature 0.25",
        [*RECIPE_R1, "--attention-temperature", "0.25"],
        30,
    ),
    # the dev-test gap (dev 93.4, test 88.5 with R1): do the fine-tuned vectors drift from the test-only
    # words' ones? R1 with the vectors kept as read (Reimers & Gurevych's setting)
    "ner-r1-frozen": ("NEF-CRF-F, N = 5, recipe R1, vectors fixed", [*RECIPE_R1, "--freeze-vectors"], 30),
    "ner-r1-bilstm-frozen": (
        "BiLSTM-CRF, recipe R1, vectors fixed",
        [*RECIPE_R1, "--freeze-vectors", "--model", "bilstm"],
        30,
    ),
    # ... or do the test words that only the vectors bring (--pretrained-words) hurt? R1 with the
    # training words alone in the vocabulary (the others UNK, as word dropout trains it)
    "ner-r1-bilstm-pw0": (
        "BiLSTM-CRF, recipe R1, training words only",
        [*RECIPE_R1, "--pretrained-words", "0", "--model", "bilstm"],
        30,
    ),
    # fixed vectors find more unseen names (test recall 82.9 against 81.3) and fewer seen ones (93.3
    # against 95.7): a quarter of the rate for the embedding tables, between the two
    "ner-r1-bilstm-elr": (
        "BiLSTM-CRF, recipe R1, embedding tables at lr 0.0005",
        [*RECIPE_R1, "--set", "train.embedding_lr=0.0005", "--model", "bilstm"],
        30,
    ),
    "ner-probe": ("NEF-CRF-F, N = 5, the issue's probe (GloVe)", RECIPE_PROBE, 20),
    "ner-probe-bilstm": ("BiLSTM-CRF, the issue's probe (GloVe)", [*RECIPE_PROBE, "--model", "bilstm"], 20),
}
# issue #44, item 5: what of the English NER recipe carries over to POS? The POS English recipe (NEF-F,
# N = L, temperature 0.25 with GloVe; the paper's Adagrad, one sentence per update in file order) with Ma &
# Hovy's settings as they trained POS (their lr 0.01; a character CNN of 30 filters, 200 units, dropout
# 0.5, SGD with momentum 0.9 decayed by 1 / (1 + 0.05 t), 10 shuffled sentences per update, summed)
POS_MH = [
    *("--pretrained", "glove-6b-50d", "--char-dim", "30", "--char-filters", "30", "--hidden-dim", "200"),
    *("--dropout", "0.5", "--optimizer", "sgd", "--momentum", "0.9", "--lr", "0.01", "--lr-decay", "0.05"),
    *("--batch-size", "10", "--reduction", "sum", "--shuffle", "--clip", "5"),
]
ROWS |= {
    "pos-glove-mh": ("NEF-F, N = L, the POS English recipe (GloVe) with Ma & Hovy's settings", POS_MH, 20),
    "pos-bilstm-glove-mh": (
        "BiLSTM (N = 0), the POS defaults with GloVe and Ma & Hovy's settings",
        [*POS_MH, "--model", "bilstm"],
        20,
    ),
}
# the NER rows with vectors measured before `--task ner --pretrained` took the vectors' first 200,000
# words (issue #44; row ner-recipe-pw200k) keep the 50,000 they were trained with
for _name, (_what, _flags, _epochs) in NER_ROWS.items():
    if "--pretrained" in _flags and "--pretrained-words" not in _flags:
        NER_ROWS[_name] = (_what, [*_flags, "--pretrained-words", "50000"], _epochs)
NER_ROWS.update(CONTEXTUAL_NER_ROWS)  # issue #61: MiniLM under the decoder (contextual_rows.py)
ROWS.update(NER_ROWS)
ROWS.update(CONTEXTUAL_POS_ROWS)
