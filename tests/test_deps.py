"""scripts/ensure-deps.sh and its probes (deps/): the probes pass here, every command, header
and Python module the code uses is probed in the right group, the packages a probe installs
really provide what it checks, and the stamp never hides a change (issue 9)."""
from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deps import probe as deps_probe
from deps import registry

ROOT = Path(__file__).resolve().parent.parent
ENSURE = ROOT / "scripts" / "ensure-deps.sh"
SUBPROCESS_CALLS = {"run", "Popen", "check_output", "check_call", "call"}
# Which ensure-deps group must cover the code of each folder: `make test` (all) runs tests/ and
# the encoder's verify; `make bench` runs bench/; `make gen` runs gen/.
FOLDER_GROUPS = {"tests": "all", "encoder": "all", "bench": "bench", "gen": "gen"}
SKIPPED_DIRS = {".git", "out", "build", "__pycache__", ".pytest_cache"}
INCLUDE = re.compile(r"^\s*#\s*include\s*<([^>]+)>", re.M)


def ensure_deps(*args, env=None):
    return subprocess.run(["sh", str(ENSURE), *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=ROOT, timeout=300)


# ---- the probes themselves -------------------------------------------------------------------

def test_every_probe_passes_on_this_machine():
    proc = ensure_deps("--check", "all")
    assert proc.returncode == 0, f"ensure-deps --check all:\n{proc.stdout}{proc.stderr}"


def test_the_issue_9_capabilities_are_probed():
    cross = {p.name: p for p in registry.PROBES}["cross-cc"]
    assert {"stdio.h", "stdint.h", "arm_neon.h", "sys/auxv.h"} <= set(cross.headers)
    assert "libc6-dev-arm64-cross" in cross.packages
    kinds = {p.kind for p in registry.probes_for("all")}
    assert {"cross-cc", "qemu", "clang", "llvm", "module"} <= kinds


def test_groups_nest():
    gen, bench, everything = (set(registry.probes_for(g)) for g in registry.GROUPS)
    assert gen <= bench <= everything


@pytest.mark.parametrize("name", [p.name for p in registry.probes_for("all")])
def test_a_missing_capability_names_its_packages(name):
    """Hide the probe's command (or module): ensure-deps names the packages it would install."""
    probe = {p.name: p for p in registry.PROBES}[name]
    hide = probe.commands[0] if probe.commands else probe.module
    proc = ensure_deps("--check", "all", env={"TILESMITH_DEPS_HIDE": hide})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    missing = proc.stdout.split("missing:", 1)[1].split()
    assert set(probe.packages) <= set(missing), f"hiding {hide}: {proc.stdout}{proc.stderr}"
    assert name in proc.stderr and hide in proc.stderr


# ---- the code's commands, headers and modules are probed -------------------------------------

def python_files(folder: str):
    return sorted(p for p in (ROOT / folder).glob("*.py"))


def module_of(path: Path):
    if path.parent.name == "tests":
        return importlib.import_module(path.stem)
    return importlib.import_module(f"{path.parent.name}.{path.stem}")


class CommandFinder:
    """The command (argv[0]) of every subprocess call of one module, resolved through list
    literals, local assignments, parameters (their call sites in the module) and module
    constants. What cannot be resolved is reported, so a command cannot hide from the check."""

    def __init__(self, path: Path):
        self.path = path
        self.tree = ast.parse(path.read_text())
        self._module = None
        self.parents = {child: node for node in ast.walk(self.tree)
                        for child in ast.iter_child_nodes(node)}
        self.unresolved = []

    def function_of(self, node):
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return self.tree

    def evaluate(self, expr, scope=None):
        if self._module is None:                # imported only when needed
            self._module = module_of(self.path)
        namespace = {"sys": sys, "os": os, **vars(self._module), **self.local_imports(scope)}
        return eval(compile(ast.Expression(expr), str(self.path), "eval"), namespace)

    @staticmethod
    def local_imports(scope) -> dict:
        """Names a function imports itself (`from cross import GCC` inside a test)."""
        names = {}
        for node in ast.walk(scope) if isinstance(scope, ast.FunctionDef) else ():
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                module = importlib.import_module(node.module)
                names.update({a.asname or a.name: getattr(module, a.name) for a in node.names
                              if hasattr(module, a.name)})
        return names

    def strings(self, expr, scope) -> set:
        """Values of an expression that is one command name."""
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.Name) and self.assignments(expr.id, scope):
            return set().union(*(self.strings(v, scope) for v in self.assignments(expr.id, scope)))
        try:
            value = self.evaluate(expr, scope)
        except Exception:                       # noqa: BLE001 - reported below
            value = None
        if isinstance(value, str):
            return {value}
        self.unresolved.append(f"{self.path.name}:{expr.lineno}: {ast.unparse(expr)}")
        return set()

    def heads(self, expr, scope) -> set:
        """argv[0] values of an expression that is a command list."""
        if isinstance(expr, (ast.List, ast.Tuple)) and expr.elts:
            first = expr.elts[0]
            return self.heads(first.value, scope) if isinstance(first, ast.Starred) \
                else self.strings(first, scope)
        if isinstance(expr, ast.IfExp):
            return self.heads(expr.body, scope) | self.heads(expr.orelse, scope)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.heads(expr.left, scope)
        if isinstance(expr, ast.Name) and self.assignments(expr.id, scope):
            return set().union(*(self.heads(v, scope) for v in self.assignments(expr.id, scope)))
        if isinstance(expr, ast.Name) and self.is_parameter(expr.id, scope):
            return self.parameter_heads(expr.id, scope)
        if isinstance(expr, ast.Subscript):     # a table of commands: every entry
            try:
                table = self.evaluate(expr.value)
                rows = table.values() if isinstance(table, dict) else table
                return {row[0] for row in rows}
            except Exception:                   # noqa: BLE001 - reported below
                pass
        try:
            value = self.evaluate(expr)
            return {value[0]} if isinstance(value[0], str) else set()
        except Exception:                       # noqa: BLE001 - reported below
            self.unresolved.append(f"{self.path.name}:{expr.lineno}: {ast.unparse(expr)}")
            return set()

    def assignments(self, name, scope) -> list:
        """Values bound to `name` in scope: `name = value`, and each item of a literal
        sequence in `for name in (...)`."""
        values = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                    for t in node.targets):
                values.append(node.value)
            elif (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
                  and node.target.id == name and isinstance(node.iter, (ast.Tuple, ast.List))):
                values += node.iter.elts
        return values

    @staticmethod
    def is_parameter(name, scope) -> bool:
        return isinstance(scope, ast.FunctionDef) and name in [a.arg for a in scope.args.args]

    def parameter_heads(self, name, function) -> set:
        position = [a.arg for a in function.args.args].index(name)
        calls = [node for node in ast.walk(self.tree) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Name) and node.func.id == function.name]
        if not calls:
            self.unresolved.append(f"{self.path.name}: parameter {name} of {function.name}, "
                                   f"which this module never calls")
        return set().union(set(), *(self.heads(call.args[position], self.function_of(call))
                                    for call in calls if len(call.args) > position))

    def commands(self) -> set:
        found = set()
        for node in ast.walk(self.tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "subprocess"
                    and node.func.attr in SUBPROCESS_CALLS and node.args):
                found |= self.heads(node.args[0], self.function_of(node))
        return found


