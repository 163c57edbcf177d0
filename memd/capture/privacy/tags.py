"""Private tags: the spans the user marks as never to be stored.

The user marks what must never be stored.  Three syntaxes, each enabled by
``privacy.tags`` (all three by default), in any letter case, and strictly::

    <private>...</private>              "xml"
    [private]...[/private]              "bracket"
    <!-- private -->...<!-- /private -->  "comment" (spaces or tabs around the word, or none)

Anything else is text: ``<private >``, ``< private>``, ``<pri vate>``, ``<privateX>``,
``<private/>`` and a tag split over two lines are not tags.

- Code is literal: a tag inside a fenced block (a line starting, after at most three
  spaces, with three or more backticks or tildes, up to the closing fence or the end of
  the text) or inside inline code (a run of backticks up to the next run of the same
  length on the same line) is not a tag, so text *about* the tags survives.
- A span runs from an opening tag to its closing tag of the same syntax; tags nest, and
  the outermost span is removed whole, inner tags of any syntax included.
- The span becomes ``privacy.marker`` (``"[PRIVATE]"``, ``"[REDACTED]"`` or ``""``); a
  span with nothing but whitespace inside vanishes without a marker.  With
  ``preserve_lines`` the replacement also keeps the span's newlines (marker first), so
  the line numbers of what follows stay right.
- An ``<private>`` or ``<!-- private -->`` whose span never closes is *unclosed*
  (``Redactions.unclosed``).  ``unclosed = "redact"`` (default) removes everything from
  it to the end of the text: the user asked for privacy and forgot the end, so memd
  errs toward removing.  ``unclosed = "keep"`` keeps that tag and the text after it as
  they are (spans further on are still removed), for people who would rather keep a
  typo than lose the rest of a prompt.
- A ``[private]`` opens a span only if a ``[/private]`` follows it: the span ends where
  nesting closes, or at the last ``[/private]`` when it never does.  Without one it is
  text, because ``[PRIVATE]`` is memd's own marker and a common label in prose: taking
  it for an unclosed tag would delete everything after any text quoting filtered output.
- A closing tag with no opening tag before it is removed (it hides nothing, and left
  alone it could pair with a marker later).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Final, NamedTuple

from ...config import PrivacyConfig
from .redactions import Edit, Redactions, Span

__all__ = ["Tag", "TagRules", "TagScan"]

_TAG_SYNTAX: Final = {
    "xml": r"<(?P<xml>/?)private>",
    "bracket": r"\[(?P<bracket>/?)private\]",
    "comment": r"<!--[ \t]{0,16}(?P<comment>/?)private[ \t]{0,16}-->",
}
"""Each syntax's tag, in lower case (matched against the lower-cased text); its named
group holds the ``/`` of a closing tag."""

_TAG_WORD: Final = re.compile(r"private(?:>|\]|[ \t]{0,16}-->)")
"""Where a tag can end: found by a fast literal search; the tag is then matched from the
few places it can start."""

_FENCE_LINE: Final = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)", re.M)
_BACKTICKS: Final = re.compile(r"`+")


class Tag(NamedTuple):
    start: int
    end: int
    syntax: str
    closing: bool


def _fenced_blocks(text: str) -> list[Span]:
    """Fenced code blocks, fence lines included (CommonMark's rules, minus containers).

    A backtick fence's info string may not hold a backtick; the closing fence uses the
    same character, at least as many, and nothing but spaces after; an unclosed block
    runs to the end of the text.
    """
    blocks: list[Span] = []
    opened: tuple[int, str] | None = None
    for line in _FENCE_LINE.finditer(text):
        fence, rest = line.groups()
        if opened is None:
            if not (fence[0] == "`" and "`" in rest):
                opened = (line.start(), fence)
        elif fence[0] == opened[1][0] and len(fence) >= len(opened[1]) and not rest.strip():
            blocks.append((opened[0], line.end()))
            opened = None
    if opened is not None:
        blocks.append((opened[0], len(text)))
    return blocks


def _inline_code(text: str, start: int, end: int) -> list[Span]:
    """Inline code spans in ``text[start:end]`` (one line): a backtick run to the next run
    of the same length.  Linear: each run's partner is found by one right-to-left pass."""
    runs = [match.span() for match in _BACKTICKS.finditer(text, start, end)]
    partner: list[int | None] = [None] * len(runs)
    last_of_length: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        partner[index] = last_of_length.get(length)
        last_of_length[length] = index
    spans: list[Span] = []
    index = 0
    while index < len(runs):
        other = partner[index]
        if other is None:
            index += 1
        else:
            spans.append((runs[index][0], runs[other][1]))
            index = other + 1
    return spans


def _outside_code(text: str, tags: list[Tag]) -> list[Tag]:
    """The tags (sorted) that are not inside a fenced block or inline code.

    One pass: fences are found once, inline code only on the lines holding a tag.
    """
    fences = _fenced_blocks(text) if "```" in text or "~~~" in text else []
    fence_index = 0
    line_end = -1
    inline: list[Span] = []
    starts: list[int] = []
    live: list[Tag] = []
    for tag in tags:
        while fence_index < len(fences) and fences[fence_index][1] <= tag.start:
            fence_index += 1
        if fence_index < len(fences) and fences[fence_index][0] <= tag.start:
            continue
        if tag.start > line_end:
            line_start = text.rfind("\n", max(line_end, 0), tag.start) + 1
            line_end = text.find("\n", tag.start)
            line_end = len(text) if line_end < 0 else line_end
            inline = _inline_code(text, line_start, line_end)
            starts = [start for start, _ in inline]
        index = bisect_right(starts, tag.start) - 1
        if index < 0 or inline[index][1] <= tag.start:
            live.append(tag)
    return live


def _partners(tags: list[Tag]) -> dict[int, int]:
    """Opening tag index -> its closing tag index, nesting per syntax."""
    open_tags: dict[str, list[int]] = {}
    partners: dict[int, int] = {}
    for index, tag in enumerate(tags):
        stack = open_tags.setdefault(tag.syntax, [])
        if not tag.closing:
            stack.append(index)
        elif stack:
            partners[stack.pop()] = index
    return partners


class TagScan(NamedTuple):
    edits: list[Edit]
    found: Redactions


class TagRules:
    """The private-tag rules of one configuration: which tags are live, and the edits that
    remove their spans (the module docstring says how)."""

    def __init__(self, config: PrivacyConfig) -> None:
        syntax = [_TAG_SYNTAX[name] for name in dict.fromkeys(config.tags)]
        self._tags = re.compile("|".join(syntax)) if syntax else None
        self._marker = config.marker
        self._preserve_lines = config.preserve_lines
        self._keep_unclosed = config.unclosed == "keep"

    def candidates(self, low: str) -> list[Tag]:
        """Every tag in the text, live or in code, from its lower-cased copy."""
        if self._tags is None or "private" not in low:
            return []
        tags: list[Tag] = []
        for word in _TAG_WORD.finditer(low):
            start = word.start()
            for begin in (start - 1, start - 2, low.rfind("<!--", max(0, start - 24), start)):
                match = self._tags.match(low, begin) if begin >= 0 else None
                if match and match.end() == word.end() and (syntax := match.lastgroup) is not None:
                    tags.append(Tag(begin, match.end(), syntax, match.group(syntax) == "/"))
                    break
        return tags

    def scan(self, text: str, candidates: list[Tag]) -> TagScan:
        """The edits one pass of the tag rules makes (the module docstring: the rules)."""
        tags = _outside_code(text, candidates)
        partners = _partners(tags)
        closes = [index for index, tag in enumerate(tags) if tag.syntax == "bracket" and tag.closing]
        last_bracket_close = closes[-1] if closes else -1
        edits: list[Edit] = []
        spans = 0
        unclosed = False
        index = 0
        while index < len(tags):
            tag = tags[index]
            close = partners.get(index)
            if close is None and tag.syntax == "bracket" and not tag.closing and last_bracket_close > index:
                close = last_bracket_close
            if tag.closing:  # a closing tag no span took: stray
                edits.append(Edit(tag.start, tag.end, ""))
            elif close is not None:
                edits.append(self._span(text, tag.start, tag.end, tags[close].start, tags[close].end))
                spans += 1
                index = close
            elif tag.syntax != "bracket":
                unclosed = True
                if not self._keep_unclosed:
                    edits.append(self._span(text, tag.start, tag.end, len(text), len(text)))
                    spans += 1
                    break
            index += 1
        removed = sum(edit.end - edit.start for edit in edits)
        found = Redactions(private_spans=spans, unclosed=unclosed, chars_removed=removed)
        return TagScan(edits, found)

    def _span(self, text: str, start: int, inner_start: int, inner_end: int, end: int) -> Edit:
        """The edit removing one span, from its opening tag to its closing tag's end."""
        has_content = bool(text[inner_start:inner_end].strip())
        return Edit(start, end, self.replacement(text[start:end], has_content))

    def replacement(self, removed: str, has_content: bool) -> str:
        """The marker (none for an empty span), then the span's newlines if kept."""
        marker = self._marker if has_content else ""
        return marker + "\n" * removed.count("\n") if self._preserve_lines else marker
