"""Conversations between named speakers (LoCoMo): how a speaker is referred to, re-wording a question about
one speaker as a question about another, and whether a speaker's own annotations support a question.

A benchmark such as LoCoMo annotates each speaker with *observations* (``"Caroline attended an LGBTQ support
group …"``, each with the turn it comes from) and *event summaries*. Importers keep them as facts of the
speaker whose ``value_type`` is one of :data:`ANNOTATION_TYPES` — they describe the speaker, they are not the
answer to any question — so that an operator can check, from provenance alone, that a question re-worded
about the other speaker asks something nobody said of them (misattribution: the right behaviour is to
abstain).

Everything here is lexical and conservative: when it cannot tell (a gendered pronoun and an unknown
pronoun of the new speaker, a question without content words), it says no, and the move is not offered.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

#: ``Fact.value_type`` of a benchmark annotation about a speaker (not an answer to a question).
ANNOTATION_TYPES = ("observation", "event")

_MALE = ("he", "him", "his", "himself")
_FEMALE = ("she", "her", "hers", "herself")
_GENDERED = re.compile(r"\b(?:he|him|his|himself|she|her|hers|herself)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")

#: words after which "her" is an object ("him"), not a possessive ("his")
_AFTER_OBJECT = {
    "a", "an", "the", "to", "in", "on", "at", "for", "from", "with", "about", "by", "of", "and", "or", "but",
    "that", "this", "these", "those", "some", "any", "if", "when", "while", "as", "so", "than", "up", "out",
    "feel", "be", "do", "get", "make", "go", "want", "think", "know", "see", "realize", "decide", "start",
    "stay", "keep", "take", "try", "become", "is", "was", "were", "are", "has", "had", "have", "will", "would",
    "can", "could", "into", "through", "after", "before", "during", "last", "every", "each",
}


def pronoun_of(texts: Iterable[str], name: str, others: Sequence[str] = (), *, min_count: int = 3,
               share: float = 0.8) -> str | None:
    """``he`` or ``she`` when the third-person texts about ``name`` (observations, summaries) use one
    gender's pronouns at least ``min_count`` times and in at least ``share`` of their gendered pronouns;
    otherwise None (not known). Texts that also name one of ``others`` are left out (whose pronoun is it?)."""
    male = female = 0
    for text in texts:
        if not name_pattern(name).search(text) or any(name_pattern(o).search(text) for o in others if o != name):
            continue
        for m in _GENDERED.finditer(text):
            if m.group(0).lower() in _MALE:
                male += 1
            else:
                female += 1
    total = male + female
    if total < min_count:
        return None
    if male >= share * total:
        return "he"
    if female >= share * total:
        return "she"
    return None


def has_gendered_pronoun(text: str) -> bool:
    return _GENDERED.search(text) is not None


def _map_pronoun(word: str, nxt: str, dst: str) -> str:
    low = word.lower()
    if dst == "he":
        if low == "she":
            out = "he"
        elif low == "herself":
            out = "himself"
        elif low == "hers":
            out = "his"
        elif low == "her":
            out = "him" if (not nxt or nxt.lower() in _AFTER_OBJECT) else "his"
        else:
            return word
    else:
        out = {"he": "she", "him": "her", "his": "her", "himself": "herself"}.get(low)
        if out is None:
            return word
        if low == "his" and (not nxt or nxt.lower() in _AFTER_OBJECT):
            out = "hers"  # "the idea was his" -> "hers"
    return out.capitalize() if word[0].isupper() else out


def swap_pronouns(text: str, src: str | None, dst: str | None) -> str | None:
    """``text`` with the pronouns of ``src``'s gender turned into ``dst``'s; the text unchanged when both
    genders are the same or it has no gendered pronoun; None when it has one and either gender is unknown."""
    if not has_gendered_pronoun(text):
        return text
    if src is None or dst is None or src not in ("he", "she") or dst not in ("he", "she"):
        return None
    if src == dst:
        return text
    toks = re.findall(r"[A-Za-z'’]+|\s+|[^A-Za-z'’\s]+", text)
    mine = _MALE if src == "he" else _FEMALE
    out = []
    for i, w in enumerate(toks):
        if w.lower() not in mine:
            out.append(w)
            continue
        j = i + 1 + (i + 1 < len(toks) and toks[i + 1].isspace())
        nxt = toks[j] if j < len(toks) and toks[j][0].isalpha() else ""  # punctuation or end: an object
        out.append(_map_pronoun(w, nxt, dst))
    return "".join(out)


def name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as a whole word, possessive included ("Jon's")."""
    return re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])")


def reword_about(text: str, old: str, new: str, old_pronoun: str | None, new_pronoun: str | None, *,
                 strict: bool) -> str | None:
    """``text`` about ``new`` instead of ``old``: the name replaced wherever it is written out, and, when the
    two are referred to differently, the pronouns too. None when ``old`` is not written out, or (``strict``)
    when the text has a gendered pronoun and either pronoun is unknown."""
    pat = name_pattern(old)
    if not pat.search(text):
        return None
    swapped = pat.sub(new, text)
    if old_pronoun is not None and new_pronoun is not None:
        return swap_pronouns(swapped, old_pronoun, new_pronoun)
    if strict and has_gendered_pronoun(swapped):
        return None
    return swapped