def commands_of(folder: str) -> dict:
    """{command: [files running it]} of a folder's Python modules; fails on unresolved ones."""
    found, unresolved = {}, []
    for path in python_files(folder):
        if "subprocess" not in path.read_text():
            continue
        finder = CommandFinder(path)
        for command in finder.commands():
            found.setdefault(command, []).append(path.name)
        unresolved += finder.unresolved
    assert not unresolved, ("cannot tell which command these subprocess calls run (name it with a "
                            "module-level constant):\n" + "\n".join(unresolved))
    return found


def test_the_command_finder_sees_commands():
    """The finder itself: it must find the cross compiler and qemu in tests/, llvm-mca in bench/."""
    assert {registry.CROSS_GCC, registry.QEMU, registry.CLANG} <= set(commands_of("tests"))
    assert {registry.LLVM_MCA, registry.QEMU, registry.HOST_CC} <= set(commands_of("bench"))


@pytest.mark.parametrize("folder", sorted(FOLDER_GROUPS))
def test_every_command_the_code_runs_is_probed(folder):
    group = FOLDER_GROUPS[folder]
    covered = (registry.probed_commands(group) | set(registry.ESSENTIAL_COMMANDS)
               | {sys.executable, registry.PYTHON})
    missing = {c: files for c, files in commands_of(folder).items() if c not in covered}
    assert not missing, (f"commands run in {folder}/ that ensure-deps group {group!r} does not "
                         f"probe (add them to deps/registry.py): {missing}")


