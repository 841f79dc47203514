"""Which training choices make the decoder's attention easy-first (sharp) on UD English EWT, and the
paper's Table 1 English rows at its budget in the paper's own training regime (issue #15).

    python benchmarks/paper/attention_study.py --rows ref-csoftmax ref-sparsemax      # trains, resumably
    python benchmarks/paper/attention_study.py --list                                 # the rows and their flags
    python benchmarks/paper/attention_study.py --report                               # Markdown from the JSON

Each row is one `easyfirst train --task pos` run into runs/attention-study/ROW (`--runs` to change),
one torch thread, the data set of the pos task (EWT through EASYFIRST_DATA). A row whose folder has a
checkpoint but no metrics.json, or one with fewer epochs than the row's, is continued with `easyfirst
train --resume FOLDER --epochs E` (a study spans sessions); a finished row is not trained again. After
training, `easyfirst analyze` on EWT dev gives the attention statistics, and the row's result (metrics.json's scores and per-epoch history, the sharpness summary,
the first focus by tag) goes to benchmarks/results/attention-study/ROW.json, from which `--report`
rebuilds the tables without the run folders.

"ref" rows use configs/pos-reference.toml (the paper's code: one sentence per update, the loss summed
over its words, Adagrad lr 0.1, clipping at 5 per update, file order); "b16" rows 16 sentences per
update, the mean loss, shuffled, lr 0.1 (the POS defaults until the study made the paper's regime at
lr 0.05 the default). Each row spells its regime
and attention temperature out, so that it keeps its meaning if the defaults change; everything else is
the POS defaults (configs/pos.toml).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from contextual_rows import NER_ROWS as CONTEXTUAL_NER_ROWS
from contextual_rows import POS_ROWS as CONTEXTUAL_POS_ROWS
from pos_table import BATCHED, NER_SECTION_5_2, cell, train_command

from easyfirst.atomic import die_with_parent

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
RESULTS = ROOT / "benchmarks" / "results" / "attention-study"
DEV_FILES = {
    "pos": "ud/UD_English-EWT/en_ewt-ud-dev.conllu",
    "ner": "ner/conll2003/eng.testa",
    "qe": "qe/wmt19-en-de/dev",  # a QE prefix (.src, .mt, .src-mt.alignments, .tags)
}
# the dev score each task's rows are chosen and reported by (QE: MT words and gaps, WMT19's score)
SCORES = {"pos": "accuracy", "ner": "f1", "qe": "target_f1_mult"}


def task_of_result(result: dict) -> str:
    """The task of a kept result (results kept before the field was written: told by their score)."""
    return result.get("task") or next(t for t, score in SCORES.items() if f"dev_{score}" in result)


def bad_share_by_chance(prefix: Path) -> float:
    """How often a word drawn uniformly from each sentence is BAD, averaged over the sentences of a QE
    set's gold ``.tags`` (word tags only: every other tag of a 2N+1 line)."""
    shares = []
    for line in Path(f"{prefix}.tags").read_text(encoding="utf-8").splitlines():
        tags = line.split()
        words = tags[1::2] if len(tags) % 2 == 1 and len(tags) > 1 else tags
        shares.append(sum(tag == "BAD" for tag in words) / len(words))
    return statistics.mean(shares)


def task_of(name: str) -> str:
    return "ner" if name in NER_ROWS else "pos"


def dev_file(task: str = "pos") -> Path:
    root = Path(os.environ.get("EASYFIRST_DATA", ROOT.parent / "shared" / "data"))
    return root / DEV_FILES[task]


def easyfirst(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "easyfirst", *arguments]


def train_row(name: str, runs: Path, seed: int) -> Path:
    """Train (or continue) one row; returns its run folder."""
    _, flags, epochs = ROWS[name]
    folder = runs / (name if seed == 1 else f"{name}-seed{seed}")
    metrics = folder / "metrics.json"
    if metrics.exists() and len(json.loads(metrics.read_text())["epochs"]) >= epochs:
        return folder
    if (folder / "checkpoint.pt").exists():  # interrupted, or finished with fewer epochs than the row's
        command = easyfirst("train", "--resume", str(folder), "--epochs", str(epochs))
    else:
        # pos_table's training command, with a checkpoint every 2,000 updates so that little is lost
        command = train_command(
            [*flags, "--checkpoint-every", "2000"], epochs, seed, runs, task=task_of(name), output=folder
        )
    print(f"{time.strftime('%H:%M:%S')} {name}: {' '.join(command[2:])}", file=sys.stderr, flush=True)
    # the training ends with this script (SIGTERM: it keeps its checkpoint), also when this one is killed
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, preexec_fn=stop_with_this_process)
    return folder


