"""scripts/site_assets.py on small inputs made here: which CSS rules stay, which scripts a page
keeps, which icon glyphs a font keeps."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("site_assets", ROOT / "scripts" / "site_assets.py")
sa = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sa)


def test_a_rule_stays_when_some_page_can_match_it():
    css = ("/*! licence */ .used{color:red} .gone{color:blue} .used .gone{x:1} .used,.gone{y:2} "
           "#pid{z:3} #nope{z:4} a:not(.gone){u:1} :is(.gone) p{v:1} [data-theme=dark] .used{w:1}"
           " @media (min-width:720px){.gone{a:1} .used{b:2}} @media print{.gone{c:3}}"
           " @font-face{font-family:X;src:url(x.woff2)} @keyframes k{from{opacity:0}}")
    out = sa.purge_css(css, sa.used_words(['<p class="used" id="pid">']))
    assert out.startswith("/*! licence */")
    assert ".used{color:red}" in out and ".used{y:2}" in out and "#pid{z:3}" in out
    assert ".gone{color:blue}" not in out and ".used .gone" not in out and "#nope" not in out
    assert "a:not(.gone){u:1}" in out and ":is(.gone) p{v:1}" in out   # inside a function: kept
    assert "[data-theme=dark] .used{w:1}" in out
    assert "@media (min-width:720px){.used{b:2}}" in out and "print" not in out
    assert "@font-face" in out and "@keyframes k" in out


def test_a_class_a_script_names_is_kept():
    words = sa.used_words(['<div class="a">', 'e.classList.add("show")'])
    assert sa.purge_css(".a.show{x:1} .a.hide{y:1}", words) == ".a.show{x:1}"


def test_the_search_scripts_stay_on_the_search_page_only():
    page = ('<script src="../_static/searchtools.js"></script>\n'
            '<script src="../searchindex.js"></script>\n'
            '<script src="../_static/doctools.js?v=1"></script>\n'
            '<script defer src="../_static/vendor/fontawesome.js?d=2"></script>\n')
    plain = sa.drop_scripts(page, is_search=False)
    assert "doctools.js" in plain and "search" not in plain and "fontawesome" not in plain
    search = sa.drop_scripts(page, is_search=True)
    assert "searchtools.js" in search and "searchindex.js" in search
    assert "fontawesome" not in search


def test_icon_code_points_are_found_escaped_or_literal():
    css = '.a:before{content:"\\f0c9"} :root{--i:"\uf0f3"} .b{content:"\\2014"}'
    assert sa.icon_codepoints(css) == {0xF0C9, 0xF0F3}


def test_a_subset_font_keeps_exactly_the_named_glyphs(tmp_path):
    pytest.importorskip("brotli")
    from fontTools.ttLib import TTFont
    import pydata_sphinx_theme
    source = next(Path(pydata_sphinx_theme.__file__).parent.rglob("fa-solid-900.woff2"))
    font = tmp_path / source.name
    shutil.copy(source, font)
    full = set(TTFont(str(source)).getBestCmap())
    assert {0xF002, 0xF0C9} <= full and len(full) > 100
    absent = next(cp for cp in range(0xE000, 0xF8FF) if cp not in full)
    sa.subset_font(font, {0xF002, 0xF0C9, absent})     # a glyph the font lacks is no error
    assert set(TTFont(str(font)).getBestCmap()) == {0xF002, 0xF0C9}
    assert font.stat().st_size < source.stat().st_size / 10
