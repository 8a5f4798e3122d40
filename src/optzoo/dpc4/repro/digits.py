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


def run_opacus(data, *, seed, lr, clip, z, steps, sample_rate, delta):
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
            module=model, optimizer=opt, data_loader=dl, noise_multiplier=z, max_grad_norm=clip,
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
            "noise_std_update": z * clip / B}


def run_dpc4(data, *, seed, lr, c0, z, steps, sample_rate, delta):
    from optzoo.dpc4.core import ShiftedDecay
    from optzoo.dpc4.optim import DPC4, PoissonLoader, per_sample_grads

    Xtr, ytr, Xva, yva, Xte, yte = data
    n = len(ytr)
    model = make_model(seed)
    opt = DPC4(model.parameters(), lr=lr, sample_rate=sample_rate, expected_batch_size=round(sample_rate * n),
               noise_multiplier=z, clip_schedule=ShiftedDecay(c0=c0), num_records=n, delta=delta,
               generator=derive_seed(seed, "dpc4-noise"))
    loss = lambda out, yb: torch.nn.functional.cross_entropy(out, yb)  # noqa: E731
    stds = []
    for idx in PoissonLoader(n, sample_rate=sample_rate, steps=steps, seed=derive_seed(seed, "dpc4-sampling")):
        per_sample_grads(model, loss, Xtr[idx], ytr[idx])
        opt.step(indices=idx)
        stds.append(opt.last_info.noise_stds[0] / opt.expected_batch_size)
    return {"val_acc": accuracy(model, Xva, yva), "test_acc": accuracy(model, Xte, yte),
            "epsilon": opt.ledger.epsilon(), "noise_std_update": float(np.sqrt(np.mean(np.square(stds))))}
