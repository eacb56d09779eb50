"""Who a Wikipedia-style lead sentence is about: "X (born ...) was ...", "X, also known as Y, is ...".

:func:`lead_subject` reads the name a lead sentence opens with, :func:`subject_names` every
form of it the sentence gives (the whole name, first and last name, initials, "known as" names,
a quoted nickname), and :func:`usual_name` picks, among those, the one other texts use most.
Pure functions of their input; English only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rootweaver_innovations.text import LEADING_WORDS, MONTH_PATTERN

__all__ = ["has_life_dates", "lead_subject", "subject_names", "usual_name"]

_LEAD_VERBS = "is|was|are|were|has|had|refers|became|served|lived|may"
_SUBJECT_END = re.compile(rf"\s*[(,;:]|\s+(?:{_LEAD_VERBS})\b|\s+[-\u2013\u2014]\s")
_LEAD_GOES_ON = re.compile(rf"\b(?:{_LEAD_VERBS})\b|\(")  # after "Name, ...": the verb or bracket of a lead
_LIFE_DATES = re.compile(rf"\s*\(\s*(?:;\s*)?(?:born\b|b\.|n[\u00e9e]e\b|\d{{3,4}}\s*[-\u2013\u2014?]"
                         rf"|(?:{MONTH_PATTERN})\b|\d{{1,2}}\s+(?:{MONTH_PATTERN})\b)")
_QUOTES = "\"'\u201c\u201d\u2018\u2019"
_ARTICLES = frozenset({"The", "A", "An"})
_NICKNAME = re.compile(r"(?<=\s)[\"\u201c][^\"\u201c\u201d]{1,40}[\"\u201d](?=\s)")  # 'Julius Caesar "J. C." Watts'
_HONORIFICS = frozenset("Sir Dame Dr Lord Prof Professor Rev".split())  # before a name
_POST_NOMINALS = frozenset("Jr Sr II III IV MBE OBE CBE KBE DBE GBE QC KC PhD MD".split())  # after a name
_REGNAL = frozenset("II III IV".split())  # after a single name a monarch's or pope's number, part of the name
_NOT_SUBJECTS = (LEADING_WORDS - _ARTICLES) | frozenset(  # words that open a clause, not a name
    "According After Although Among As Before Between Born By Despite During Following For From However "
    "If Located Since Through Under Unlike Upon When While With "
    "Additionally Also Currently Finally Furthermore Later Meanwhile Moreover Originally Similarly "
    "Subsequently Therefore Thus Today Together".split())
_NAME_JOINERS = frozenset("of the de and von van der den del di la le du da dos das bin ibn al y & on for".split())
_YEAR_SOON = re.compile(r".{0,160}?\b(?:1\d|20)\d\d\b", re.DOTALL)  # a year in the next 160 characters
_ONE_WORD_NICKNAME = re.compile(r"(?<=\s)[\"\u201c]([A-Z][\w.\-]*)[\"\u201d](?=\s)")  # 'Edward "Bear" Grylls'
_KNOWN_AS = re.compile(r"\bknown (?:professionally |simply |mononymously )?(?:as|by (?:his|her|their|the) "
                       r"(?:stage |pen |ring |screen |professional )?name),? [\"\u201c]?"
                       r"([A-Z][\w.'\u2019\-]*(?:\s+(?:(?:of|de|the|van|von)\s+)?[A-Z][\w.'\u2019\-]*)*)")
_TITLE_WORDS = _NAME_JOINERS | frozenset("to in a an at by with from".split())  # lowercase inside a work's title


def _capitalised(word: str) -> bool:
    return word[0].isupper() or word[0].isdigit()


def lead_subject(sentence: str) -> str | None:
    """The name a lead sentence is about, or ``None``: the words before its first bracket,
    comma or verb like "is"/"was" ("Ibrium (24th century BC), also spelt Ebrium, was ..." ->
    "Ibrium"; '"Lady" is a song' -> "Lady"), quotes and quoted nicknames left out, when they
    are 1-8 words starting with a capital or a digit, not a pronoun or a preposition (unless
    more capitalised words follow it up to the verb or life dates: "They Came to Cordura is a
    film", "He Jianjun (born 1960)"), and
    either all capitalised (name joiners such as "of", "de", "bin" aside) or at least two
    capitalised and no fewer than the others ("Live to Dance"). Post-nominals ("MBE", "Jr.")
    and a leading honorific ("Sir", "Dr.") are dropped, and of "X or Y" only X is kept. A
    person's name of three or four words followed by life dates ("Harvey Lawrence Pekar
    (October 8, 1939 - ...") is given as first and last name ("Harvey Pekar"), the way other
    texts mention them, unless it opens with an initial ("S. Sylvan Simon")."""
    found = _subject(sentence)
    return None if found is None else _lead_name(sentence, *found)


def subject_names(sentence: str) -> tuple[str, ...]:
    """Every name a lead sentence gives its subject, :func:`lead_subject` first (empty when
    it has none): then the whole name it shortened, a three- or four-word person's first and
    last name when a year follows within 160 characters ("Vladimir Vladimirovich Nabokov ( ;
    Russian: ...; 22 April 1899" -> "Vladimir Nabokov"), the same with the middle names as
    initials ("Vladimir V. Nabokov") and, for three words, the first two ("Julio Bracho
    Gavilán" -> "Julio Bracho", a first surname as Spanish names are cited), both names of
    "X or Y", a quoted one-word nickname with the last name ('Edward Michael "Bear" Grylls'
    -> "Bear Grylls"), and the capitalised name after "known as" / "known by his pen name" and
    the like in the sentence's first 400 characters ("better known by his pen name Mark
    Twain"). No duplicates. Empty too when the name ends at a comma, semicolon or colon and no
    verb or bracket follows in the sentence: the opening of a window cut in the middle of a
    sentence ("University, following coach Wallace Wade ..."), not a lead ("WWGR, commonly
    called Gator Country, is ...")."""
    found = _subject(sentence)
    if found is None:
        return ()
    words, end, person = found
    if sentence[end:].lstrip()[:1] in ",;:" and not _LEAD_GOES_ON.search(sentence, end + 1):
        return ()
    full = " ".join(words)
    names = [_lead_name(sentence, words, end, person), full]
    if person and _YEAR_SOON.match(sentence, end):
        names.append(f"{words[0]} {words[-1]}")
        names.append(" ".join([words[0], *(f"{w[0]}." for w in words[1:-1]), words[-1]]))  # "Dwight H. Little"
        if len(words) == 3:  # "Julio Bracho Gavilán" -> "Julio Bracho", the first of two surnames
            names.append(f"{words[0]} {words[1]}")
    if len(words) == 3 and words[1] == "or" and _capitalised(words[2]):  # "Æthelstan or Athelstan"
        names += [words[0], words[2]]
    nickname = _ONE_WORD_NICKNAME.search(sentence, 0, end)
    if nickname and len(words) >= 2:
        names.append(f"{nickname.group(1)} {words[-1]}")
    names += [k.group(1) for k in _KNOWN_AS.finditer(sentence[:400])]
    return tuple(dict.fromkeys(names))


def usual_name(sentence: str, mentions: Callable[[str], int]) -> str | None:
    """The name other texts use for a lead sentence's subject: of the names
    :func:`subject_names` gives, the one ``mentions`` counts most often (a count of occurrences
    in the texts around it), :func:`lead_subject` unless another is counted strictly more;
    ``None`` when the sentence names no subject. "Floyd Nathaniel "Nate" Hills (born 1982),
    professionally known as Danja, is ..." is "Floyd Hills" alone, and "Danja" among texts
    that say "produced by Danja": the name a titled page would carry."""
    name = lead_subject(sentence)
    if name is None:
        return None
    best, most = name, mentions(name)
    for other in subject_names(sentence):
        if (n := mentions(other)) > most:
            best, most = other, n
    return best


def _lead_name(sentence: str, words: list[str], end: int, person: bool) -> str:
    """:func:`lead_subject`'s name: a person's first and last name when life dates follow, else the words."""
    return f"{words[0]} {words[-1]}" if person and _LIFE_DATES.match(sentence, end) else " ".join(words)


def _subject(sentence: str) -> tuple[list[str], int, bool] | None:
    """The words of :func:`lead_subject`'s name (before any shortening), where they end in
    ``sentence``, and whether they are a three- or four-word person's name; ``None`` when
    the sentence names no subject."""
    m = _SUBJECT_END.search(sentence)
    if not m:
        return None
    head = _NICKNAME.sub(" ", sentence[: m.start()]).strip().strip(_QUOTES).strip()
    words = [w for w in head.split() if not (len(w) > 2 and w[0] in _QUOTES and w[-1] in _QUOTES)]
    while len(words) > 1 and words[-1].rstrip(".,") in _POST_NOMINALS and not (
            len(words) == 2 and words[-1] in _REGNAL):  # "Leopold II" keeps its numeral, "Tom Smith II" not
        words.pop()
    if len(words) > 2 and words[0].rstrip(".") in _HONORIFICS:  # "Sir Cedric Drewe", "Dr. Eugene Porter"
        words = words[1:]
    if "or" in words[2:-1] and _capitalised(words[words.index("or", 2) + 1]):  # "Angels of the Street or The Angel"
        words = words[: words.index("or", 2)]
    if not 1 <= len(words) <= 8 or head.isdigit():
        return None
    if words[0] in _NOT_SUBJECTS:  # a clause opener, unless a title or name ends at a verb or life dates
        at_verb = sentence[m.start():].strip()[:1].isalpha()  # "They Came to Cordura is", "He Jianjun (born"
        if not (len(words) > 1 and (at_verb or _LIFE_DATES.match(sentence, m.start()))
                and all(_capitalised(w) or w.lower() in _TITLE_WORDS for w in words)):
            return None
    if words[-1].lower() in _NAME_JOINERS or not _capitalised(words[0]):
        return None
    content = [w for w in (words[1:] if words[0] in _ARTICLES else words) if w.lower() not in _NAME_JOINERS]
    caps = sum(_capitalised(w) for w in content)
    if caps < len(content) and not (caps >= 2 and 2 * caps >= len(content)):
        return None
    person = 3 <= len(words) <= 4 and caps == len(content) == len(words) and not words[0].endswith(".")
    return words, m.start(), person  # "S. Sylvan Simon" is no person here: it stays whole


def has_life_dates(text: str) -> bool:
    """Whether ``text`` opens like a person's lead sentence with life dates: "(born ..." anywhere,
    or a bracket in its first 80 characters and a spaced en dash in its first 120
    ("(1909 – 1992)"). A cue of the evidence model's sentence features."""
    return "(born" in text or (" – " in text[:120] and "(" in text[:80])
