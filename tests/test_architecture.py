"""The package's layering, checked on the source: who imports whom, where ROS lives, module size.

Layers (docs/design.md has the map), lowest first; a package imports only from its own row or the
rows above it, at module level and inside functions alike:

| layer | packages | may import (motor_ident) |
|---|---|---|
| 0 | errors, schema | each other |
| 1 | core, papers/<author>/bench.py (a paper's bench data, a node default) | 0, core |
| 2 | io; sim | 0, 1, io; sim also io and sim |
| 3 | scenario | 0-2, scenario |
| 4 | ros | 0-3, ros |
| 5 | papers (all but the benches) | 0-3, papers (not ros) |
| 5 | fleet (Dask, parameter store, drift alarms) | 0-2, fleet |
| 6 | commands | anything but cli |
| 7 | cli | commands, errors |

Inside ros, the groups import one way (ROS_GROUPS; docs/nodes.md, "Layout"): wire <- runtime <- nodes,
recording <- monitor, bench. The entry points and the runner name the nodes by module string only.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "motor_ident"
ROS_MODULES = ("rclpy", "rosidl", "rosgraph_msgs", "builtin_interfaces", "launch", "launch_ros")
BASE = {"errors", "schema"}
# layer -> the layers it may import (besides BASE, which everyone may import)
ALLOWED: dict[str, set[str]] = {
    "base": BASE,
    "core": {"core"},
    "io": {"core", "io"},
    "sim": {"core", "io", "sim"},
    "scenario": {"core", "io", "sim", "scenario"},
    "ros": {"core", "io", "sim", "scenario", "ros"},
    "papers": {"core", "io", "sim", "scenario", "papers"},
    "fleet": {"core", "io", "sim", "fleet"},
    "commands": {"core", "io", "sim", "scenario", "ros", "papers", "fleet", "commands"},
    "cli": {"commands"},
    "package": set(),
}
# third-party packages a module may import inside a function, besides rclpy and messages (in ros/
# only), because they are slow to import (python -X importtime, idle machine: cvxpy 1.1 s, gmr 1.3 s,
# matplotlib.pyplot 0.7 s, scipy.stats 0.8 s, scipy.signal 0.6 s) or optional (threadpoolctl,
# ament_index_python); each such import says so in a comment. Everything else is imported at the top
# of its module. commands/* may import inside functions: every command module is imported to build
# the parser of `motor-ident --help`.
LAZY_ALLOWED = ("cvxpy", "gmr", "matplotlib", "scipy.signal", "scipy.stats", "threadpoolctl", "ament_index_python")
# modules still importing motor_ident (or a fast package) inside functions; delete an entry once its
# imports sit at the module top
LAZY_PENDING = {
    "motor_ident/core/estimation/online.py",
    "motor_ident/ros/recording/bag_player.py",
    "motor_ident/ros/runtime/common.py",
    "motor_ident/ros/bench/latency.py",
    "motor_ident/ros/runtime/runner.py",
    "motor_ident/sim/motor_chain.py",
    "motor_ident/sim/plant.py",
}
# importlib.import_module turns a string into a module, which hides an import from this test,
# mypy and grep; where it is right, the reason is given
IMPORT_MODULE_ALLOWED = {
    "motor_ident/ros/recording/bag_player.py": "a bag holds any message type, known only by its recorded name",
    "motor_ident/ros/runtime/runner.py": "node_class resolves the node table's 'module:Class' strings",
    "motor_ident/ros/runtime/entry_points.py": "an entry point installs the stop handling before its node's imports",
}
MAX_LINES = 550
# group of motor_ident/ros -> the groups it may import (its own included)
ROS_GROUPS: dict[str, set[str]] = {
    "wire": {"wire"},
    "runtime": {"wire", "runtime"},
    "nodes": {"wire", "runtime", "nodes"},
    "recording": {"wire", "runtime", "recording"},
    "monitor": {"wire", "runtime", "recording", "monitor"},
    "bench": {"wire", "runtime", "nodes", "bench"},
}


@dataclass(frozen=True)
class Import:
    """One import statement: the file, its line, the module imported and whether it is in a function."""

    path: str
    line: int
    module: str
    in_function: bool


def _module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = REPO) -> list[Import]:
    """Every import of ``path`` (relative imports resolved), at module level and in functions."""
    tree = ast.parse(path.read_text(), filename=str(path))
    here = _module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    rel = str(path.relative_to(root))
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                out.extend(Import(rel, child.lineno, alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = ".".join(package[: len(package) - child.level + 1])
                    module = f"{base}.{child.module}" if child.module else base
                else:
                    module = child.module or ""
                out.append(Import(rel, child.lineno, module, in_function))
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(tree, False)
    return out


def layer(module: str) -> str:
    """The layer of a motor_ident module (``motor_ident.core.x`` -> "core")."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    top = parts[1]
    if top in BASE:
        return "base"
    if top == "cli":
        return "cli"
    if top == "papers" and len(parts) >= 4 and parts[3] == "bench":
        return "core"  # a paper's bench data: what a node's defaults may come from
    return top


