"""SALAAD's wrapper and export: penalty gradient, budget accounting, export equals the surrogate
(spec 4.6-4.9)."""

import copy

import pytest
import torch

from optzoo.salaad import SALAAD, allocate, magnitude_prune_compress, truncated_svd_compress


class Tiny(torch.nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed_tokens = torch.nn.Embedding(10, 8)
        self.up_proj = torch.nn.Linear(8, 12)
        self.down_proj = torch.nn.Linear(12, 8, bias=False)
        self.norm = torch.nn.LayerNorm(8)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)

    def forward(self, x):
        h = self.embed_tokens(x)
        return self.down_proj(torch.relu(self.up_proj(self.norm(h))))


def _train(model, sal, steps=20, seed=0, opt_cls=torch.optim.AdamW):
    g = torch.Generator().manual_seed(seed)
    opt = opt_cls(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x = torch.randint(0, 10, (4, 5), generator=g)
        loss = (model(x) ** 2).mean()
        if sal is not None:
            loss = loss + sal.penalty()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sal is not None:
            sal.step()
    return model


def _trained(steps=40, **kw):
    m = Tiny()
    sal = SALAAD(m, rho=0.1, rank_ratio=0.5, density=0.1, **kw)
    _train(m, sal, steps)
    return m, sal


def test_penalty_gradient_closed_form():
    m, sal = _trained(10)
    for p in m.parameters():
        p.grad = None
    sal.penalty().backward()
    rho = sal.rho_at()
    for k, w in sal.weights.items():
        st = sal.blocks[k]
        assert torch.allclose(w.grad, rho * (w.detach() - st.L - st.S + st.Y / rho), atol=1e-6)


def test_disabled_is_bit_identical_to_plain_adamw():
    a, b = Tiny(), Tiny()
    sal = SALAAD(b, rho=0.1, enabled=False)
    _train(a, None)
    _train(b, sal)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)
    assert sal.sweeps == 0


def test_export_count_is_exact_and_within_budget_and_monotone():
    m, sal = _trained()
    rest = sal.rest_params
    assert rest == sum(p.numel() for n, p in m.named_parameters() if not n.endswith("_proj.weight")
                       and n != "embed_tokens.weight")
    full = sal.full_params()
    prev = -1
    for b in range(rest, full + 30, 7):
        c = sal.export(b)
        count = rest + sum(blk.rank * sum(blk.us.shape[0:1] + blk.vh.shape[1:]) + blk.nnz
                           for blk in c.blocks.values())
        assert c.params == count <= b
        assert c.params >= prev
        prev = c.params
        if b <= full:  # reached, unless the sparse parts are full and no rank fits what is left
            assert c.params == b or b - c.params < max(sum(w.shape) for w in sal.weights.values())
        # bytes: the actual tensors
        nb = sum(p.numel() * p.element_size() for n, p in m.named_parameters()
                 if not (n.endswith("_proj.weight") or n == "embed_tokens.weight"))
        for blk in c.blocks.values():
            s = blk.sparse
            nb += (blk.us.numel() + blk.vh.numel() + s.values().numel()) * 4
            nb += (s.crow_indices().numel() + s.col_indices().numel()) * 4
        assert c.nbytes == nb


def test_export_equals_the_surrogate():
    m, sal = _trained()
    before = [p.detach().clone() for p in m.parameters()]
    c = sal.export(None, energy=1.0)
    mods = dict(c.model.named_modules())
    for k, blk in c.blocks.items():
        w = mods[k].weight.detach()
        assert torch.equal(w, blk.dense().to(w.dtype))                    # model = factors + CSR
        assert torch.allclose(w, sal.surrogate(k), atol=1e-5)             # = L + S at full budget
    assert sal.export(c.params + 1000, energy=1.0).params == c.params
    # the training model is untouched, and the copy does not share its weights
    assert all(torch.equal(a, p) for a, p in zip(before, m.parameters(), strict=True))
    assert all(sal.weights[k] is not mods[k].weight for k in c.blocks)
    assert all(blk.rank < min(blk.us.shape[0], blk.vh.shape[1]) for blk in c.blocks.values())


