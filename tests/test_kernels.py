"""`python3 -m gen generate`: output files, manifest, header, determinism, option errors, and that
every generated `.S` assembles with GNU as (-march=armv8-a), clang Mach-O / COFF, and passes
`python3 -m encoder verify`."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from cross import CLANG, GCC, ROOT
from encoder.encoding import is_known_instruction
from gen.epilogue import ARGS_BYTES, ARGS_FIELDS
from gen import ntail, qdyn8_dot
from gen.gemv import GEMV_FORMS, GEMV_INSTRUCTIONS
from gen.generate_cli import main as generate_main
from gen.isa import ARCH_LEVELS, INSTRUCTIONS, generated_for, signature, sme_generated_for
from gen.strip import STRIP_FIELDS
import kernel_build

INST_MODES = ("auto", "always", "never")
MANIFEST_KEYS = {"symbol", "file", "instruction", "mnemonic", "signature", "a_type", "b_type",
                 "c_type", "source_type", "feature", "arch", "ep", "hp", "lp", "strategy",
                 "regs_a", "regs_b", "regs_c", "vregs_used", "gpregs_used", "callee_saved_used",
                 "a_layout", "b_layout", "role", "epilogue", "out_type", "variants", "core_class"}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """outputs(arch, inst) -> (folder, manifest), generated once per test session."""
    return lambda arch, inst="auto": kernel_build.cached_output(tmp_path_factory, arch, inst)


def _instruction_lines(text):
    """(statement, comment) of every instruction line of a .S (directives, labels, comments and
    preprocessor lines skipped)."""
    for line in text.splitlines():
        code, _, comment = line.partition("//")
        code = re.sub(r"^\s*[\w.]+:", "", code).strip()
        if code and not code.startswith(("#", ".")) or code.startswith(".inst"):
            yield code, comment.strip()


@pytest.mark.parametrize("arch", ARCH_LEVELS)
@pytest.mark.parametrize("inst", INST_MODES)
def test_generate_writes_one_kernel_per_instruction(outputs, arch, inst):
    out, manifest = outputs(arch, inst)
    assert (manifest["arch"], manifest["prefix"], manifest["inst"], manifest["cpu"]) == \
        (arch, "ts_", inst, "generic")
    kernels = manifest["kernels"]
    names = [i.name for i in generated_for(arch)]
    # the GEMM kernels, then one GEMV / small-M kernel per instruction of gen/gemv.py
    # GEMV_INSTRUCTIONS (fmla_f16 and fmlal have none yet), of that instruction or a GEMV form
    # of it (gen/gemv.py GEMV_FORMS), in the order of the kernels they serve, then the
    # column-tail kernels of gen/ntail.py N_TAIL_INSTRUCTIONS (role ntail: same instruction and
    # ep, narrower, each width the solver can feed, serving the main kernel), then the
    # core-class variants (CPU=generic): role core_class, symbol suffix _<class>
    small = [n for n in names if n in GEMV_INSTRUCTIONS]
    main = {k["symbol"]: k["instruction"] for k in kernels if k["role"] == "main"}
    mains = {k["symbol"]: k for k in kernels if k["role"] == "main"}
    head = kernels[:len(names) + len(small)]
    assert [k["instruction"] for k in head[:len(names)]] == names
    assert [main[k["serves"]] for k in head[len(names):]] == small
    for k in head[len(names):]:
        assert k["instruction"] in (main[k["serves"]], *GEMV_FORMS.get(main[k["serves"]], ()))
    assert [k["role"] for k in head] == ["main"] * len(names) + ["gemv"] * len(small)
    tails = [k for k in kernels[len(head):] if k["role"] == "ntail"]
    assert kernels[len(head):len(head) + len(tails)] == tails
    assert [k["instruction"] for k in tails] == [
        t.instruction for m in mains.values()
        for t in ntail.tails(m["instruction"], m["ep"], m["hp"])]
    assert "fmla_f32" in [k["instruction"] for k in tails]
    for k in tails:
        served = mains[k["serves"]]
        assert (k["instruction"], k["ep"]) == (served["instruction"], served["ep"])
        assert k["hp"] < served["hp"]
        assert [v["epilogue"] for v in k["variants"]] == [v["epilogue"] for v in served["variants"]]
    # then the qdyn int8 decode tiles (gen/qdyn8_dot.py: the main kernel's hp and lp, fewer rows)
    rest = kernels[len(head) + len(tails):]
    assert {k["role"] for k in rest} <= {"core_class", "qdyn_gemv"}
    decode = [k for k in rest if k["role"] == "qdyn_gemv"]
    assert rest[len(rest) - len(decode):] == decode
    assert [k["instruction"] for k in decode] == [
        n for n in names if n in qdyn8_dot.QDYN8_DOT_INSTRUCTIONS]
    for k in decode:
        served = mains[k["serves"]]
        assert (k["instruction"], k["hp"], k["lp"]) == (served["instruction"], served["hp"],
                                                        served["lp"])
        assert k["ep"] < served["ep"] and 1 <= k["max_m"] <= 4 and k["variants"] == []
    for k in kernels:
        assert MANIFEST_KEYS <= set(k)
        i = INSTRUCTIONS[k["instruction"]]
        suffix = "_" + k["core_class"] if k["role"] == "core_class" else ""
        assert k["symbol"] == (f"ts_gemm_{signature(i)}_{i.mnemonic}_{k['ep']}x{k['hp']}x{k['lp']}"
                               f"{suffix}")
        assert k["file"] == k["symbol"] + ".S" and (out / k["file"]).is_file()
        assert (k["feature"], k["arch"], k["lp"]) == (i.feature, i.arch, i.k)
        assert (k["role"], k["core_class"]) in {("main", "generic"), ("gemv", "generic"),
                                                ("qdyn_gemv", "generic"),
                                                ("ntail", "generic"),
                                                ("core_class", "ooo"), ("core_class", "inorder")}
        assert k["regs_c"] == i.c_regs(k["ep"], k["hp"])
    sme = manifest.get("sme_kernels", [])     # ARCH v92: tests/test_sme_kernels.py
    assert ([k["instruction"] for k in sme if k["epilogue"] == "raw"]
            == [i.name for i in sme_generated_for(arch)])
    assert sorted(p.name for p in out.glob("*.S")) == sorted(
        [f for _, _, _, f in kernel_build.all_kernels(manifest)] + [k["file"] for k in sme]
        + [k["file"] for k in manifest.get("qdyn_kernels", [])]     # tests/test_qdyn4.py
        + [k["file"] for k in manifest.get("sme_packers", [])])     # tests/test_sme_pack.py
    assert (out / "ts_kernels.h").is_file()


@pytest.mark.parametrize("inst", INST_MODES)
def test_inst_mode_decides_what_becomes_inst_words(outputs, inst):
    out, manifest = outputs("v86", inst)
    for k, _, _, file in kernel_build.all_kernels(manifest):
        for code, comment in _instruction_lines((out / file).read_text()):
            if code.startswith(".inst"):
                mnemonic = comment.split()[0]
                assert inst != "never", code
                assert inst == "always" or INSTRUCTIONS[k["instruction"]].feature, code
            else:
                mnemonic = code.split()[0]
                known = is_known_instruction(code)      # mov x.., #0 is not the encoder's
                assert not (known and inst == "always"), f"{file}: {code} left as mnemonic"
                mac = INSTRUCTIONS[k["instruction"]].mnemonic
                assert not (known and inst == "auto" and k["feature"]
                            and mnemonic.startswith(mac)), f"{file}: {code}"


def test_registers_match_manifest_and_abi(outputs):
    """The registers the code names are the manifest's; v8-v15 used => d8-d15 saved and
    restored; no x18 and no x19-x28 (the kernels need no callee-saved general registers) but
    in a strip entry (gen/strip.py), which saves and restores each of them it uses."""
    out, manifest = outputs("v86", "never")
    for raw, _, symbol, file in kernel_build.all_kernels(manifest):
        k = raw if symbol == raw["symbol"] else \
            next(v for v in raw["variants"] if v["symbol"] == symbol)
        k = dict(k, file=file)
        text = (out / file).read_text()
        lines = [code for code, _ in _instruction_lines(text)]
        vregs = {int(n) for line in lines for n in re.findall(r"\b[vqdshb](\d+)\b", line)}
        assert vregs == set(k["vregs_used"]), k["file"]
        xregs = {f"x{n}" for line in lines for n in re.findall(r"\b[xw](\d+)\b", line)}
        assert xregs == set(k["gpregs_used"]) and "x18" not in xregs
        tile, _, strip = text.partition("\nSTRIP_SYMBOL:")
        assert bool(strip) == bool(k.get("strip")), k["file"]
        tile_regs = {n for code, _ in _instruction_lines(tile)
                     for n in re.findall(r"\b[xw](\d+)\b", code)}
        assert not tile_regs & {str(n) for n in range(18, 29)}, k["file"]
        strip_lines = [code for code, _ in _instruction_lines(strip)]
        used = {n for code in strip_lines for n in re.findall(r"\b[xw](\d+)\b", code)
                if 19 <= int(n) <= 30}
        for op in ("stp", "ldp"):     # each saved and restored at the strip's frame
            pairs = {n for code in strip_lines if code.startswith(f"{op} x") and "[sp" in code
                     for n in re.findall(r"\bx(\d+)\b", code)}
            assert used <= pairs, (k["file"], op, used - pairs)
        saved = [f"d{n}" for n in range(8, 16) if n in vregs]
        assert k["callee_saved_used"] == saved
        # pairs (stp / ldp) and, for an odd count, one single (str / ldr: the sdot 8x4x4
        # column tail's _requant saves d8-d12)
        stored = {d for line in lines if re.match(r"st[pr] d", line) and "[sp" in line
                  for d in re.findall(r"\bd\d+\b", line)}
        loaded = {d for line in lines if re.match(r"ld[pr] d", line) and "[sp" in line
                  for d in re.findall(r"\bd\d+\b", line)}
        assert stored == loaded == set(saved), k["file"]


def _mca_region(text):
    return text[text.index("// LLVM-MCA-BEGIN"):text.index("// LLVM-MCA-END")]


def test_every_kernel_has_one_mca_region(outputs):
    out, manifest = outputs("v86")
    for k, _, symbol, file in kernel_build.all_kernels(manifest):
        text = (out / file).read_text()
        assert text.count(f"// LLVM-MCA-BEGIN {symbol}\n") == 1
        assert text.count("// LLVM-MCA-END") == 1
        assert text.index("LLVM-MCA-BEGIN") < text.index("b.hs K_LOOP") < text.index("LLVM-MCA-END")


def unused_label_macros(text):
    """The K_* label macros a .S file #defines that no other line names (neither places nor
    branches to), and the labels it places that nothing branches to."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#define"))
    defined = set(re.findall(r"^#define\s+(K_\w+)", text, re.M))
    unused = {n for n in defined if not re.search(rf"\b{n}\b", body)}
    unbranched = {n for n in defined - unused
                  if not re.search(rf"\b{n}\b", re.sub(rf"^{n}:", "", body, flags=re.M))}
    return unused | unbranched


