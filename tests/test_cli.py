from typer.testing import CliRunner

from optzoo.cli import app

runner = CliRunner()


def test_list_shows_all_papers():
    res = runner.invoke(app, ["list"], terminal_width=200)
    assert res.exit_code == 0
    for slug in ("copro", "dks", "markov_zo"):
        assert slug in res.output


def test_show_unknown_and_not_implemented():
    res = runner.invoke(app, ["show", "nope"])
    assert res.exit_code == 2 and "Unknown paper slug" in res.output
    res = runner.invoke(app, ["show", "copro"], terminal_width=200)
    assert res.exit_code == 0 and "not implemented yet" in res.output


def test_reproduce_rejects_bad_scale_and_unimplemented_paper():
    res = runner.invoke(app, ["reproduce", "dks", "--scale", "huge"])
    assert res.exit_code != 0 and "huge" in res.output
    res = runner.invoke(app, ["reproduce", "copro"])
    assert res.exit_code != 0 and "not implemented yet" in res.output