def c_sources():
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS
                       and not (Path(dirpath) / d).match("bench/out")]
        for name in filenames:
            if name.endswith((".c", ".h", ".j2", ".S")):
                yield Path(dirpath) / name


def test_every_system_header_the_c_code_includes_is_probed():
    target, host = set(registry.TARGET_HEADERS), set(registry.HOST_HEADERS)
    allowed_target = target | set(registry.NOT_LINUX_HEADERS)
    missing, seen = [], set()
    for path in c_sources():
        is_host = path.parent.name == "plugin"       # bench/plugin: built by the host gcc
        for header in INCLUDE.findall(path.read_text(errors="replace")):
            seen.add(header)
            if header not in (host if is_host else allowed_target):
                missing.append(f"{path.relative_to(ROOT)}: <{header}>")
    assert not missing, "system headers no probe compiles (add them to deps/registry.py):\n" + \
        "\n".join(missing)
    assert {"stdio.h", "arm_neon.h", "pthread.h"} <= seen, "the header scan found nothing"


def third_party_imports(folder: str) -> set:
    local = {"gen", "encoder", "bench", "deps", "tests"} | {p.stem for p in python_files("tests")}
    names = set()
    for path in python_files(folder):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in local}


@pytest.mark.parametrize("folder", sorted(FOLDER_GROUPS))
def test_every_python_module_the_code_imports_is_probed(folder):
    group = FOLDER_GROUPS[folder]
    probed = {p.module for p in registry.probes_for(group) if p.module}
    missing = third_party_imports(folder) - probed
    assert not missing, f"{folder}/ imports {sorted(missing)}, which group {group!r} does not probe"


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a dpkg system")
def test_unprobed_commands_come_from_essential_packages():
    owned = owners([shutil.which(c) for c in registry.ESSENTIAL_COMMANDS])
    assert len(owned) == len(registry.ESSENTIAL_COMMANDS), owned
    for path, package in owned.items():
        essential = subprocess.run(["dpkg-query", "-W", "-f", "${Essential}", package],
                                   capture_output=True, text=True, check=True).stdout
        assert essential == "yes", f"{path} is from {package}, which is not Essential"


# ---- the packages really provide what is probed ----------------------------------------------