@pytest.mark.parametrize("arch", ["v86", "v92"])
def test_every_label_macro_is_used(outputs, arch):
    """Each kernel, qdyn kernel, SME kernel and SME packer defines the labels its code uses
    only (gen.epilogue.render_with_used_labels; the SME emitters collect theirs)."""
    out, _ = outputs(arch)
    files = sorted(out.glob("*.S"))
    assert len(files) > 40
    assert unused_label_macros("#define K_A .La\n#define K_B .Lb\nK_B:\n") == {"K_A", "K_B"}
    assert unused_label_macros("#define K_A .La\nK_A:\n        b K_A\n") == set()
    found = {f.name: sorted(unused_label_macros(f.read_text())) for f in files}
    assert {name: labels for name, labels in found.items() if labels} == {}


def test_epilogue_variants_share_the_k_loop(outputs):
    """An epilogue variant's k-loop is its raw kernel's, instruction for instruction."""
    out, manifest = outputs("v86")
    for k in manifest["kernels"]:
        raw = _mca_region((out / k["file"]).read_text()).replace(k["symbol"], "SYMBOL")
        for v in k["variants"]:
            text = _mca_region((out / v["file"]).read_text()).replace(v["symbol"], "SYMBOL")
            assert text == raw, v["file"]


def test_cpu_suffix_and_prefix(tmp_path):
    manifest = kernel_build.generate(tmp_path / "o", "v8", cpu="cortex-a510", prefix="my_")
    assert manifest["cpu"] == "cortex-a510"
    for k in manifest["kernels"]:
        assert k["symbol"].startswith("my_gemm_") and k["symbol"].endswith("_cortexa510")
    assert (tmp_path / "o" / "my_kernels.h").is_file()


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_output_is_deterministic(outputs, tmp_path):
    first, _ = outputs("v86")
    kernel_build.generate(tmp_path / "again", "v86")
    assert _snapshot(tmp_path / "again") == _snapshot(first)