def _is_ros(module: str) -> bool:
    top = module.split(".")[0]
    return top in ROS_MODULES or top.endswith("_msgs") or top.endswith("_srvs")


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _layer_violations(paths: list[Path], root: Path = REPO) -> list[str]:
    out = []
    for path in paths:
        source = layer(_module_name(path, root))
        for imp in _imports(path, root):
            if imp.module == "motor_ident" or not imp.module.startswith("motor_ident."):
                continue
            target = layer(imp.module)
            if target != "base" and target not in ALLOWED[source] and not (source == target == "base"):
                out.append(f"{imp.path}:{imp.line}: {source} imports {imp.module} ({target})")
    return out


def test_layers() -> None:
    """Every motor_ident import goes to the same layer or one the table allows (module docstring)."""
    assert not _layer_violations(_sources())


def test_every_module_has_a_layer() -> None:
    """A new top-level package or module must be placed in the layer table before it is used."""
    unknown = {layer(_module_name(p)) for p in _sources()} - set(ALLOWED)
    assert not unknown, f"add {sorted(unknown)} to ALLOWED in tests/test_architecture.py and to docs/design.md"


def test_only_ros_imports_ros() -> None:
    """rclpy and message packages are imported under motor_ident/ros only, even inside functions."""
    offenders = [
        f"{imp.path}:{imp.line}: {imp.module}"
        for path in _sources()
        if layer(_module_name(path)) != "ros"
        for imp in _imports(path)
        if _is_ros(imp.module)
    ]
    assert not offenders


def _ros_group(module: str) -> str:
    """The group of a motor_ident.ros module (``motor_ident.ros.nodes.x`` -> "nodes"; "" for motor_ident.ros)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def _ros_group_violations(paths: list[Path], root: Path = REPO) -> list[str]:
    out = []
    for path in paths:
        source = _ros_group(_module_name(path, root))
        for imp in _imports(path, root):
            if layer(imp.module) != "ros" or not source:
                continue
            target = _ros_group(imp.module)
            if target not in ROS_GROUPS[source]:
                out.append(f"{imp.path}:{imp.line}: ros/{source} imports {imp.module}")
    return out


def test_ros_groups_import_one_way() -> None:
    """Every module under motor_ident/ros sits in a group, and imports only the groups ROS_GROUPS allows."""
    paths = [p for p in _sources() if layer(_module_name(p)) == "ros"]
    loose = [str(p.relative_to(REPO)) for p in paths if _ros_group(_module_name(p)) not in ROS_GROUPS]
    assert loose == ["motor_ident/ros/__init__.py"]
    assert not _ros_group_violations(paths)


def test_imports_inside_functions_are_slow_or_optional_packages() -> None:
    """Outside commands/, a function imports only ROS or the slow or optional packages of LAZY_ALLOWED."""
    offenders = []
    for path in _sources():
        rel = str(path.relative_to(REPO))
        if layer(_module_name(path)) == "commands" or rel in LAZY_PENDING:
            continue
        for imp in _imports(path):
            allowed = _is_ros(imp.module) or any(
                imp.module == m or imp.module.startswith(m + ".") for m in LAZY_ALLOWED
            )
            if imp.in_function and not allowed:
                offenders.append(f"{imp.path}:{imp.line}: {imp.module}")
    assert not offenders


def test_no_import_by_name() -> None:
    """importlib.import_module only where a module's name comes from data (IMPORT_MODULE_ALLOWED)."""
    offenders = []
    for path in _sources():
        rel = str(path.relative_to(REPO))
        if "import_module" in path.read_text() and rel not in IMPORT_MODULE_ALLOWED:
            offenders.append(rel)
    assert not offenders


