"""What a page of the course website loads, cut to what it uses (scripts/site.py runs it after
Sphinx).

A first visit to a page transfers its HTML and every file the page loads. The theme brings far
more than these pages use, so after the build:

* Font Awesome's script (1.5 MB, which redraws icons as SVG) is dropped from every page: the
  theme's CSS draws the same icons with Font Awesome's font;
* the search scripts and the search index load only on the search page (the theme loads them on
  every page for searching as one types, which this site leaves off);
* each style sheet keeps only the rules whose selectors can match: every class and id a selector
  requires (outside ``:not()`` and the other functional pseudo-classes) is a word of some page
  or script of the site (as PurgeCSS decides), so a class a script adds is kept;
* the icon fonts keep only the glyphs the kept rules name.

Deterministic: the same build gives the same files.
"""
from __future__ import annotations

import re
from pathlib import Path

import tinycss2

#: scripts the theme puts on every page for the search dialog; the search page loads its own
SEARCH_SCRIPTS = ("searchtools.js", "language_data.js", "searchindex.js")
_SCRIPT = re.compile(r'[ \t]*<script\b[^>]*\bsrc="([^"]*)"[^>]*>\s*</script>\n?')
_WORD = re.compile(r"[A-Za-z_][\w-]*")


def pages(site: Path) -> list[Path]:
    """The site's HTML pages (the theme's templates under ``_static`` are not pages)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def drop_scripts(page: str, is_search: bool) -> str:
    """A page without Font Awesome's script, and without the search scripts unless it is the
    search page."""
    def keep(m: re.Match) -> str:
        name = m.group(1).rsplit("/", 1)[-1].split("?")[0]
        if name.startswith("fontawesome") or (name in SEARCH_SCRIPTS and not is_search):
            return ""
        return m.group(0)
    return _SCRIPT.sub(keep, page)


def used_words(texts: list[str]) -> set[str]:
    """Every word (a possible class or id) of the given pages and scripts."""
    words: set[str] = set()
    for t in texts:
        words.update(_WORD.findall(t))
    return words


def _required(selector: list) -> set[str]:
    """Classes and ids a selector requires at its top level (not inside ``:not()``, ``:is()``,
    ``:where()``, ``:has()`` or an attribute test)."""
    need, after_dot = set(), False
    for tok in selector:
        if tok.type == "literal" and tok.value == ".":
            after_dot = True
            continue
        if after_dot and tok.type == "ident":
            need.add(tok.value)
        elif tok.type == "hash" and tok.is_identifier:
            need.add(tok.value)
        after_dot = False
    return need


def _split_selectors(prelude: list) -> list[list]:
    out, cur = [], []
    for tok in prelude:
        if tok.type == "literal" and tok.value == ",":
            out.append(cur)
            cur = []
        else:
            cur.append(tok)
    return out + [cur]


def purge_rules(rules: list, words: set[str]) -> str:
    """The rules (a style sheet's or an at-rule's block) less the selectors no page can match."""
    out = []
    for rule in rules:
        if rule.type == "comment" and rule.value.startswith("!"):   # a licence: kept
            out.append(f"/*{rule.value}*/")
        elif rule.type == "qualified-rule":
            kept = [s for s in _split_selectors(rule.prelude) if _required(s) <= words]
            if kept:
                selectors = ",".join(tinycss2.serialize(s).strip() for s in kept)
                out.append(f"{selectors}{{{tinycss2.serialize(rule.content)}}}")
        elif rule.type == "at-rule" and rule.lower_at_keyword in ("media", "supports",
                                                                   "container", "layer") \
                and rule.content is not None:
            inner = purge_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True,
                                                         skip_whitespace=True), words)
            if inner:
                out.append(f"@{rule.at_keyword}{tinycss2.serialize(rule.prelude)}{{{inner}}}")
        elif rule.type == "at-rule":   # @font-face, @keyframes, @charset, @property, ...
            out.append(tinycss2.serialize([rule]))
    return "".join(out)


def purge_css(css: str, words: set[str]) -> str:
    """A style sheet with only the rules some page can use."""
    rules = tinycss2.parse_stylesheet(css, skip_comments=False, skip_whitespace=True)
    return purge_rules(rules, words)


_PRIVATE = re.compile(r"\\([0-9a-fA-F]{4,6})\s?|([\ue000-\uf8ff])")


def icon_codepoints(css: str) -> set[int]:
    """The private-use code points (icon glyphs) a style sheet names."""
    found = set()
    for m in _PRIVATE.finditer(css):
        cp = int(m.group(1), 16) if m.group(1) else ord(m.group(2))
        if 0xE000 <= cp <= 0xF8FF:
            found.add(cp)
    return found


def subset_font(path: Path, codepoints: set[int]) -> None:
    """Keep only the glyphs of ``codepoints`` in a woff2 font (in place)."""
    from fontTools import subset
    options = subset.Options()
    options.flavor = "woff2"
    options.layout_features = []
    options.name_IDs = []
    options.notdef_outline = True
    font = subset.load_font(str(path), options)
    sub = subset.Subsetter(options)
    sub.populate(unicodes=sorted(codepoints))
    sub.subset(font)
    subset.save_font(font, str(path), options)


def slim(site: Path) -> dict[str, int]:
    """Cut what the site's pages load to what they use; return bytes before and after."""
    before = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    for page in pages(site):
        text = page.read_text(encoding="utf-8")
        slimmer = drop_scripts(text, is_search=page == site / "search.html")
        if slimmer != text:
            page.write_text(slimmer, encoding="utf-8")
    static = site / "_static"
    for f in list(static.rglob("fontawesome*")):
        if f.suffix in (".js", ".map", ".txt"):
            f.unlink()
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in pages(site)]
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in static.rglob("*.js")]
    words = used_words(texts)
    icons: set[int] = set()
    for css in sorted(static.rglob("*.css")):
        purged = purge_css(css.read_text(encoding="utf-8"), words)
        css.write_text(purged, encoding="utf-8")
        css.with_name(css.name + ".map").unlink(missing_ok=True)
        icons |= icon_codepoints(purged)
    for font in sorted(static.rglob("fa-*.woff2")):
        subset_font(font, icons)
    after = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    return {"before": before, "after": after}