@pytest.mark.parametrize("option,value,valid", [
    ("--arch", "v9", "v8, v82, v86"),
    ("--cpu", "cortex-x1", "generic, "),
    ("--inst", "sometimes", "auto, always, never"),
    ("--prefix", "9ts_", "C identifier"),
    ("--prefix", "ts-", "C identifier"),
    ("--prefix", "", "<errno.h>"),   # header macros OK / EINVAL / ENOMEM would clash with errno's
    ("--prefix", "_", "reserves"),   # _OK, _EINVAL: reserved identifiers (C11 7.1.3)
    ("--prefix", "eng_", "reserves"),   # ENG_EINVAL: E + letter belongs to <errno.h> (C11 7.31.3)
    ("--prefix", "str", "reserves"),    # strgemm_f32: str + letter (C11 7.31.13)
])
def test_bad_option_is_an_error_and_writes_nothing(tmp_path, capsys, option, value, valid):
    args = {"--arch": "v86", "--cpu": "generic", "--inst": "auto", "--prefix": "ts_"}
    args[option] = value
    argv = [x for pair in args.items() for x in pair] + ["--out", str(tmp_path / "out")]
    assert generate_main(argv) == 2
    error = capsys.readouterr().err
    assert value in error and valid in error
    assert not (tmp_path / "out").exists()


