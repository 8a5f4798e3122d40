"""The SLTrain-style baseline: W = B A + S on a fixed random support, exact parameter counts at
the budget, trainable factors and values, the support unchanged by training, bad input."""

import pytest
import torch

from optzoo.salaad import SparseLowRankLinear, sltrain_model


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.embed_tokens = torch.nn.Embedding(10, 8)
        self.up_proj = torch.nn.Linear(8, 12, bias=True)
        self.down_proj = torch.nn.Linear(12, 8, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)

    def forward(self, x):
        return self.down_proj(torch.relu(self.up_proj(self.embed_tokens(x))))


def test_layer_is_low_rank_plus_sparse_with_exact_count():
    lay = SparseLowRankLinear(12, 7, 2, 15, bias=True, generator=torch.Generator().manual_seed(1))
    W = lay.weight.detach()
    dense = torch.zeros(7 * 12)
    dense[lay.index] = lay.values.detach()
    assert torch.allclose(W, lay.B.detach() @ lay.A.detach() + dense.view(7, 12), atol=1e-6)
    assert torch.linalg.matrix_rank(W - dense.view(7, 12)) <= 2
    assert sum(p.numel() for p in lay.parameters()) == 2 * (12 + 7) + 15 + 7
    x = torch.randn(3, 12)
    assert torch.allclose(lay(x), x @ W.T + lay.bias.detach(), atol=1e-6)


@pytest.mark.parametrize("frac", [0.2, 0.5, 0.9])
@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
def test_count_is_at_most_the_budget_and_spends_it(frac, share):
    net = Net()
    rest = 10 * 8 + 12                                       # embedding + the up_proj bias stay dense
    total = 8 * 12 + 12 * 8
    budget = rest + round(frac * total)
    s = sltrain_model(net, budget, targets="proj", sparse_share=share, seed=3)
    assert s.rest_params == rest
    assert s.params == sum(p.numel() for p in s.model.parameters()) <= budget
    assert budget - s.params < 2 * (8 + 12)                  # at most a rank's floor is left
    assert s.params == rest + sum(s.ranks[k] * 20 + s.nnz[k] for k in s.ranks)
    if share == 1.0:
        assert all(r == 0 for r in s.ranks.values())
    assert isinstance(s.model.up_proj, SparseLowRankLinear) and isinstance(s.model.embed_tokens, torch.nn.Embedding)
    assert torch.equal(s.model.embed_tokens.weight, net.embed_tokens.weight)   # the original is untouched
    assert isinstance(net.up_proj, torch.nn.Linear)


def test_training_moves_factors_and_values_not_the_support():
    s = sltrain_model(Net(), 250, targets="proj", seed=0)
    m = s.model
    assert min(s.ranks.values()) >= 1 and min(s.nnz.values()) >= 1
    idx = m.up_proj.index.clone()
    before = [p.detach().clone() for p in m.parameters()]
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    for _ in range(3):
        loss = (m(torch.arange(10)[None]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.equal(m.up_proj.index, idx)
    assert all(not torch.equal(a, b.detach()) for a, b in zip(before, m.parameters(), strict=True))
    # seeded: the same seed gives the same support and init
    a, b = sltrain_model(Net(), 150, targets="proj", seed=4), sltrain_model(Net(), 150, targets="proj", seed=4)
    assert torch.equal(a.model.up_proj.index, b.model.up_proj.index)
    assert torch.equal(a.model.up_proj.B, b.model.up_proj.B)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"'budget' argument of sltrain_model must be at least the smallest "
                                         r"exportable count 92 .*Got 50"):
        sltrain_model(Net(), 50, targets="proj")
    with pytest.raises(ValueError, match=r"'sparse_share' argument of sltrain_model must be a finite real number "
                                         r"in \[0, 1\]\. Got 1\.5"):
        sltrain_model(Net(), 150, targets="proj", sparse_share=1.5)
    with pytest.raises(ValueError, match=r"'targets' argument of sltrain_model must be a pattern matching at "
                                         r"least one nn.Linear"):
        sltrain_model(Net(), 150, targets="nothing")
    with pytest.raises(ValueError, match=r"'rank' argument of SparseLowRankLinear must be an int in \[0, 4\]"):
        SparseLowRankLinear(4, 6, 5, 1)
