"""Per-layer learning-rate rules the Stackelberg ratio is compared with, as parameter groups
for the real ``torch.optim.SGD``: stand-ins for libraries that may be absent.

* :func:`layer_decay_param_groups`: layer-wise LR decay as in timm's
  ``param_groups_layer_decay`` (the head has the full LR, the layer ``k`` places below it
  ``lr * decay**k``). When timm is importable and the model has timm's ``group_matcher``,
  timm's own function is used. timm 1.0.31 does not import in optzoo's environment: its
  ``timm.layers`` imports ``torchvision`` unconditionally, and PyPI's torchvision does not
  import beside the CPU build of torch that optzoo pins, so the reproduction uses this rule.
* :func:`mup_sgd_param_groups`: muP's SGD rule for a stack of ``nn.Linear`` layers, as
  ``mup.MuSGD`` applies it with width multiplier ``r = width / base_width`` (Yang et al.
  2022): parameters with one width-like dimension (input weights, hidden biases, the readout
  weight) get ``lr * r``; hidden matrices (both dimensions width-like, ratio 1) get ``lr``;
  the readout bias keeps ``lr``. muP also multiplies the readout's input by ``1 / r``
  (``MuReadout``) and rescales the initialisation (``set_base_shapes``): the model must do
  both itself. The reproduction uses the real ``mup`` (``pip install --no-deps mup==1.0.0``)
  when it imports and this rule only as a labelled fallback; a test checks that the two give
  the same learning rates, initialisation and outputs.
"""

from __future__ import annotations

from torch import nn

from optzoo._core.validation import check_real, fail

__all__ = ["layer_decay_param_groups", "mup_sgd_param_groups"]


def _layers(model: nn.Module, owner: str) -> list[tuple[str, nn.Module]]:
    mods = [(n, m) for n, m in model.named_modules() if any(True for _ in m.parameters(recurse=False))]
    if len(mods) < 2:
        fail("model", owner, "a module with at least two parametrised layers", type(model).__name__)
    return mods


def layer_decay_param_groups(model: nn.Module, lr: float, *, decay: float = 0.75,
                             weight_decay: float = 0.0) -> list[dict]:
    """One group per parametrised layer, in ``model.named_modules()`` order, with LR
    ``lr * decay**(depth below the last layer)`` (timm's rule; the head is the last layer)."""
    owner = "layer_decay_param_groups"
    lr = check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    decay = check_real("decay", decay, owner=owner, low=0.0, high=1.0, closed="right")
    weight_decay = check_real("weight_decay", weight_decay, owner=owner, low=0.0)
    if hasattr(model, "group_matcher"):
        try:
            from timm.optim import param_groups_layer_decay
        except ImportError:
            pass
        else:
            groups = param_groups_layer_decay(model, weight_decay=weight_decay, layer_decay=decay)
            for g in groups:
                g["lr"] = lr * g.get("lr_scale", 1.0)
            return groups
    mods = _layers(model, owner)
    depth = len(mods) - 1
    return [{"params": list(m.parameters(recurse=False)), "lr": lr * decay ** (depth - i),
             "weight_decay": weight_decay, "layer": name} for i, (name, m) in enumerate(mods)]


def mup_sgd_param_groups(model: nn.Module, lr: float, *, width_mult: float) -> list[dict]:
    """muP SGD groups for a stack of ``nn.Linear`` layers (first = input, last = readout).

    ``width_mult``: width / base width (> 0). The model must scale its readout's input by
    ``1 / width_mult`` (muP's ``MuReadout``) and rescale its init as ``mup.set_base_shapes``
    does (readout weight and bias, and biases of layers with a width-like fan-in, by
    ``sqrt(width_mult)``)."""
    owner = "mup_sgd_param_groups"
    lr = check_real("lr", lr, owner=owner, low=0.0, closed="neither")
    r = check_real("width_mult", width_mult, owner=owner, low=0.0, closed="neither")
    lins = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if len(lins) < 2:
        fail("model", owner, "a stack of at least two nn.Linear layers", type(model).__name__)
    covered = {id(p) for m in lins for p in m.parameters()}
    if any(id(p) not in covered for p in model.parameters()):
        fail("model", owner, "a model whose parameters all belong to nn.Linear layers",
             type(model).__name__)
    groups = []
    for i, m in enumerate(lins):
        first, last = i == 0, i == len(lins) - 1
        w_lr = lr * r if (first or last) else lr  # one width-like dim (vector-like) vs matrix-like
        groups.append({"params": [m.weight], "lr": w_lr, "weight_decay": 0.0})
        if m.bias is not None:
            groups.append({"params": [m.bias], "lr": lr if last else lr * r, "weight_decay": 0.0})
    return groups