def test_cpu_without_the_arch_features_is_an_error(tmp_path, capsys):
    assert generate_main(["--arch", "v86", "--cpu", "cortex-a55", "--out", str(tmp_path / "o")]) == 2
    assert "cortex-a55 lacks" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_unwritable_out_is_an_error_not_a_traceback(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = blocker / "out"            # its parent is a regular file: mkdir fails (OSError)
    assert generate_main(["--arch", "v8", "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert "cannot write --out" in error and str(out) in error
    assert blocker.read_text() == "not a folder"


def test_cli_entry_point(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "v8", "--out",
                           str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "gen", "generate", "--arch", "bogus"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "v8, v82, v86" in proc.stderr


def _assemble(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stderr}"


@pytest.mark.parametrize("inst", INST_MODES)
def test_gnu_as_armv8a_assembles_every_kernel(outputs, tmp_path, inst):
    """INST=auto/always need no extension flag; INST=never carries its own .arch line."""
    out, manifest = outputs("v86", inst)
    for _, _, _, file in kernel_build.all_kernels(manifest):
        _assemble([GCC, "-march=armv8-a", "-c", out / file, "-o", tmp_path / "k.o"])


@pytest.mark.parametrize("target,symbol_prefix", [
    ("arm64-apple-macos", "_"), ("aarch64-pc-windows-msvc", ""), ("aarch64-linux-gnu", "")])
@pytest.mark.parametrize("inst", ["auto", "never"])
def test_clang_assembles_for_macho_coff_elf(outputs, tmp_path, target, symbol_prefix, inst):
    out, manifest = outputs("v86", inst)
    for kernel, _, symbol, file in kernel_build.all_kernels(manifest):
        obj = tmp_path / "k.o"
        _assemble([CLANG, f"--target={target}", "-c", out / file, "-o", obj])
        nm = subprocess.run(["llvm-nm-19", "--defined-only", "--extern-only", obj],
                            capture_output=True, text=True, check=True).stdout.split()
        # the kernel, and its strip entry when it has one (gen/strip.py), in name order
        strip = kernel_build.strip_of(kernel, symbol)
        want = [symbol_prefix + s for s in (symbol, strip) if s]
        assert nm[1::3] == ["T"] * len(want) and nm[2::3] == want, nm


@pytest.mark.parametrize("inst", ["auto", "always"])
def test_encoder_verify_passes(outputs, inst):
    out, manifest = outputs("v86", inst)
    proc = subprocess.run([sys.executable, "-m", "encoder", "verify",
                           *sorted(str(p) for p in out.glob("*.S"))],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b[1-9]\d* \.inst words verified", proc.stdout)


def test_kernel_header_matches_manifest(outputs, tmp_path):
    """The header compiles as strict C99 and C++, declares every kernel with the ABI type, and
    its macros equal the manifest's tile sizes (checked by the compiler)."""
    out, manifest = outputs("v86")
    checks = []
    for k in manifest["kernels"]:
        s, i = k["symbol"].upper(), k["instruction"].upper()
        i += "_GEMV" if k["role"] == "gemv" else ""
        checks += [f"ts_microkernel_fn f_{k['symbol']} = {k['symbol']};",
                   f"_Static_assert({s}_EP == {k['ep']} && {s}_HP == {k['hp']} && "
                   f"{s}_LP == {k['lp']}, \"{s}\");"]
        if k["role"] == "main":   # TS_KERNEL_<INSTRUCTION>: the generic kernel, not a variant
            checks.append(f"_Static_assert(TS_KERNEL_{i}_EP == {k['ep']} && "
                          f"TS_HAVE_KERNEL_{i}, \"{i}\");")
        checks += [f"ts_microkernel_fn f_{v['symbol']} = {v['symbol']};" for v in k["variants"]]
    # the argument block's layout is the ABI's (gen.epilogue.ARGS_FIELDS)
    checks += [f"_Static_assert(offsetof(ts_tile_args, {name}) == {offset}, \"{name}\");"
               for name, offset, _, _ in ARGS_FIELDS]
    checks.append(f"_Static_assert(sizeof(ts_tile_args) == {ARGS_BYTES}, \"size\");")
    # the strip entries (gen/strip.py): declared with the strip descriptor, whose layout is
    # the ABI's (STRIP_FIELDS)
    strips = [v["strip"] for k in manifest["kernels"] for v in k["variants"] if v.get("strip")]
    assert "ts_gemm_s8s32_smmla_8x8x8_requant_strip" in strips
    checks += [f"void (*s_{name})(const void *, const void *, size_t, void *, size_t, "
               f"const ts_tile_args *, const ts_strip *) = {name};" for name in strips]
    checks += [f"_Static_assert(offsetof(ts_strip, {name}) == {offset}, \"{name}\");"
               for name, offset, _, _ in STRIP_FIELDS]
    source = tmp_path / "use_header.c"
    source.write_text('#include <stddef.h>\n#include "ts_kernels.h"\n' + "\n".join(checks) + "\n")
    _assemble([GCC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I", out, "-c",
               source, "-o", tmp_path / "h.o"])
    cxx = tmp_path / "use_header.cc"
    cxx.write_text('#include "ts_kernels.h"\nint main() { return 0; }\n')
    _assemble([CLANG, "--target=aarch64-linux-gnu", "-x", "c++", "-Wall", "-Werror", "-I", out,
               "-c", cxx, "-o", tmp_path / "hpp.o"])
    text = (out / "ts_kernels.h").read_text()
    assert "Micro-kernel ABI" in text and "x18 is never touched" in text


def test_abi_comment_is_whole_lines_in_header_and_kernels(outputs):
    """The ABI text appears line for line behind the comment leader (no line glued to the next)."""
    out, manifest = outputs("v82")
    abi = (ROOT / "templates" / "kernel_abi.j2").read_text().rstrip("\n").split("\n")
    header = (out / "ts_kernels.h").read_text().split("\n")
    start = header.index(" * " + abi[0])
    assert header[start:start + len(abi)] == [(" * " + line).rstrip() for line in abi]
    assert header[start + len(abi)] == " *"
    kernel = (out / manifest["kernels"][0]["file"]).read_text().split("\n")
    start = kernel.index("// " + abi[0])
    assert kernel[start:start + len(abi)] == [("// " + line).rstrip() for line in abi]
    assert kernel[start + len(abi)] == ""


def test_every_kernel_documents_the_abi(outputs):
    out, manifest = outputs("v86")
    for k, _, _, file in kernel_build.all_kernels(manifest):
        text = (out / file).read_text()
        assert "// Micro-kernel ABI" in text and f"Tile {k['ep']}x{k['hp']}x{k['lp']}" in text


def test_manifest_is_the_json_written(outputs):
    out, manifest = outputs("v82")
    assert json.loads((out / "manifest.json").read_text()) == manifest


def test_instruction_comments_share_one_column(outputs):
    """Every instruction line's trailing comment starts at column 48 (after longer code: one
    space), the hand-written lines of the template included."""
    out, manifest = outputs("v82")
    for k, _, _, file in kernel_build.all_kernels(manifest):
        for number, line in enumerate((out / file).read_text().split("\n"), 1):
            if not re.match(r"        [a-z]", line) or " // " not in line or line.lstrip().startswith(".inst"):
                continue
            code = line.split(" // ")[0].rstrip()
            want = max(len(code) + 1, 48)
            assert line.index(" // ") + 1 == want, f"{file}:{number}: {line!r}"
