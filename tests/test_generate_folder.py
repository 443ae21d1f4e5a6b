"""Regenerating into a folder (gen/generate_cli.py): files tilesmith did not write stay, the ones
a previous generation wrote and this one does not are removed, and a file of the user's that a
generation would overwrite makes it refuse, naming the file."""
from __future__ import annotations

import json
import subprocess

import kernel_build
from gen.generate_cli import main as generate_main


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_manifest_lists_exactly_the_files_written(tmp_path):
    out = tmp_path / "out"
    manifest = kernel_build.generate(out, "v8")
    assert sorted(manifest["files"]) == sorted(snapshot(out))
    assert "manifest.json" in manifest["files"] and "tilesmith.h" in manifest["files"]
    assert {k["file"] for k in manifest["kernels"]} <= set(manifest["files"])


def test_the_manifest_names_the_generator_version_the_header_compiles_to(tmp_path):
    """manifest.json's generator version is the TS_VERSION a C compiler sees in the generated
    header (prefix applied), and its source digest is 16 hex digits."""
    out = tmp_path / "out"
    manifest = kernel_build.generate(out, "v8", prefix="acme_")
    source = tmp_path / "version.c"
    source.write_text('#include "tilesmith.h"\nACME_VERSION\n')
    preprocessed = subprocess.run(["gcc", "-E", "-P", "-I", str(out), str(source)], check=True,
                                  capture_output=True, text=True).stdout
    printed = preprocessed.strip().splitlines()[-1].strip().strip('"')
    generator = manifest["generator"]
    assert generator["name"] == "tilesmith" and generator["version"] == printed
    assert len(generator["sources"]) == 16 and int(generator["sources"], 16) >= 0


def test_regeneration_keeps_the_users_files_and_removes_its_own_stale_ones(tmp_path):
    out = tmp_path / "out"
    kernel_build.generate(out, "v82")
    v82_kernels = {k["file"] for k in json.loads((out / "manifest.json").read_text())["kernels"]}
    (out / "build.cmake").write_text("# the user's\n")
    (out / "notes").mkdir()
    (out / "notes" / "todo.txt").write_text("mine\n")
    kernel_build.generate(out, "v8")
    fresh = tmp_path / "fresh"
    kernel_build.generate(fresh, "v8")
    expected = {**snapshot(fresh), "build.cmake": b"# the user's\n", "notes/todo.txt": b"mine\n"}
    assert snapshot(out) == expected
    gone = v82_kernels - set(snapshot(fresh))
    assert gone, "v82 should generate kernels v8 does not (sdot/udot)"
    assert not [name for name in gone if (out / name).exists()]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "out"], "staging folders left behind"


def test_a_file_it_did_not_write_is_never_overwritten(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "tilesmith.h").write_text("/* the user's own header */\n")
    (out / "other.txt").write_text("x")
    assert generate_main(["--arch", "v8", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "tilesmith.h" in error and "did not write" in error
    assert snapshot(out) == {"tilesmith.h": b"/* the user's own header */\n", "other.txt": b"x"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "staging folders left behind"


def test_a_folder_of_other_files_gets_the_generation_beside_them(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    manifest = kernel_build.generate(out, "v8")
    assert (out / "mine.txt").read_text() == "keep me"
    assert "mine.txt" not in manifest["files"]


def test_a_manifest_never_makes_it_delete_outside_the_folder(tmp_path):
    out = tmp_path / "out"
    kernel_build.generate(out, "v8")
    victim = tmp_path / "victim.txt"
    victim.write_text("outside")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"] += ["../victim.txt", str(victim)]
    (out / "manifest.json").write_text(json.dumps(manifest))
    kernel_build.generate(out, "v8")
    assert victim.read_text() == "outside"


def test_a_folder_from_before_the_file_list_is_replaced_as_before(tmp_path):
    """A manifest without "files" comes from a tilesmith that replaced the whole folder on each
    run: everything there counts as its own (e.g. a driver file since renamed)."""
    out = tmp_path / "out"
    kernel_build.generate(out, "v8")
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["files"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "old_driver.c").write_text("/* from an older tilesmith */\n")
    kernel_build.generate(out, "v8")
    assert not (out / "old_driver.c").exists()
    assert "files" in json.loads((out / "manifest.json").read_text())
