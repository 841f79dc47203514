"""The optimizer, gradient clipping and one update: what ``easyfirst train`` and the speed benchmarks run.

The optimizers: ``adagrad`` (the paper's), ``adam``, ``nadam`` (Adam with Nesterov momentum, the best
choice for BiLSTM-CRF NER in Reimers & Gurevych 2017), ``adamw`` (decoupled weight decay, torch's
default 0.01) and ``sgd`` (with ``momentum``); with ``lr_decay`` d, epoch e runs at lr / (1 + d·(e − 1))
(:func:`schedule_lr`; Ma & Hovy 2016's SGD schedule), for any of them.

Embedding tables take **sparse gradients** with Adagrad and plain SGD (one process): an update then touches
only the rows of the words, affixes and features in its batch. This is the same update as with dense
gradients (Adagrad and SGD leave a row whose gradient is zero exactly as it is) at a fraction of the
cost: with EWT's vocabulary, the dense per-row square roots of Adagrad were a third of an update's
time at one sentence per update. It is what DyNet, the paper's toolkit, does for lookup parameters.
The Adam family (whose moments move every row), SGD with momentum and data-parallel training (DDP) keep
dense gradients.

Clipping is by the global norm over all gradients, dense and sparse (:func:`clip_gradients`), as
``torch.nn.utils.clip_grad_norm_``, which refuses sparse gradients.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.optim.adagrad import adagrad

from easyfirst.config import OPTIMIZERS


class Adagrad(torch.optim.Adagrad):
    """``torch.optim.Adagrad`` whose dense parameters take the multi-tensor path even when some other
    parameters have sparse gradients (torch falls back to a per-parameter loop for all of them then).
    The state and its saved form are torch's own."""

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102 (torch.optim.Adagrad.step)
        if closure is not None:
            raise ValueError("easyfirst's Adagrad takes no closure")
        for group in self.param_groups:
            params, grads, sums, steps = [], [], [], []
            has_sparse, has_complex = self._init_group(group, params, grads, sums, steps)
            if not params:
                continue
            sparse = [k for k, grad in enumerate(grads) if grad.is_sparse] if has_sparse else []
            dense = [k for k in range(len(params)) if k not in set(sparse)]
            if dense:  # torch's fused CPU kernel, or the multi-tensor one: one call for them all
                fused = all(params[k].device.type == "cpu" for k in dense)
                adagrad(
                    [params[k] for k in dense],
                    [grads[k] for k in dense],
                    [sums[k] for k in dense],
                    [steps[k] for k in dense],
                    foreach=not fused,
                    fused=fused,
                    has_complex=has_complex,
                    **_settings(group),
                )
            for k in sparse:
                _sparse_adagrad(params[k], grads[k], sums[k], steps[k], group)
        return None


def _settings(group: dict) -> dict:
    """A parameter group's Adagrad settings, as torch's functional ``adagrad`` takes them."""
    keys = ("lr", "weight_decay", "lr_decay", "eps", "maximize", "differentiable")
    return {key: group[key] for key in keys}


def _sparse_adagrad(
    param: torch.Tensor, grad: torch.Tensor, total: torch.Tensor, step: torch.Tensor, group: dict
) -> None:
    """Adagrad on the rows of a sparse (embedding) gradient: sum += g², p −= lr · g / (√sum + eps),
    row by row as torch's sparse path, in four indexed operations instead of its sparse tensors."""
    if group["weight_decay"] or group["lr_decay"] or group["maximize"] or grad.sparse_dim() != 1:
        adagrad([param], [grad], [total], [step], has_sparse_grad=True, foreach=False, **_settings(group))
        return
    step += 1
    grad = grad.coalesce()
    rows, values = grad.indices()[0], grad.values()
    total.index_add_(0, rows, values * values)
    std = total.index_select(0, rows).sqrt_().add_(group["eps"])
    param.index_add_(0, rows, values / std, alpha=-group["lr"])


# the optimizers whose update leaves a row with a zero gradient as it is: sparse embedding gradients
SPARSE_SAFE = ("adagrad", "sgd")