def stop_with_this_process() -> None:
    die_with_parent(signal.SIGTERM)


def save_row(
    name: str,
    folder: Path,
    seed: int,
    varies: str | None = None,
    task: str | None = None,
    dev: Path | None = None,
) -> dict:
    """Analyse the trained row on its task's dev set (or ``dev``) and keep its result as JSON; ``varies``
    and ``task`` for a run kept with --keep, which is no row of ROWS."""
    config = json.loads((folder / "config.json").read_text())
    task, stats = task or task_of(name), {}
    if config["model"]["model"] != "bilstm":  # the BiLSTM has no attention to analyse
        analysis = subprocess.run(
            easyfirst("analyze", str(dev or dev_file(task)), "--model", str(folder), "--json"),
            check=True,
            capture_output=True,
            text=True,
        )
        stats = json.loads(analysis.stdout)
    metrics = json.loads((folder / "metrics.json").read_text())
    result = {
        "row": name,
        "task": task,
        "varies": varies or ROWS[name][0],
        "data": config["data"].get("train"),  # None: the task's default data set
        "seed": seed,
        "train": config["train"],
        "model": {
            k: config["model"][k] for k in ("model", "attention", "attention_temperature", "sketch_steps")
        },
        f"dev_{SCORES[task]}": metrics["dev"][SCORES[task]],
        f"test_{SCORES[task]}": metrics.get("test", {}).get(SCORES[task]),
        "best_epoch": metrics["best_epoch"],
        "epochs": metrics["epochs"],
        "seconds_per_epoch": metrics["seconds_per_epoch"],
        "sharpness": stats.get("sharpness"),
        "first_focus": stats.get("first_focus"),
    }
    if task == "ner":
        result["entities"] = stats.get("entities")  # where the first focus goes against the entities
    if task == "qe":  # Figure 4: does the first focus go to BAD words more often than chance?
        result["first_focus_bad_by_chance"] = bad_share_by_chance(dev or dev_file(task))
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / (f"{name}.json" if seed == 1 else f"{name}-seed{seed}.json")
    target.write_text(json.dumps(result, indent=1) + "\n")
    return result


def sharpness_cells(results: list[dict]) -> str:
    sharp = [r["sharpness"] or {} for r in results]
    return (
        f"{cell([s.get('max_weight_first_half') for s in sharp], 1, 3)} | "
        f"{cell([s.get('share_focused_first_half') for s in sharp], unit=' %')} | "
        f"{cell([s.get('normalized_entropy_first_half') for s in sharp], 1, 3)}"
    )


def report() -> None:
    """The Markdown tables from benchmarks/results/attention-study/*.json: POS, NER, then QE; the rows of
    ROWS in their order, then the runs kept with --keep, by name."""
    found: dict[str, list[dict]] = {}
    for path in sorted(RESULTS.glob("*.json")):
        result = json.loads(path.read_text())
        found.setdefault(result["row"], []).append(result)
    order = [name for name in ROWS if name in found] + sorted(set(found) - set(ROWS))
    rows = {name: sorted(found[name], key=lambda r: r["seed"]) for name in order}
    tables = []
    for task, (columns, cells) in TABLES.items():
        mine = {name: results for name, results in rows.items() if task_of_result(results[0]) == task}
        if mine:
            tables.append(table(mine, columns, cells))
    print("\n\n".join(tables))


def table(rows: dict[str, list[dict]], columns: list[str], cells) -> str:
    """One task's table: per row its name, what it varies, epochs and seeds, then ``cells(results)`` under
    ``columns``, then the mean seconds per epoch."""
    head = ["row", "varies", "epochs", "seeds", *columns, "s/epoch"]
    lines = [f"| {' | '.join(head)} |", "|---|---|" + "---:|" * (len(head) - 2)]
    for name, results in rows.items():
        lead = [name, results[0]["varies"], str(len(results[0]["epochs"])), str(len(results))]
        seconds = f"{statistics.mean(r['seconds_per_epoch'] for r in results):.0f}"
        lines.append(f"| {' | '.join([*lead, *cells(results), seconds])} |")
    return "\n".join(lines)


