"""The command line: help, a short training run, translation, evaluation and its error paths."""

import json
import subprocess
import sys

import pytest

from transformer_lib.cli import main


def test_module_entry_point_prints_help():
    out = subprocess.run([sys.executable, "-m", "transformer_lib", "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "train" in out and "translate" in out and "evaluate" in out


@pytest.mark.parametrize("command", ["train", "translate", "evaluate"])
def test_subcommand_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_missing_arguments_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train"])
    assert exit_info.value.code == 2
    assert "--out" in capsys.readouterr().err


def test_translate_uses_the_published_model_unless_told_otherwise(capsys, monkeypatch):
    from transformer_lib.translation import load_everyday
    from transformer_lib.translation.translate import translate

    sentences = ["Where can I buy a ticket for the concert?", "The soup is too salty for me."]
    assert main(["translate", *sentences]) == 0
    captured = capsys.readouterr()
    model, vocab = load_everyday()
    assert captured.out.splitlines() == [r.text for r in translate(model, sentences, vocab, vocab)]
    assert "the published everyday model" in captured.err and "--checkpoint" in captured.err
    # an altered published file is refused, not used
    from transformer_lib.translation import published

    monkeypatch.setattr(published, "sha256_of", lambda path: "0" * 64)
    assert main(["translate", "go ."]) == 2
    assert "does not match its SHA-256" in capsys.readouterr().err


def test_evaluate_uses_the_published_model_and_its_recipe(tmp_path, capsys):
    # no data where it is told to look: it stops there, after loading the published model and
    # reading from it the recipe whose data it needs
    assert main(["evaluate", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "the published everyday model" in err
    assert err.splitlines()[-1].startswith("error:") and str(tmp_path) in err


def test_the_installed_command_is_the_module_s(capsys, monkeypatch):
    from transformer_lib.cli import console

    monkeypatch.setattr(sys, "argv", ["transformer-lib", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        console()
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("usage: transformer-lib ")


def test_missing_checkpoint_is_a_clear_error(tmp_path, capsys):
    assert main(["translate", "--checkpoint", str(tmp_path / "none.pt"), "go ."]) == 2
    assert "error: checkpoint" in capsys.readouterr().err


def test_missing_data_says_where_to_put_it(tmp_path, capsys):
    out = str(tmp_path / "m.pt")
    assert main(["train", "--recipe", "d2l", "--out", out, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and str(tmp_path) in err


def test_train_translate_evaluate(tmp_path, data_dir, capsys, monkeypatch):
    ckpt = tmp_path / "d2l.pt"
    log = tmp_path / "log.json"
    assert main(["train", "--recipe", "d2l", "--epochs", "2", "--out", str(ckpt), "--data-dir", str(data_dir),
                 "--quiet", "--device", "cpu", "--log", str(log)]) == 0
    out = capsys.readouterr().out
    assert "641" not in out and "512 training pairs" in out and "saved" in out and ckpt.is_file()
    record = __import__("json").loads(log.read_text())
    assert record["recipe"] == "d2l" and "--recipe d2l" in record["command"]
    assert record["command"].startswith("python -m transformer_lib train ")
    assert [v["epoch"] for v in record["history"]["validation"]] == [1.0, 2.0]
    assert record["machine"]["matmul_2048_gflops"]["float32"] > 0

    assert main(["translate", "--checkpoint", str(ckpt), "go .", "I am xylophone."]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 2
    assert "unknown words read as <unk>: xylophone" in captured.err

    # what the library gives for the saved model: the same lines, with --beam passed on
    from transformer_lib.translation.checkpoint import load_checkpoint
    from transformer_lib.translation.recipes import RECIPES
    from transformer_lib.translation.translate import held_out_bleu, translate

    model, src_vocab, tgt_vocab, _ = load_checkpoint(ckpt)
    split, _, _ = RECIPES["d2l"].load_data(data_dir)       # the checkpoint's recipe, its defaults
    sentences = [" ".join(group.src) for group in split.test[:60]]
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO("".join(s + "\n" for s in sentences)))
    assert main(["translate", "--checkpoint", str(ckpt), "--beam", "2"]) == 0
    expected = [r.text for r in translate(model, sentences, src_vocab, tgt_vocab, beam_size=2)]
    assert capsys.readouterr().out.splitlines() == expected
    greedy = [r.text for r in translate(model, sentences, src_vocab, tgt_vocab)]
    assert greedy != expected                          # so the line above saw --beam at work

    assert main(["translate", "--checkpoint", str(ckpt), ""]) == 2
    assert "empty" in capsys.readouterr().err

    assert main(["evaluate", "--checkpoint", str(ckpt), "--data-dir", str(data_dir), "--beam", "2"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    scores = held_out_bleu(model, split.test, src_vocab, tgt_vocab, beam_sizes=(1, 2))
    assert [row.split() for row in rows] == [
        [*name.split(), f"{score.single:.1f}", f"{score.multi:.1f}"] for name, score in scores.items()]

    ckpt.write_bytes(b"not a checkpoint")
    assert main(["evaluate", "--checkpoint", str(ckpt)]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_train_under_torchrun_with_two_processes(tmp_path, data_dir):
    import subprocess

    ckpt, record = tmp_path / "d2l.pt", tmp_path / "log.json"
    # --record, not --log: torchrun would take --log for its own --log-dir and stop
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "transformer_lib", "train", "--recipe", "d2l", "--epochs", "1", "--out", str(ckpt),
         "--data-dir", str(data_dir), "--quiet", "--device", "cpu", "--record", str(record)],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    # rank 0 alone prints and saves
    assert out.count("512 training pairs") == 1 and out.count("saved") == 1 and ckpt.is_file()
    log = json.loads(record.read_text())
    assert log["processes"] == 2 and "--record" in log["command"]
    assert log["command"].startswith("torchrun --nproc_per_node=2 -m transformer_lib train ")
    assert "processes: 2, each with 1/2 of every batch" in out
    assert main(["translate", "--checkpoint", str(ckpt), "go ."]) == 0
    failed = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "transformer_lib", "train", "--recipe", "d2l", "--max-seconds", "5", "--out",
         str(tmp_path / "x.pt"), "--data-dir", str(data_dir), "--quiet", "--device", "cpu"],
        capture_output=True, text=True, timeout=600)
    assert failed.returncode != 0 and "max_seconds needs one process" in failed.stderr


def test_an_interrupted_training_resumes_to_the_same_weights(tmp_path, data_dir, capsys, monkeypatch):
    import torch

    import transformer_lib.translation.training as training
    from transformer_lib.translation.checkpoint import load_checkpoint

    common = ["train", "--recipe", "d2l", "--epochs", "3", "--data-dir", str(data_dir), "--quiet",
              "--device", "cpu"]
    assert main([*common, "--out", str(tmp_path / "whole.pt")]) == 0
    assert main([*common, "--out", str(tmp_path / "run.pt"), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "there is no" in err and "run.pt.state" in err

    real_fit, real_lr = training.fit, training.learning_rate

    def fit_with_ctrl_c(*args, **kwargs):  # Ctrl-C at step 10, in the third of 4-step epochs
        def stop(history):
            if history.steps and history.steps[-1] >= 10:
                raise KeyboardInterrupt
        return real_fit(*args, **kwargs, callback=stop)

    monkeypatch.setattr(training, "fit", fit_with_ctrl_c)
    assert main([*common, "--out", str(tmp_path / "run.pt")]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "run.pt.state" in err and "--resume" in err
    assert (tmp_path / "run.pt.state").is_file() and not (tmp_path / "run.pt").exists()
    monkeypatch.undo()

    steps = []  # the learning rate is set once per training step
    monkeypatch.setattr(training, "learning_rate", lambda *a: steps.append(1) or real_lr(*a))
    assert main([*common, "--out", str(tmp_path / "run.pt"), "--resume"]) == 0
    assert len(steps) == 4  # the third epoch only: the first two came from the state
    whole, resumed = load_checkpoint(tmp_path / "whole.pt")[0], load_checkpoint(tmp_path / "run.pt")[0]
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