def test_modules_stay_small() -> None:
    """No module over 550 lines: split it by job."""
    sizes = {str(p.relative_to(REPO)): len(p.read_text().splitlines()) for p in _sources()}
    assert not {p: n for p, n in sizes.items() if n > MAX_LINES}


def test_the_command_line_starts_without_slow_imports() -> None:
    """Building `motor-ident`'s parser imports none of the slow packages, the reproductions or rclpy."""
    slow = ("scipy.signal", "scipy.stats", "cvxpy", "gmr", "matplotlib.pyplot", "rclpy", "motor_ident.papers.registry")
    code = (
        "import sys; from motor_ident.cli import build_parser; build_parser(); "
        f"print([m for m in {slow!r} if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_every_paper_is_registered() -> None:
    """Each motor_ident/papers/<name>/reproduce.py is listed in PAPERS and mapped in the registry."""
    from motor_ident.papers.registry import REPRODUCTIONS
    from motor_ident.papers.reproduction import PAPERS

    found = {p.parent.name for p in (PACKAGE / "papers").glob("*/reproduce.py")}
    assert set(PAPERS) == found
    assert list(REPRODUCTIONS) == list(PAPERS)
    for name, function in REPRODUCTIONS.items():
        assert function.__module__ == f"motor_ident.papers.{name}.reproduce"


def test_the_checkers_catch_violations(tmp_path: Path) -> None:
    """The checks flag a core module importing io and ros, a lazy pinocchio import, and a ROS import."""
    fake = tmp_path / "motor_ident" / "core" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from motor_ident.io.data import JointRecord\n"
        "from motor_ident.errors import ConfigError\n"
        "from motor_ident.papers.xin.bench import XIN_RATE_HZ\n"
        "def f():\n"
        "    import pinocchio\n"
        "    from ..ros import common\n"
    )
    imports = _imports(fake, tmp_path)
    assert [(i.module, i.in_function) for i in imports][-2:] == [("pinocchio", True), ("motor_ident.ros", True)]
    assert layer("motor_ident.papers.xin.bench") == "core" and layer("motor_ident.papers.xin.reproduce") == "papers"
    violations = _layer_violations([fake], tmp_path)
    assert len(violations) == 2 and "motor_ident.io.data" in violations[0] and "motor_ident.ros" in violations[1]
    assert _is_ros("rclpy.node") and _is_ros("sensor_msgs.msg") and _is_ros("std_srvs.srv")
    assert not _is_ros("numpy") and not _is_ros("pinocchio")
    wire = tmp_path / "motor_ident" / "ros" / "wire" / "bad.py"
    wire.parent.mkdir(parents=True)
    wire.write_text("from motor_ident.ros.wire import wire\ndef f():\n    from motor_ident.ros.runtime import common\n")
    assert _ros_group_violations([wire], tmp_path) == [
        f"{wire.relative_to(tmp_path)}:3: ros/wire imports motor_ident.ros.runtime"
    ]


@pytest.mark.parametrize(
    "pattern", ["import pickle", "pickle.load", "yaml.load(", "eval(", "exec(", "allow_pickle=True"]
)
def test_files_are_read_safely(pattern: str) -> None:
    """No pickle, no eval/exec of user input, YAML only through safe_load, NPZ without pickles."""
    offenders = [str(p.relative_to(REPO)) for p in _sources() if pattern in p.read_text()]
    assert not offenders