# -- does a speaker's annotation support a question? -----------------------------------------------------
_STOP = {
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "each", "every", "all", "both", "my",
    "your", "his", "her", "their", "our", "its", "is", "are", "was", "were", "do", "does", "did", "have", "has",
    "had", "will", "would", "can", "could", "should", "shall", "may", "might", "must", "am", "be", "been",
    "being", "in", "on", "at", "for", "from", "to", "with", "about", "by", "during", "since", "before",
    "after", "which", "who", "whom", "when", "where", "while", "than", "into", "onto", "over", "under",
    "between", "as", "if", "or", "and", "but", "because", "so", "per", "what", "whose", "why", "how", "not",
    "no", "there", "here", "of", "also", "just", "ever", "really", "very", "much", "many", "i", "me", "you",
    "he", "him", "she", "they", "them", "we", "us", "it", "himself", "herself", "themselves", "hers",
    "kind", "type", "sort", "thing", "things", "something", "anything", "way", "ways", "likely", "one",
    "ones", "other", "another", "s", "recently", "last", "first", "year", "years", "time", "times", "day",
    "days", "week", "weeks", "month", "months", "ago", "now", "currently", "still", "yet", "again", "own",
    # verbs too general to say what a question is about
    "doing", "done", "make", "made", "making", "go", "going", "gone", "went", "get", "got", "getting",
    "take", "took", "taken", "like", "likes", "liked", "want", "wants", "wanted", "think", "thinks", "thought",
    "say", "says", "said", "tell", "told", "feel", "feels", "felt", "use", "used", "find", "found", "give",
    "gave", "given", "plan", "plans", "planning", "planned", "start", "started", "try", "tried", "help",
    "helped", "keep", "kept", "see", "saw", "seen", "come", "came", "become", "became", "decide", "decided",
    "mention", "mentioned", "share", "shared", "talk", "talked", "new", "old", "good", "great", "favorite",
    "favourite", "people", "person", "someone", "family",
}
_SUFFIXES = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""), ("ly", ""))


def stem(word: str) -> str:
    """A crude stem, enough to match inflections of one word: lower case, possessive and one common suffix
    removed (``activities``/``activity``, ``pets``/``pet``, ``received``/``receive``, ``running``/``run``)."""
    w = re.sub(r"['’]s$", "", word.lower().strip("'’"))
    for suf, rep in _SUFFIXES:
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[: -len(suf)] + rep
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":  # running -> runn -> run
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):  # receive / received
        w = w[:-1]
    return w


def key_terms(question: str, names: Sequence[str]) -> set[str]:
    """Stems of the words that say what ``question`` is about (names, function words and very general
    verbs left out)."""
    name_words = {t.lower() for n in names for t in _WORD.findall(n)}
    out = set()
    for tok in _WORD.findall(question):
        low = re.sub(r"['’]s$", "", tok.lower())
        if low in name_words or low in _STOP or len(low) < 3 or low.isdigit():
            continue
        out.add(stem(low))
    return out


def supports(question: str, texts: Iterable[str], names: Sequence[str], answers: Sequence[str] = (), *,
             share: float = 0.5) -> bool:
    """Whether any of ``texts`` (a speaker's annotations) may support ``question``: it mentions one of
    ``answers`` as a whole word, or it holds at least ``share`` of the question's key terms. True when the
    question has no key term (nothing can be ruled out)."""
    terms = key_terms(question, names)
    if not terms:
        return True
    need = max(1, math.ceil(share * len(terms)))
    pats = [re.compile(rf"(?<!\w){re.escape(a.strip().lower())}(?!\w)") for a in answers
            if len(a.strip()) >= 3]
    for text in texts:
        if pats and any(p.search(text.lower()) for p in pats):
            return True
        if len(terms & _stems(text)) >= need:
            return True
    return False


def related(text: str, question: str, answer: str, names: Sequence[str]) -> bool:
    """Whether ``text`` shares a key term with ``question`` or ``answer`` (True when they have none). A turn
    sharing nothing with either cannot be found by its words alone (an id typo, or a reply like "Yeah, glad to
    be part of it" that answers only with the turn before it): not evidence a retriever can be held to."""
    terms = key_terms(question, names) | key_terms(answer, names)
    return not terms or _held(_stems(text), terms) > 0


def shared_terms(text: str, terms: set[str]) -> int:
    """How many of ``terms`` (stems) ``text`` holds (the parts of a hyphenated word count: "awe-inspiring"
    holds "awe")."""
    return _held(_stems(text) | _stems(text.replace("-", " ")), terms)


def _held(stems: frozenset[str], terms: set[str]) -> int:
    """How many of ``terms`` are among ``stems``, a stem or its first five letters matching ("counselor" /
    "counseling": the crude stem alone misses these)."""
    heads = {s[:5] for s in stems if len(s) >= 5}
    return sum(1 for t in terms if t in stems or (len(t) >= 5 and t[:5] in heads))


@lru_cache(maxsize=1 << 16)
def _stems(text: str) -> frozenset[str]:
    """The stems of ``text``'s words (cached: a speaker's texts are checked against many questions)."""
    return frozenset(stem(t) for t in _WORD.findall(text.lower()))
