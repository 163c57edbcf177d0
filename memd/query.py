"""The query compiler: free user text in, safe full-text expressions out.

Text typed by a person (or an agent) reaches search from the CLI, an MCP tool or a Claude Code prompt, in
English, Korean, a mix of both, or code. :func:`compile_query` turns it into a :class:`Query`: one *group*
per concept, each group the normalized term followed by its English glossary translations when the term is
Korean, plus the CJK tokens for the trigram lane. The other functions render a ``Query`` for SQLite:

* :func:`match_expression` for ``events_fts`` (``porter unicode61``): every term is a double-quoted FTS5
  string, so operators (``AND``, ``NEAR``, ``-``, ``*``, ``^``), parentheses and column filters
  (``title:x``, ``{a b}:x``) in user text are plain words and ``MATCH`` can never raise on them;
* :func:`trigram_expression` for ``events_cjk`` (``trigram``), which only indexes substrings of three
  characters or more;
* :func:`like_patterns` for the one- and two-syllable Korean words the trigram index cannot look up.

:func:`tokens` and :func:`stem` are the document side: they let a caller check which query concepts a
text covers without asking SQLite. Everything here is pure: no IO, no state.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import msgspec

__all__ = [
    "GLOSSARY",
    "Query",
    "compile_query",
    "has_cjk",
    "like_patterns",
    "match_expression",
    "stem",
    "tokens",
    "trigram_expression",
]

_CJK: Final = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003134f]"
)


def has_cjk(text: str) -> bool:
    """Whether ``text`` has Hangul (syllables or jamo), CJK ideographs, Hiragana or Katakana:
    text that needs the trigram index, because its words are not separated the English way."""
    return _CJK.search(text) is not None


# --- data -------------------------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: English function words: they carry no topic and would make an AND query demand words a record need not
#: contain. "use/used/using" are included on purpose: nearly every record of a coding session "uses"
#: something, so the word only narrows AND results by accident. Words that can be topics in code ("get",
#: "set", "new", "make", "run", "first") are kept.
STOP_EN: Final = _words(
    """
    a about above after again all also am an and any are as at be because been before being below between
    both but by can could d did didn do does doesn doing don done down during each either else ever few for
    from further had has hasn have haven having he her here hers herself him himself his how i if in into is
    isn it its itself just let lets ll m may me might more most must my myself no nor not now of off ok okay
    on once only or other our ours ourselves out over own please re s same shall she should shouldn so some
    such t than thank thanks that the their theirs them themselves then there these they this those through
    to too under until up us use used uses using ve very was wasn we were weren what when where whether which
    while who whom whose why will with won would wouldn yeah yes you your yours yourself
    """
)

#: Korean words that stand alone in a prompt without a topic: fillers, pronouns, adverbs, request endings
#: ("해줘", "주세요"). Compared with a token both as typed and with its particle stripped.
STOP_KO: Final = _words(
    """
    응 네 예 아 어 음 오 그 이 저 그거 그것 그걸 그게 이거 이것 이걸 이게 저거 저것 저걸 저게 좀 이제 그럼 그러면
    그리고 그래서 근데 그런데 하지만 그냥 일단 지금 다시 또 더 잘 꼭 제발 혹시 정말 진짜 너무 아주 매우 약간 조금
    많이 뭐 뭘 뭔가 무엇 무슨 어떤 어떻게 왜 언제 어디 어디서 누가 이런 그런 저런 이렇게 그렇게 같은 같이 우리 나 내
    제 너 당신 것 거 수 등 및 때 번 한번 먼저 해 해줘 해주세요 해줄래 해봐 해보자 해요 해라 하자 하세요 할래 할까
    할게 하고 하는 하면 한 할 했어 했어요 했다 했는데 해서 줘 주세요 줄래 봐 봐줘 있어 있는 있다 없어 없는 되는 된
    돼 됐어 오케이 알겠어 알았어 고마워 감사 감사합니다 부탁해 부탁해요
    """
)

#: Korean particles stripped from the end of a Hangul token, longest first.
PARTICLES: Final = (
    "에서", "으로", "하고", "에게", "까지", "부터", "이랑", "한테", "처럼", "보다",
    "을", "를", "이", "가", "은", "는", "에", "로", "의", "도", "만", "와", "과", "랑",
)  # fmt: skip

#: Korean → English for the words of coding-agent follow-ups. A Hangul token matches a key it starts with
#: (the longest such key), so conjugations match their stem: 고쳐줘 → 고쳐, 수정해주세요 → 수정.
GLOSSARY: Final[dict[str, tuple[str, ...]]] = {
    "다음": ("next",), "단계": ("step", "stage", "phase"), "진행": ("continue", "proceed", "progress"),
    "계속": ("continue", "resume"), "이어서": ("continue", "resume"), "이어가": ("continue", "resume"),
    "재개": ("resume",), "고치": ("fix", "repair"), "고쳐": ("fix", "repair"), "고쳤": ("fix", "repair"),
    "해결": ("fix", "solve", "resolve"), "수정": ("fix", "change", "edit", "modify"), "변경": ("change", "modify"),
    "바꿔": ("change", "replace"), "바꾸": ("change", "replace"), "바꿨": ("change", "replace"), "테스트": ("test",),
    "검색": ("search",), "검사": ("check", "inspect"), "검증": ("verify", "validate"), "확인": ("check", "verify"),
    "오류": ("error", "exception", "fail"), "에러": ("error", "exception", "fail"), "예외": ("exception", "error"),
    "경고": ("warning",), "버그": ("bug",), "문제": ("problem", "issue", "bug"), "이슈": ("issue",), "원인": ("cause",),
    "충돌": ("conflict", "crash"), "크래시": ("crash",), "실패": ("fail", "failure"), "성공": ("success", "pass"),
    "통과": ("pass",), "빌드": ("build",), "커밋": ("commit",), "푸시": ("push",), "브랜치": ("branch",),
    "병합": ("merge",), "머지": ("merge",), "롤백": ("rollback", "revert"), "되돌": ("revert", "undo"),
    "취소": ("cancel", "undo"), "패치": ("patch",), "리뷰": ("review",), "검토": ("review",),
    "배포": ("deploy", "release"), "릴리스": ("release",), "릴리즈": ("release",), "설치": ("install",),
    "업데이트": ("update",), "업그레이드": ("upgrade",), "삭제": ("delete", "remove"), "지워": ("delete", "remove"),
    "지우": ("delete", "remove"), "지웠": ("delete", "remove"), "제거": ("remove", "delete"), "추가": ("add",),
    "구현": ("implement",), "기능": ("feature",), "실행": ("run", "execute"), "돌려": ("run",),
    "만들": ("create", "make"), "찾아": ("find", "search"), "찾기": ("find", "search"), "보여": ("show",),
    "설명": ("explain",), "명령": ("command",), "스크립트": ("script",), "문서": ("doc", "docs", "readme"),
    "주석": ("comment",), "설정": ("config", "settings"), "구성": ("config", "setup"), "환경": ("environment", "env"),
    "성능": ("performance", "latency"), "속도": ("speed", "fast", "latency"), "느려": ("slow",), "느림": ("slow",),
    "느리": ("slow",), "느렸": ("slow",), "빠르": ("fast",), "빨라": ("fast",), "벤치마크": ("benchmark",),
    "측정": ("measure", "benchmark"), "로그인": ("login",), "로그": ("log",), "파일": ("file",),
    "폴더": ("folder", "directory"), "디렉토리": ("directory",), "디렉터리": ("directory",), "경로": ("path",),
    "저장소": ("repository", "repo"), "저장": ("save", "store"), "함수": ("function",), "클래스": ("class",),
    "메서드": ("method",), "메소드": ("method",), "변수": ("variable",), "타입스크립트": ("typescript",),
    "타입": ("type",), "자바스크립트": ("javascript",), "파이썬": ("python",), "모듈": ("module",),
    "패키지": ("package",), "라이브러리": ("library",), "의존성": ("dependency",),
    "데이터베이스": ("database", "sqlite"), "디비": ("database", "sqlite"), "데이터": ("data",), "스키마": ("schema",),
    "쿼리": ("query",), "인덱스": ("index",), "캐시": ("cache",), "메모리": ("memory",), "기억": ("memory", "remember"),
    "임베딩": ("embedding",), "벡터": ("vector",), "작업": ("task", "work"), "할일": ("todo", "task"),
    "계획": ("plan", "roadmap"), "결정": ("decide", "decision"), "요약": ("summary", "summarize"),
    "정리": ("cleanup", "organize"), "대시보드": ("dashboard",), "보안": ("security",), "개인정보": ("privacy",),
    "리팩": ("refactor",), "마이그레이션": ("migration", "migrate"), "세션": ("session",), "훅": ("hook",),
    "데몬": ("daemon",), "서버": ("server",), "소켓": ("socket",), "요청": ("request",), "응답": ("response",),
    "타임아웃": ("timeout",), "프롬프트": ("prompt",), "토큰": ("token",), "린트": ("lint",), "포맷": ("format",),
}  # fmt: skip

# --- tokenizing -------------------------------------------------------------------------------------------

_WORD: Final = re.compile(r"[^\W_]+")  # runs of \w without "_": snake_case splits, camelCase stays whole
_WORD_RUN: Final = re.compile(r"\w+")
_HANGUL: Final = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff\uffa0-\uffdc]")
_LIKE_SPECIAL: Final = re.compile(r"[\\%_]")
#: For ASCII text: A-Z lowered, a-z and 0-9 kept, every other byte a space; ``str.split`` then yields words.
_ASCII_WORDS: Final = bytes(
    c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256)
)
_SCAN_LIMIT: Final = 32_768  # characters of the query considered; the first max_terms concepts come early
_GLOSSARY_BY_INITIAL: Final[dict[str, list[str]]] = {}
for _key in sorted(GLOSSARY, key=len, reverse=True):
    _GLOSSARY_BY_INITIAL.setdefault(_key[0], []).append(_key)


def _normalize(text: str) -> str:
    """NFKC then casefold; ASCII, already NFKC, only needs lowering (the fast path for code and logs)."""
    if text.isascii():
        return text.lower()
    text = text.casefold()
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def tokens(text: str) -> list[str]:
    """The words of ``text`` as unicode61 would see them: NFKC, casefolded, runs of letters and digits.

    ``_`` separates words (``event_id`` → ``event``, ``id``) while ``camelCase`` stays one word, as in the
    FTS index. ASCII text, the common case for code and logs, takes a byte-table fast path (4 KB in about
    30 µs); other text is split on whitespace and only chunks with punctuation go through a regex (4 KB in
    about 0.12 ms).
    """
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    words: list[str] = []
    for chunk in _normalize(text).replace("_", " ").split():  # str.isalnum() is exactly "all of it is \w"
        if chunk.isalnum():
            words.append(chunk)
        else:
            words.extend(_WORD_RUN.findall(chunk))
    return words


def _strip_particles(token: str) -> str:
    """Drop up to two Korean particles from the end while at least two characters remain.

    검색을 → 검색, 서버에서는 → 서버, pytest를 → pytest; 속도 and 추가 stay whole because what would
    remain is a single syllable.
    """
    for _ in range(2):
        for particle in PARTICLES:
            if token.endswith(particle) and len(token) - len(particle) >= 2:
                token = token[: -len(particle)]
                break
        else:
            break
    return token


def _glossary(token: str) -> tuple[str, ...]:
    """The longest glossary key ``token`` starts with (unless it is ``token`` itself), then the key's
    translations; ``()`` when none applies.  The key is the word's stem ("확인" of "확인했어"): the
    substring lane finds Korean records by it whatever their ending."""
    for key in _GLOSSARY_BY_INITIAL.get(token[:1], ()):
        if token.startswith(key):
            return (key, *GLOSSARY[key]) if key != token else GLOSSARY[key]
    return ()


# --- the query --------------------------------------------------------------------------------------------


class Query(msgspec.Struct, frozen=True):
    """A compiled query.

    ``groups`` holds one tuple per concept, in query order: the term as typed (NFKC, casefolded, Korean
    particle stripped) followed by its glossary translations; a record matches a concept when it contains
    any term of its group. ``cjk`` holds the query's words that have CJK characters, in the same form, for
    the trigram lane (casefolding leaves Hangul, kana and ideographs as typed).
    """

    text: str
    groups: tuple[tuple[str, ...], ...]
    cjk: tuple[str, ...]


def compile_query(text: str, *, max_terms: int = 12) -> Query:
    """Compile user text into at most ``max_terms`` concept groups and the CJK words among them.

    Words are runs of letters and digits (``_`` splits). Single digits and stop-words are dropped, unless
    every word is one, in which case they are searched anyway ("what is this" still finds something).
    Korean words lose a trailing particle and gain their glossary stem and English translations, so
    "그거 고쳐줘" searches ``("고쳐줘" OR "고쳐" OR "fix" OR "repair")``. Only the first 32 K characters are read.
    """
    kept: list[str] = []  # content words, normalized and particle-stripped
    stopped: list[str] = []  # stop-words, searched only when there is nothing else
    seen: set[str] = set()
    for match in _WORD.finditer(_normalize(text[:_SCAN_LIMIT])):
        term = match.group()
        if len(term) == 1 and term.isdigit():
            continue
        if _HANGUL.search(term):
            stripped = _strip_particles(term)
            stop = term in STOP_KO or stripped in STOP_KO
            term = stripped
        else:
            stop = term in STOP_EN
        if term in seen:
            continue
        seen.add(term)
        if not stop:
            kept.append(term)
            if len(kept) >= max_terms:
                break
        elif len(stopped) < max_terms:
            stopped.append(term)
    chosen = (kept or stopped)[: max(max_terms, 0)]
    groups = tuple((term, *_glossary(term)) if _HANGUL.search(term) else (term,) for term in chosen)
    cjk = tuple(dict.fromkeys(term for group in groups for term in group if has_cjk(term)))
    return Query(text=text, groups=groups, cjk=cjk)


# --- rendering --------------------------------------------------------------------------------------------


def _clean(term: str) -> str:
    """``term`` without NUL and lone surrogates, which SQLite cannot take in a bound string."""
    if term.isascii():
        return term.replace("\x00", "")
    return term.replace("\x00", "").encode("utf-8", "ignore").decode("utf-8")


def _quote(term: str) -> str:
    """``term`` as an FTS5 string, ``"`` doubled: whatever it holds, FTS5 reads it as text to tokenize."""
    return '"' + term.replace('"', '""') + '"'


