"""ego-Facebook anchors from shared/data/README.md (skipped when the data folder is absent)."""

import pytest

from optzoo.dks import densest_k_subgraph, greedy_peeling, read_graph


@pytest.fixture(scope="module")
def fb(facebook_path):
    return read_graph(facebook_path)


def test_read(fb):
    assert (fb.n, fb.m) == (4039, 88234)


def test_se_fw_finds_the_50_clique(fb):
    res = densest_k_subgraph(fb, 50)
    assert res.fun == 1225 and str(res.status) == "converged"


@pytest.mark.parametrize("k, edges", [(100, 4873), (200, 15459)])
def test_peeling_anchors(fb, k, edges):
    assert greedy_peeling(fb, k).fun == edges


def test_cli_on_facebook(facebook_path, capsys):
    import json

    from optzoo.dks.cli import dks_command

    assert dks_command(str(facebook_path), 50, as_json=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["num_edges"] == 1225 and out["density"] == 1.0
