"""Task B of the reproduction: a 64-64-10 tanh MLP on scikit-learn's digits, DP-C4 (our
optimizer, torch.func per-sample gradients) against real Opacus DP-SGD (PrivacyEngine,
Poisson DPDataLoader), same noise multiplier, sampling rate, steps and tuning grid."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from optzoo._core.rng import derive_seed


def load(seed: int):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    s = seed % 2**31
    Xtr, Xrest, ytr, yrest = train_test_split(X, y, test_size=0.4, random_state=s, stratify=y)
    Xva, Xte, yva, yte = train_test_split(Xrest, yrest, test_size=0.5, random_state=s, stratify=yrest)
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-8
    f = lambda A: torch.as_tensor((A - mu) / sd, dtype=torch.float32)  # noqa: E731
    i = lambda A: torch.as_tensor(A, dtype=torch.long)  # noqa: E731
    return f(Xtr), i(ytr), f(Xva), i(yva), f(Xte), i(yte)


def make_model(seed: int) -> torch.nn.Module:
    g = torch.Generator().manual_seed(derive_seed(seed, "mlp-init"))
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 10))
    with torch.no_grad():  # explicit generator: no global seeding
        for p in model.parameters():
            bound = 1.0 / np.sqrt(p.shape[-1] if p.ndim > 1 else 64)
            p.uniform_(-bound, bound, generator=g)
    return model


def accuracy(model, X, y) -> float:
    with torch.no_grad():
        return float((model(X).argmax(-1) == y).float().mean())


def run_opacus(data, *, seed, lr, c, z, steps, sample_rate, delta):
    from opacus import PrivacyEngine

    Xtr, ytr, Xva, yva, Xte, yte = data
    model = make_model(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    B = int(round(sample_rate * len(ytr)))
    # Opacus' Poisson sampler falls back to the loader's generator (else the global RNG)
    dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xtr, ytr), batch_size=B,
                                     generator=torch.Generator().manual_seed(derive_seed(seed, "opacus-sampling")))
    pe = PrivacyEngine(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, dl = pe.make_private(
            module=model, optimizer=opt, data_loader=dl, noise_multiplier=z, max_grad_norm=c,
            poisson_sampling=True, noise_generator=torch.Generator().manual_seed(derive_seed(seed, "opacus")))
    k = 0
    while k < steps:
        for xb, yb in dl:
            opt.zero_grad()
            if len(yb):
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            k += 1
            if k >= steps:
                break
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = pe.accountant.get_epsilon(delta)
    return {"val_acc": accuracy(model, Xva, yva), "test_acc": accuracy(model, Xte, yte), "epsilon": eps,
            "noise_std_update": z * c / B}


def grad_norm_sq(model, X, y) -> float:
    """Squared norm of the full-batch training-loss gradient at the model's parameters."""
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(X), y).backward()
    return float(sum((p.grad.double() ** 2).sum() for p in model.parameters()))


def _run_ours(data, opt_factory, *, seed, lr, c, z, steps, sample_rate, delta, grad_norm=False):
    """Our optimizers (DP-C4 or its no-shift control) on the same Poisson batches and noise
    generator seed, so the two differ only in their update."""
    from optzoo.dpc4.optim import PoissonLoader, per_sample_grads

    Xtr, ytr, Xva, yva, Xte, yte = data
    n = len(ytr)
    model = make_model(seed)
    opt = opt_factory(model, n, lr, c, z, delta)
    loss = lambda out, yb: torch.nn.functional.cross_entropy(out, yb)  # noqa: E731
    stds = []
    for idx in PoissonLoader(n, sample_rate=sample_rate, steps=steps, seed=derive_seed(seed, "dpc4-sampling")):
        per_sample_grads(model, loss, Xtr[idx], ytr[idx])
        opt.step(indices=idx)
        stds.append(opt.last_info.noise_stds[0] / opt.expected_batch_size)
    out = {"val_acc": accuracy(model, Xva, yva), "test_acc": accuracy(model, Xte, yte),
           "epsilon": opt.ledger.epsilon(), "noise_std_update": float(np.sqrt(np.mean(np.square(stds))))}
    if grad_norm:
        for p in model.parameters():
            p.grad_sample = None
        out["grad_norm_sq"] = grad_norm_sq(model, Xtr, ytr)
    return out


def run_dpc4(data, *, seed, lr, c, z, steps, sample_rate, delta, grad_norm=False):
    """DP-C4 (anchor memory, ShiftedDecay(c0=c))."""
    from optzoo.dpc4.core import ShiftedDecay
    from optzoo.dpc4.optim import DPC4

    def make(model, n, lr, c, z, delta):
        return DPC4(model.parameters(), lr=lr, sample_rate=sample_rate, expected_batch_size=round(sample_rate * n),
                    noise_multiplier=z, clip_schedule=ShiftedDecay(c0=c), num_records=n, delta=delta,
                    generator=derive_seed(seed, "dpc4-noise"))

    return _run_ours(data, make, seed=seed, lr=lr, c=c, z=z, steps=steps, sample_rate=sample_rate, delta=delta,
                     grad_norm=grad_norm)


def run_noshift(data, *, seed, lr, c, z, steps, sample_rate, delta, grad_norm=False):
    """The control: DP-C4's decaying threshold C_t = c / sqrt(1 + t) and noise z C_t without the
    shift (no anchors, no memory), i.e. our DPSGD with DP-C4's threshold schedule."""
    from optzoo.dpc4.core import ShiftedDecay
    from optzoo.dpc4.optim import DPSGD

    def make(model, n, lr, c, z, delta):
        return DPSGD(model.parameters(), lr=lr, sample_rate=sample_rate, expected_batch_size=round(sample_rate * n),
                     noise_multiplier=z, max_grad_norm=ShiftedDecay(c0=c), delta=delta,
                     generator=derive_seed(seed, "dpc4-noise"))

    return _run_ours(data, make, seed=seed, lr=lr, c=c, z=z, steps=steps, sample_rate=sample_rate, delta=delta,
                     grad_norm=grad_norm)
