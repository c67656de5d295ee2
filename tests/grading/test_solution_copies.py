"""No answer next door: no solution block of an exercise stands in the library as the same
statements. Every solution region (``### BEGIN SOLUTION`` .. ``### END SOLUTION``) of three
statements or more is compared, names renamed and whitespace dropped, with every run of statements
in a function of ``memlab/``; a copy fails the test. (Idioms a few lines long inside a longer block,
such as a tree reduction's halving loop, are not copies of a block.)"""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
LEAST = 3        # statements: shorter blocks (a ceiling division, a sum) are idioms, not copies


class _Rename(ast.NodeTransformer):
    """Every name, argument and attribute replaced by its order of first appearance."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def _new(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id=self._new(node.id), ctx=node.ctx), node)

    def visit_arg(self, node):
        node.arg = self._new(node.arg)
        node.annotation = None
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = self._new(node.attr)
        return node

    def visit_FunctionDef(self, node):
        node.name = self._new(node.name)
        node.returns = None
        self.generic_visit(node)
        return node


def normalised(stmt: ast.stmt) -> str:
    return ast.dump(_Rename().visit(ast.parse(ast.unparse(stmt)).body[0]),
                    annotate_fields=False)


def _bodies(tree: ast.AST):
    """Every statement list inside a function (docstrings left out)."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                                ast.Constant):
                    body = body[1:]
                yield body


def library_runs() -> dict[str, list[tuple[str, list[str]]]]:
    """``{normalised first statement: [(where, normalised statements from there on)]}``."""
    runs: dict[str, list[tuple[str, list[str]]]] = {}
    for path in sorted((ROOT / "memlab").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for body in _bodies(fn):
                forms = [normalised(s) for s in body]
                for i, form in enumerate(forms):
                    runs.setdefault(form, []).append(
                        (f"{path.relative_to(ROOT)}:{body[i].lineno} ({fn.name})", forms[i:]))
    return runs


def solution_blocks():
    """``(where, statements)`` of every solution region of every solution notebook."""
    for nb_path in sorted((ROOT / "solutions").glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            meta = cell.metadata.get("memlab", {})
            if cell.cell_type != "code" or meta.get("kind") != "answer":
                continue
            lines, inside, block = cell.source.split("\n"), False, []
            for line in lines + ["### BEGIN SOLUTION"]:
                mark = line.strip()
                if mark in ("### BEGIN SOLUTION", "### END SOLUTION"):
                    if inside and block:
                        code = "def _block():\n" + textwrap.indent(textwrap.dedent(
                            "\n".join(block)), "    ")
                        yield f"{nb_path.name} {meta['id']}", ast.parse(code).body[0].body
                    inside, block = mark == "### BEGIN SOLUTION", []
                elif inside:
                    block.append(line)
            if "### BEGIN SOLUTION" not in cell.source:          # the whole cell is the answer
                yield f"{nb_path.name} {meta['id']}", ast.parse(cell.source).body


def copies(runs, blocks):
    found = []
    for where, body in blocks:              # a whole block: its statements in a row in a function
        if len(body) < LEAST:
            continue
        forms = [normalised(s) for s in body]
        for lib, rest in runs.get(forms[0], []):
            if rest[:len(forms)] == forms:
                found.append(f"{where}: its {len(forms)} statements are {lib}'s")
    return found


def test_no_solution_block_is_library_code():
    found = copies(library_runs(), solution_blocks())
    assert not found, "solution blocks copied from the library:\n" + "\n".join(found)


def test_a_copy_is_found_whatever_the_names():
    lib = ast.parse("def fork(self, parent, child):\n"
                    "    '''doc'''\n"
                    "    self.tables[child] = list(self.tables[parent])\n"
                    "    self.lengths[child] = self.lengths[parent]\n"
                    "    for block in self.tables[child]:\n"
                    "        self.refcount[block] += 1\n")
    runs = {}
    for body in _bodies(lib.body[0]):
        forms = [normalised(s) for s in body]
        for i, form in enumerate(forms):
            runs.setdefault(form, []).append(("lib", forms[i:]))
    renamed = ast.parse("s.t[c]   =  list(s.t[p])\ns.n[c] = s.n[p]\nfor b in s.t[c]:\n"
                        "    s.r[b] += 1\n").body
    other = ast.parse("x = list(s.t[p])\nfor b in x:\n    s.r[b] += 1\n"
                      "s.t[c], s.n[c] = x, s.n[p]\n").body
    assert copies(runs, [("renamed", renamed)]) and not copies(runs, [("other", other)])
