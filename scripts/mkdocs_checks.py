"""Checks that Debian's mkdocs 1.4 leaves out of `mkdocs build --strict`.

Loaded by mkdocs.yml (`hooks:`). Each problem is logged as a warning, which
strict mode turns into a failed build:

- a page under docs/ that is not in mkdocs.yml's nav (mkdocs 1.4 only logs
  an INFO line for it, so a new page could silently stay unreachable);
- a link whose #anchor names no heading of its target page (mkdocs 1.4
  checks that a linked page exists, not its anchors, so a renamed heading
  would break links without a word).
"""
import logging
import posixpath
import re

log = logging.getLogger("mkdocs.hooks.mkdocs_checks")

# Fenced blocks (also indented inside lists) and inline code hold example
# text, not links.
_FENCE = re.compile(r"^[ \t]*```.*?^[ \t]*```[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_ID = re.compile(r"\bid=\"([^\"]+)\"")

_links = {}  # page -> [(target page, anchor)]
_ids = {}  # page -> ids of its rendered HTML


def on_pre_build(config):
    _links.clear()
    _ids.clear()


def on_nav(nav, config, files):
    in_nav = {page.file.src_path for page in nav.pages}
    for f in files.documentation_pages():
        if f.src_path not in in_nav:
            log.warning(f"Documentation file '{f.src_path}' is not in mkdocs.yml's nav")
    return nav


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_path.replace("\\", "/")
    text = _CODE.sub("", _FENCE.sub("", markdown))
    found = []
    for match in _LINK.finditer(text):
        url = match.group(1)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url) or url.startswith("/"):
            continue
        path, _, anchor = url.partition("#")
        if not anchor:
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(src), path)) if path else src
        if target.endswith(".md"):
            found.append((target, anchor))
    _links[src] = found
    return markdown


def on_page_content(html, page, config, files):
    _ids[page.file.src_path.replace("\\", "/")] = set(_ID.findall(html))
    return html


def on_post_build(config):
    for src, links in sorted(_links.items()):
        for target, anchor in links:
            if target in _ids and anchor not in _ids[target]:
                log.warning(f"Documentation file '{src}' links to '{target}#{anchor}': no such anchor in '{target}'")
