"""relulab theory: figures go to --out or a fresh directory, and are never replaced silently."""

from pathlib import Path

from relulab import cli

FAST = ["theory", "phase-diagram", "--grid", "5"]


def test_default_figures_go_to_a_fresh_directory_each_time(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(FAST) == 0
    assert cli.main([*FAST, "--k", "-1"]) == 0
    first = Path("runs/theory-phase-diagram-1/phase_diagram.png")
    second = Path("runs/theory-phase-diagram-2/phase_diagram.png")
    assert first.is_file() and second.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"], "nothing in the cwd itself"
    assert f"figure: {second}" in capsys.readouterr().out


def test_an_existing_figure_is_replaced_only_with_force(tmp_path, capsys):
    figure = tmp_path / "mine.png"
    figure.write_bytes(b"my own figure")
    assert cli.main([*FAST, "--out", str(figure)]) == 2
    err = capsys.readouterr().err
    assert "exists; pass --force" in err and err.count("\n") == 1
    assert figure.read_bytes() == b"my own figure"
    assert cli.main([*FAST, "--out", str(figure), "--force"]) == 0
    assert figure.read_bytes().startswith(b"\x89PNG")