def test_gamma_one_cuts_only_ranks_and_zero_only_sparse():
    shapes = {"a": (10, 8), "b": (6, 6)}
    ranks, nnz = {"a": 4, "b": 3}, {"a": 20, "b": 9}
    full = 5 + 4 * 18 + 3 * 12 + 29
    for b in range(full - 29, full):                      # cuts the sparse parts can absorb
        a1 = allocate(shapes, ranks, nnz, rest=5, budget=b, gamma=1.0)
        assert a1.nnz == nnz and a1.params <= b and a1.ranks != ranks
        a0 = allocate(shapes, ranks, nnz, rest=5, budget=b, gamma=0.0)
        assert a0.ranks == ranks and a0.params == b
    spill = allocate(shapes, ranks, nnz, rest=5, budget=full - 60, gamma=0.0)   # more than P_S = 29
    assert sum(spill.nnz.values()) <= 29 and spill.ranks != ranks and spill.params <= full - 60
    assert allocate(shapes, ranks, nnz, rest=5, budget=full + 3).params == full
    with pytest.raises(ValueError, match=r"'budget' argument of allocate must be at least the smallest "
                                         r"exportable count 5 .*Got 4\."):
        allocate(shapes, ranks, nnz, rest=5, budget=4)


def test_baselines_counts_and_library_pruning():
    m, sal = _trained(5)
    w = sal.weights
    b = sal.rest_params + sal.target_params // 2
    p = magnitude_prune_compress(m, w, b)
    assert p.params == b
    flat = torch.cat([wt.detach().abs().flatten() for wt in w.values()])
    kept = torch.cat([blk.sparse.values().abs() for blk in p.blocks.values()])
    assert kept.min() >= flat.topk(b - sal.rest_params).values.min() - 1e-7
    s = truncated_svd_compress(m, w, b)
    assert s.params <= b and b - s.params < min(sum(x.shape) for x in w.values())


def test_state_dict_round_trip_continues_identically():
    m1, sal1 = _trained(10)
    m2 = copy.deepcopy(m1)
    sal2 = SALAAD(m2, rho=0.5, rank_ratio=0.5, density=0.1)
    sal2.load_state_dict(sal1.state_dict())
    _train(m1, sal1, 10, seed=1, opt_cls=torch.optim.SGD)
    _train(m2, sal2, 10, seed=1, opt_cls=torch.optim.SGD)
    for k in sal1.blocks:
        assert torch.equal(sal1.blocks[k].L, sal2.blocks[k].L)
        assert torch.equal(sal1.blocks[k].Y, sal2.blocks[k].Y)
    assert sal1.history == sal2.history


def test_bf16_model_keeps_fp32_state_and_svd():
    m = Tiny().to(torch.bfloat16)
    sal = SALAAD(m, rho=0.1, rank_ratio=0.5)
    _train(m, sal, 4)
    for st in sal.blocks.values():
        assert st.L.dtype == torch.float32 and st.Y.dtype == torch.float32
    c = sal.export(sal.rest_params + sal.target_params // 3)
    assert all(b.us.dtype == torch.bfloat16 for b in c.blocks.values())
    assert c.params <= sal.rest_params + sal.target_params // 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_state_lives_on_the_weights_device():
    m = Tiny().cuda()
    sal = SALAAD(m, rho=0.1)
    assert all(st.L.device.type == "cuda" for st in sal.blocks.values())


def test_decoupled_mode_explicit_step():
    m = Tiny()
    sal = SALAAD(m, rho=0.2, mode="decoupled", admm_every=1000)
    w = sal.weights["up_proj"]
    before = w.detach().clone()
    st = sal.blocks["up_proj"]
    assert float(sal.penalty()) == 0.0
    sal.step(lr=0.1)
    assert torch.allclose(w.detach(), before - 0.1 * 0.2 * (before - st.L - st.S + st.Y / 0.2))