def installed_dependencies() -> tuple:
    """(Depends + Pre-Depends of every installed package, who provides each virtual package)."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\t${Provides}\t${Depends}, "
                          "${Pre-Depends}\n"], capture_output=True, text=True, check=True).stdout
    depends, provides = {}, {}
    clean = lambda item: re.sub(r"[:(].*", "", item).strip()      # noqa: E731
    for line in out.splitlines():
        package, provided, needed = line.split("\t")
        depends[package] = {clean(alt) for item in needed.split(",") for alt in item.split("|")
                            if clean(alt)}
        for name in provided.split(","):
            if clean(name):
                provides.setdefault(clean(name), set()).add(package)
    return depends, provides


def closure(packages, depends, provides) -> set:
    seen, todo = set(), list(packages)
    while todo:
        package = todo.pop()
        if package in seen:
            continue
        seen.add(package)
        todo += depends.get(package, set()) | provides.get(package, set())
    return seen


def dpkg_search(paths) -> dict:
    """{path: package} for the paths dpkg knows (one `dpkg -S` call)."""
    proc = subprocess.run(["dpkg", "-S", *paths], capture_output=True, text=True)
    found = {}
    for line in proc.stdout.splitlines():
        packages, _, path = line.partition(": ")
        found[path.strip()] = packages.split(",")[0].strip()
    return found


def owners(files) -> dict:
    """{file: owning package}, also tried through symlinks and without a merged-/usr prefix."""
    variants = {f: list(dict.fromkeys([f, os.path.realpath(f), re.sub(
        r"^/usr(?=/lib|/bin|/sbin)", "", os.path.realpath(f))])) for f in files}
    found = dpkg_search(sorted({v for vs in variants.values() for v in vs}))
    return {f: next(found[v] for v in vs if v in found)
            for f, vs in variants.items() if any(v in found for v in vs)}


def probe_files(probe, tmp_path) -> list:
    results = {}
    runner = deps_probe.RUNNERS[probe.kind]
    files = runner(probe, tmp_path, results) if probe.kind != "qemu" else []
    commands = [os.path.realpath(shutil.which(c)) for c in probe.commands]
    return [f for f in files if not f.startswith(str(tmp_path))] + commands


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a dpkg system")
@pytest.mark.parametrize("name", [p.name for p in registry.PROBES if p.kind != "module"])
def test_the_packages_of_a_probe_provide_its_files(name, tmp_path):
    """Every command and header a probe relies on belongs to one of its packages or to what
    they depend on (Recommends do not count: ensure-deps installs without them). This is what
    catches a cross compiler listed without the C library it only recommends."""
    probe = {p.name: p for p in registry.PROBES}[name]
    files = probe_files(probe, tmp_path)
    assert files
    owned = owners(files)
    unowned = sorted(set(files) - set(owned))
    assert not unowned, f"{name}: files of no package: {unowned}"
    reachable = closure(probe.packages, *installed_dependencies())
    foreign = {f: p for f, p in owned.items() if p.split(":")[0] not in reachable}
    assert not foreign, (f"probe {name} relies on packages its list {probe.packages} does not "
                         f"bring in: {foreign}")


# ---- the stamp -------------------------------------------------------------------------------

def test_the_stamp_makes_a_second_run_a_no_op_and_a_changed_file_reprobes(tmp_path):
    env = {"TILESMITH_DEPS_STAMP_DIR": str(tmp_path), "TILESMITH_DEPS_DRY_RUN": "1"}
    assert ensure_deps("gen", env=env).returncode == 0
    stamp = tmp_path / "deps-gen.stamp"
    lines = stamp.read_text().splitlines()
    assert any(line.endswith(" /var/lib/dpkg/status") for line in lines[1:])
    assert any("jinja2" in line for line in lines[1:])
    # A file the probes relied on changes (here: one added to the stamp, then deleted): the
    # stamp no longer counts and the probes run again, writing a new stamp without that line.
    witness = tmp_path / "witness"
    witness.write_text("x")
    recorded = subprocess.run(["stat", "-c", "%.9Y %s %n", str(witness)], capture_output=True,
                              text=True, check=True).stdout
    stamp.write_text(stamp.read_text() + recorded)
    assert ensure_deps("gen", env=env).returncode == 0
    assert str(witness) in stamp.read_text(), "an intact stamp was not trusted"
    witness.unlink()
    assert ensure_deps("gen", env=env).returncode == 0
    assert str(witness) not in stamp.read_text(), "a stale stamp was trusted"


def test_a_trusted_stamp_still_reprobes_when_the_scripts_change(tmp_path):
    env = {"TILESMITH_DEPS_STAMP_DIR": str(tmp_path)}
    assert ensure_deps("gen", env=env).returncode == 0
    stamp = tmp_path / "deps-gen.stamp"
    stamp.write_text("an older key\n" + stamp.read_text().split("\n", 1)[1])
    assert ensure_deps("gen", env=env).returncode == 0
    assert not stamp.read_text().startswith("an older key")


def test_the_all_stamp_covers_the_cross_headers(tmp_path):
    env = {"TILESMITH_DEPS_STAMP_DIR": str(tmp_path)}
    assert ensure_deps("all", env=env).returncode == 0
    text = (tmp_path / "deps-all.stamp").read_text()
    assert re.search(r" /usr/aarch64-linux-gnu/include/stdio\.h$", text, re.M), \
        "the cross C library's headers are not in the stamp"


def test_a_broken_probe_is_an_error_not_all_there(tmp_path):
    """A probe that crashes (exit 1, a traceback) must not pass for "nothing missing"."""
    shutil.copytree(ROOT / "deps", tmp_path / "deps")
    (tmp_path / "scripts").mkdir()
    shutil.copy(ENSURE, tmp_path / "scripts" / "ensure-deps.sh")
    probe_py = tmp_path / "deps" / "probe.py"
    probe_py.write_text(probe_py.read_text().replace("def run_probes(group: str) -> tuple:",
                                                     "def run_probes(group: str) -> tuple:\n    1 / 0"))
    for args in (("--check", "gen"), ("gen",)):
        proc = subprocess.run(["sh", str(tmp_path / "scripts" / "ensure-deps.sh"), *args],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0, f"{args}: a crashing probe passed\n{proc.stderr}"
        assert "the probe itself failed" in proc.stderr
    assert not (tmp_path / "build").exists()