def match_expression(
    groups: Iterable[Sequence[str]], *, operator: Literal["AND", "OR"], prefix_last: bool = True
) -> str:
    """An FTS5 ``MATCH`` expression: each group ``("t1" OR "t2")``, the groups joined by ``operator``.

    Every term is quoted, so nothing in it is syntax. With ``prefix_last`` the first term of the last group
    becomes a prefix query (``"inde"*`` finds ``index``) for the word still being typed, but only when it
    has three characters or more and no CJK (a short or Korean prefix matches too much). Terms are not
    stemmed here: the porter tokenizer stems the quoted query terms like it stemmed the index. Returns
    ``''`` when there is nothing to search.
    """
    if operator not in ("AND", "OR"):
        raise ValueError(f"operator must be 'AND' or 'OR', not {operator!r}")
    kept = [terms for group in groups if (terms := [term for term in map(_clean, group) if term])]
    if not kept:
        return ""
    rendered = [[_quote(term) for term in terms] for terms in kept]
    last = kept[-1][0]
    if prefix_last and len(last) >= 3 and not has_cjk(last):
        rendered[-1][0] += "*"
    parts = [quoted[0] if len(quoted) == 1 else "(" + " OR ".join(quoted) + ")" for quoted in rendered]
    return f" {operator} ".join(parts)