def best_epochs(results: list[dict]) -> str:
    return ", ".join(str(r["best_epoch"]) for r in results)


SHARPNESS = ["largest α, first half", "steps with one word ≥ 0.5", "normalised entropy"]


def pos_cells(results: list[dict]) -> list[str]:
    verb = [r["first_focus"].get("VERB", 0) if r["first_focus"] else None for r in results]
    return [
        cell([r["dev_accuracy"] for r in results]),
        cell([r["test_accuracy"] for r in results]),
        best_epochs(results),
        sharpness_cells(results),
        cell(verb, unit=" %"),
    ]


def ner_cells(results: list[dict]) -> list[str]:
    entities = [r["entities"] or {} for r in results]
    return [
        cell([r["dev_f1"] for r in results]),
        cell([r["test_f1"] for r in results]),
        best_epochs(results),
        sharpness_cells(results),
        cell([e.get("share_on_entity") for e in entities], unit=" %"),
        cell([e.get("share_before_first_entity") for e in entities], unit=" %"),
        cell([e.get("focus_position") for e in entities], 1, 3),
        cell([e.get("first_entity_position") for e in entities], 1, 3),
    ]


def qe_cells(results: list[dict]) -> list[str]:
    """WMT19 QE: the target F1-MULT and where the first step goes (Figure 4: BAD words first?)."""
    return [
        cell([r["dev_target_f1_mult"] for r in results]),
        best_epochs(results),
        sharpness_cells(results),
        cell([(r["first_focus"] or {}).get("BAD", 0) for r in results], unit=" %"),
        cell([r["first_focus_bad_by_chance"] for r in results], unit=" %"),
    ]


# task → the columns of its table after row, varies, epochs and seeds, and the cells under them
TABLES = {
    "pos": (["dev acc", "test acc", "best epoch", *SHARPNESS, "first focus VERB"], pos_cells),
    "ner": (
        ["dev F1", "test F1", "best epoch", *SHARPNESS, "first focus on an entity word"]
        + ["before the first entity", "first focus at", "first entity at"],
        ner_cells,
    ),
    "qe": (
        ["dev target F1-MULT", "best epoch", *SHARPNESS, "first focus on a BAD word", "by chance"],
        qe_cells,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), default=[])
    parser.add_argument("--seeds", nargs="+", type=int, default=[1])
    parser.add_argument("--runs", type=Path, default=Path("runs/attention-study"))
    parser.add_argument("--list", action="store_true", help="print the rows and their flags")
    parser.add_argument("--report", action="store_true", help="print the tables from the kept results")
    parser.add_argument("--keep", type=Path, metavar="RUN", help="keep a run trained outside the rows")
    parser.add_argument(
        "--name", help="--keep: the row name to keep it under (ROW.json, ROW-seedK.json for seed K)"
    )
    parser.add_argument("--varies", help="--keep: what the run is, in a few words")
    parser.add_argument("--task", choices=sorted(SCORES), default="pos", help="--keep: the run's task")
    parser.add_argument("--dev", type=Path, help="--keep: the dev file to analyse (default: the task's)")
    args = parser.parse_args()
    if args.keep:
        seed = json.loads((args.keep / "config.json").read_text())["train"]["seed"]
        save_row(
            args.name or args.keep.name, args.keep, seed, args.varies or args.keep.name, args.task, args.dev
        )
    if args.list:
        for name, (varies, flags, epochs) in ROWS.items():
            print(f"{name}: {varies}; {epochs} epochs; {' '.join(flags)}")
    for name in args.rows:
        for seed in args.seeds:
            folder = train_row(name, args.runs, seed)
            save_row(name, folder, seed)
            print(f"{time.strftime('%H:%M:%S')} {name} seed {seed}: done", file=sys.stderr, flush=True)
    if args.report:
        report()


if __name__ == "__main__":
    main()