def make_optimizer(
    name: str,
    lr: float,
    model: nn.Module,
    sparse: bool = True,
    embedding_lr: float | None = None,
    momentum: float = 0.0,
    transformer_lr: float | None = None,
) -> torch.optim.Optimizer:
    """The optimizer ``name`` (see :data:`easyfirst.config.OPTIMIZERS`) over ``model``'s parameters. With
    ``sparse`` (and Adagrad, or SGD without momentum) the model's embedding tables switch to sparse
    gradients (see module). With ``embedding_lr`` the embedding tables form a parameter group of their own
    at that learning rate (the rest at ``lr``); unset, all parameters are one group, as a checkpoint
    without it expects. ``momentum``: SGD's. A fine-tuned transformer's parameters (easyfirst.model.
    transformer) form the last group, at ``transformer_lr``."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {name!r}")
    if momentum and name != "sgd":
        raise ValueError("momentum is SGD's")
    sparse_embeddings(model, sparse and name in SPARSE_SAFE and not momentum)
    tuned = {id(p) for p in transformer_parameters(model)}
    own = [p for p in model.parameters() if id(p) not in tuned]
    params: list = own
    if embedding_lr is not None:
        tables = {id(table.weight) for table in embedding_tables(model)}
        params = [
            {"params": [p for p in own if id(p) in tables], "lr": embedding_lr},
            {"params": [p for p in own if id(p) not in tables]},
        ]
    if tuned:
        params = params if embedding_lr is not None else [{"params": own}]
        params.append({"params": transformer_parameters(model), "lr": transformer_lr or lr})
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum)
    kind = {
        "adagrad": Adagrad,
        "adam": torch.optim.Adam,
        "nadam": torch.optim.NAdam,
        "adamw": torch.optim.AdamW,
    }
    return kind[name](params, lr=lr)


def schedule_lr(optimizer: torch.optim.Optimizer, lrs: list[float], decay: float, epoch: int) -> None:
    """Set each parameter group's learning rate for ``epoch`` (from 1): its base rate ``lrs[k]`` divided
    by 1 + ``decay``·(epoch − 1). No decay leaves the groups as they are."""
    if decay:
        for group, lr in zip(optimizer.param_groups, lrs, strict=True):
            group["lr"] = lr / (1 + decay * (epoch - 1))


def embedding_tables(model: nn.Module) -> list[nn.Embedding]:
    """The embedding tables of ``model``: what takes sparse gradients and ``embedding_lr`` (a fine-tuned
    transformer's own tables are the transformer's, at its rate)."""
    return [
        module
        for name, module in model.named_modules()
        if isinstance(module, nn.Embedding) and not name.startswith("embedder.transformer.")
    ]


def transformer_parameters(model: nn.Module) -> list[nn.Parameter]:
    """A fine-tuned transformer's parameters in ``model`` (none when frozen: they are not the model's)."""
    return [p for name, p in model.named_parameters() if name.startswith("embedder.transformer.net.")]


def sparse_embeddings(model: nn.Module, on: bool) -> None:
    """Switch every embedding table of ``model`` to sparse (``on``) or dense gradients."""
    if on:  # torch.optim builds sparse tensors from coalesced ones: no need for its invariant checks
        torch.sparse.check_sparse_tensor_invariants.disable()
    for table in embedding_tables(model):
        table.sparse = on


def clip_gradients(parameters: list[nn.Parameter], max_norm: float) -> torch.Tensor:
    """Scale all gradients by min(1, max_norm / (‖g‖ + 1e-6)), ‖g‖ the global L2 norm over dense and
    sparse gradients alike (as ``clip_grad_norm_``); returns ‖g‖ (inf or nan when it is not finite).
    Sparse gradients are coalesced first, so that rows repeated in a batch count once, summed."""
    dense, sparse = [], []
    for parameter in parameters:
        if parameter.grad is None:
            continue
        if parameter.grad.is_sparse:
            parameter.grad = parameter.grad.coalesce()
            sparse.append(parameter.grad)
        else:
            dense.append(parameter.grad)
    squares = [norm.square() for norm in torch._foreach_norm(dense)] if dense else []
    squares += [grad._values().square().sum() for grad in sparse]
    if not squares:
        return torch.tensor(0.0)
    norm = torch.stack(squares).sum().sqrt()
    scale = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    if dense:
        torch._foreach_mul_(dense, scale)
    for grad in sparse:
        grad.mul_(scale)
    return norm