def trigram_expression(cjk: Sequence[str]) -> str:
    """An ``events_cjk`` (trigram) ``MATCH`` expression: the CJK words of three characters or more, quoted,
    joined by ``OR``; ``''`` when there are none (shorter words go through :func:`like_patterns`)."""
    return " OR ".join(_quote(token) for token in map(_clean, cjk) if len(token) >= 3)


def like_patterns(cjk: Sequence[str]) -> list[str]:
    """``LIKE`` patterns (``ESCAPE '\\'``) for the CJK words of one or two characters: ``%word%``."""
    return ["%" + _LIKE_SPECIAL.sub(r"\\\g<0>", token) + "%" for token in map(_clean, cjk) if 1 <= len(token) <= 2]


# --- stemming ---------------------------------------------------------------------------------------------

_PLURAL: Final = (("ies", "y"), ("ss", "ss"), ("us", "us"), ("is", "is"), ("s", ""))
_SUFFIX: Final = (("ied", "y"), ("eed", "eed"), ("ing", ""), ("ed", ""), ("tion", "t"))
_VOWEL: Final = re.compile("[aeiouy]")


def stem(word: str) -> str:
    """A light, deterministic English stemmer for coverage checks; non-ASCII words come back unchanged.

    ``word`` is one casefolded word, as :func:`tokens` and :attr:`Query.groups` hold them. Query and
    document words go through the same function, so all that matters is that one family lands on one form.
    Words of four letters or more go through, in order:

    1. plurals: ``-ies`` → ``-y``; a final ``-s`` goes unless the word ends in ``-ss``, ``-us``, ``-is``;
    2. one suffix: ``-ied`` → ``-y``, ``-ing``, ``-ed``, ``-tion`` → ``-t``, kept when fewer than three
       letters or no vowel would remain (``string``), and ``-eed`` stays (``need``, ``speed``); after
       ``-ing``/``-ed`` a doubled final consonant other than l, s, z is undoubled (``running`` → ``run``,
       ``committed`` → ``commit``);
    3. a final ``-e`` goes (``cache``/``caching``/``caches`` → ``cach``, ``fixes`` → ``fixe`` → ``fix``).

    So inject/injects/injected/injecting/injection → ``inject``, query/queries/queried → ``query``.
    """
    if len(word) < 4 or not word.isascii():
        return word
    for suffix, repl in _PLURAL:
        if word.endswith(suffix):
            word = word[: len(word) - len(suffix)] + repl
            break
    for suffix, repl in _SUFFIX:
        if word.endswith(suffix):
            base = word[: len(word) - len(suffix)] + repl
            if len(base) >= 3 and _VOWEL.search(base):
                undouble = repl == "" and len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz"
                word = base[:-1] if undouble and not _VOWEL.match(base[-1]) else base
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word
