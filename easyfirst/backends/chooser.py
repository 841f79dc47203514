"""The one place that chooses which backend computes each part of the model: :func:`choose_backend`,
asked for each batch by the training loop and the Tagger through :func:`plan_for`. Per part it takes the
first backend of :data:`BACKENDS` that computes the part, is installed and declares every setting of the
part's workload with its value (easyfirst.backends.declaration), else the reference; a forced backend
(``--backend``) narrows the choice to itself and the reference. The :class:`Plan` says what runs and why
the faster ones were passed over: the training log and the model card print it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from easyfirst.backends import NAMES, check_backend, compiled
from easyfirst.backends.compiled import NUMBA
from easyfirst.backends.declaration import DECODER_SETTINGS, ENCODER_SETTINGS, MANY, ONE, REVISIONS, Backend

REFERENCE = Backend(  # the model's own modules: nn.LSTM and the step loop of Alg. 2
    "reference",
    "the model's torch modules",
    encoder=lambda encoder, x, mask: encoder(x, mask),
    decoder=lambda decoder, *arguments: decoder(*arguments),
)
# in order of preference; the reference last, computing everything
BACKENDS: dict[str, Backend] = {b.name: b for b in (NUMBA, REFERENCE)}
assert tuple(BACKENDS) == NAMES


@dataclass(frozen=True)
class Plan:
    """The backends that compute a batch's encoder and decoder (None: the model has no decoder), and
    why each faster backend was passed over (``(name, reason)`` pairs)."""

    encoder: Backend
    decoder: Backend | None
    passed_over: tuple[tuple[str, str], ...] = ()

    def encode(self, module, x, mask):
        return self.encoder.encoder(module, x, mask)

    def decode(self, module, *arguments):
        return self.decoder.decoder(module, *arguments)

    def describe(self) -> str:
        """One line for the log, the model card and the verbs: what runs each part, and, where a part
        runs on a slower backend than the first one, the first one's reason in words, e.g. "numba
        (compiled CPU loops: BiLSTM and decoder)", or "reference (the model's torch modules: BiLSTM),
        numba (compiled CPU loops: decoder) — numba: hidden_dim = 200 (at most 64)"."""
        parts = {"BiLSTM": self.encoder, "decoder": self.decoder}
        ran: dict[str, list[str]] = {}
        for part, backend in parts.items():
            if backend is not None:
                ran.setdefault(backend.name, []).append(part)
        line = ", ".join(
            f"{name} ({BACKENDS[name].what}: {' and '.join(what)})" for name, what in ran.items()
        )
        if not self.passed_over:
            return line
        first = self.passed_over[0][0]  # the most preferred backend that was passed over, and why
        reasons = [reason for name, reason in self.passed_over if name == first]
        return f"{line} — {first}: {'; '.join(reasons)}"


def choose_backend(
    settings, sentences: str, device: str, dtype: str, training: bool, force: str = "auto"
) -> Plan:
    """The :class:`Plan` for a batch of a model with ``settings`` (its ``ModelConfig``, whose keys it reads
    flat: ``settings.get("encoder_layers")``): ``sentences``
    ``"one"`` (one unpadded sentence) or ``"many"``, ``device`` ``"cpu"``/``"cuda"``, ``dtype``
    ``"float32"``…, ``training`` (gradients wanted), ``force`` a backend name or ``"auto"``."""
    check_backend(force)
    run = {"sentences": sentences, "device": device, "dtype": dtype, "training": training}

    def workload(part: str, keys: tuple[str, ...]) -> tuple:
        given = {**run, "revision": REVISIONS[part]}
        return tuple((key, given[key] if key in given else settings.get(key)) for key in keys)

    encoder = workload("encoder", ENCODER_SETTINGS)
    decoder = workload("decoder", DECODER_SETTINGS) if settings.decodes else None
    return _choose(encoder, decoder, force)


@lru_cache(maxsize=512)
def _choose(encoder: tuple, decoder: tuple | None, force: str) -> Plan:
    candidates = list(BACKENDS.values()) if force == "auto" else [BACKENDS[force], REFERENCE]
    chosen: dict[str, Backend | None] = {"encoder": None, "decoder": None}
    passed: list[tuple[str, str]] = []
    for part, workload in (("encoder", encoder), ("decoder", decoder)):
        if workload is None:
            continue
        for backend in candidates:
            if getattr(backend, part) is None:
                continue
            why = None if backend is REFERENCE else backend.refuses(part, dict(workload))
            if why is None:
                chosen[part] = backend
                break
            if (backend.name, why) not in passed:
                passed.append((backend.name, why))
    return Plan(chosen["encoder"], chosen["decoder"], tuple(passed))


def load_tagging_loops(model=None) -> bool:
    """Compile (after an install: once, then read from Numba's cache) or load backend numba's loops now,
    so that no request waits for them and processes forked later inherit them (``easyfirst serve`` and
    ``easyfirst tag`` call this before they tag); it changes no choice. With ``model``, only where its
    batches take numba. False where nothing was loaded."""
    if model is not None:
        plan = _model_plan(model, MANY)
        if NUMBA not in (plan.encoder, plan.decoder):
            return False
    return compiled.warm_up()


def plan_for(model, mask, training: bool) -> Plan:
    """The :class:`Plan` for ``model`` (easyfirst.model.tagger.EasyFirstTagger: its ``settings``, dtype and
    forced ``backend``) on a batch with ``mask`` ``(B, L)``."""
    one = mask.shape[0] == 1 and bool(mask.all())
    return _model_plan(model, ONE if one else MANY, mask.device.type, training)


def run_plan(settings, batch_size: int, device: str, training: bool, force: str = "auto") -> Plan:
    """The :class:`Plan` for batches of ``batch_size`` sentences in float32: what the training log and
    the model card say (one sentence of a larger batch size, the last of an epoch, may run otherwise)."""
    return choose_backend(settings, ONE if batch_size == 1 else MANY, device, "float32", training, force)


def _model_plan(model, sentences: str, device: str | None = None, training: bool = False) -> Plan:
    """The plan of ``model``'s batches of ``sentences`` in its dtype, on ``device`` (default: its own)."""
    weight = model.output.weight
    dtype = str(weight.dtype).removeprefix("torch.")
    return choose_backend(
        model.settings, sentences, device or weight.device.type, dtype, training, model.backend
    )


def backend_line(model, training: bool = False) -> str:
    """The one line that says which backend computes ``model``'s batches (an EasyFirstTagger on its
    device, with its forced ``backend``), for the verbs (tag, evaluate, serve) and the Tagger."""
    return _model_plan(model, MANY, training=training).describe()
