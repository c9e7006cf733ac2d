"""Heuristic field extraction for imported benchmark questions.

Benchmarks give a question in free text; a seed needs its answer-affecting :class:`QueryFields` (entity,
attribute, scope, answerable). The importers use the format's own structure where there is some (speaker
names, question types, abstention labels, update history) and the rules here for the rest:

* entity — a known name mentioned in the question (LoCoMo speakers, a HaluMem persona), ``"user"`` for
  user-centred ``I/my`` questions, ``"assistant"`` for questions about what the assistant said;
* attribute — the question's head noun phrase (``"What type of rice is my favorite?"`` → ``"type of rice"``,
  ``"How many bikes …"`` → ``"number of bikes"``, ``"When …"`` → ``"time"``) qualified by the content words
  of the rest of the question, so that two questions about the same entity rarely collide;
* scope — ``current``/``previous`` when the checkpoint holds an update history (temporal words decide
  which), otherwise ``current`` for present-tense words, ``any`` for questions about a past event.

An optional extractor (any object with ``.extract(question, context_snippets) -> dict | None``, such as
``ufuzz.llm.uses.FieldExtractor``) is asked first; what it returns is validated and the format's structure
(abstention labels, whether history exists) overrides it. Nothing is guessed: when neither the extractor
nor the rules establish an entity and an attribute, :func:`establish_fields` returns ``None`` and the
importer drops the seed with a count.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any, Protocol

from ufuzz.model import SCOPES, Fact, Provenance, QueryFields
from ufuzz.model.provenance import DATED


class Extractor(Protocol):
    def extract(self, question: str, context_snippets: Sequence[str]) -> dict[str, Any] | None: ...


_WORD = re.compile(r"[A-Za-z0-9$%][A-Za-z0-9$%'’.\-]*")
_AUX = {"is", "are", "was", "were", "do", "does", "did", "have", "has", "had", "will", "would", "can", "could",
        "should", "shall", "may", "might", "must", "am", "be", "been", "being"}
_PREP = {"in", "on", "at", "for", "from", "to", "with", "about", "by", "during", "since", "before", "after",
         "that", "which", "who", "whom", "when", "where", "while", "than", "into", "onto", "over", "under",
         "between", "as", "if", "or", "and", "but", "because", "so", "per"}
_PRONOUN = {"i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "he", "him", "his", "she",
            "her", "hers", "they", "them", "their", "theirs", "we", "us", "our", "ours", "it", "its", "i'm",
            "i've", "i'd", "i'll", "you've", "you'd", "you're"}
_DET = {"the", "a", "an", "this", "that", "these", "those", "some", "any", "each", "every", "all", "both",
        "my", "your", "his", "her", "their", "our", "its"}
_STOP = _AUX | _PREP | _PRONOUN | _DET | {
    "what", "which", "who", "whom", "whose", "where", "when", "why", "how", "not", "no", "there", "here",
    "of", "also", "just", "ever", "really", "very", "much", "many", "get", "got", "go", "went", "s", "please",
    "remind", "remember", "tell", "know", "wondering", "thinking", "wanted", "want"}
#: Temporal words that select a scope; they are dropped from attributes (the scope carries them).
CURRENT_WORDS = ("currently", "current", "now", "still", "presently", "these days", "at the moment",
                 "nowadays", "at present")
PREVIOUS_WORDS = ("previous", "previously", "formerly", "used to", "originally", "prior", "initially")
_PAST_MARKERS = re.compile(r"\b(did|was|were|had|ago|when|last|yesterday|earlier|first|happened|"
                           r"january|february|march|april|may|june|july|august|september|october|"
                           r"november|december|\d{4})\b", re.I)
_ASSISTANT = re.compile(r"\byou\s+(?:had\s+|have\s+)?(?:suggested|recommended|said|mentioned|told|provided|"
                        r"listed|gave|shared|proposed|described|explained|wrote|named)\b", re.I)
_USER = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll|we|our|us)\b", re.I)
_CLAUSE_LEAD = re.compile(r"\b(?:remind me|do you remember|you remember|tell me|let me know|recall)\b"
                          r"\s*(?:of|about)?\s*", re.I)
_ABBREV = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc)\.")
_SIMPLE_HEADS = {"where": "place", "when": "time", "who": "person", "whom": "person", "whose": "owner",
                 "why": "reason"}
_HOW_HEADS = {"long": "duration", "old": "age", "often": "frequency", "far": "distance", "soon": "time",
              "big": "size", "tall": "height", "late": "time", "early": "time"}


def _tokens(text: str) -> list[str]:
    return [t.strip(".'’").lower() for t in _WORD.findall(text) if t.strip(".'’")]


def _question_clause(question: str) -> str:
    """The part of ``question`` that actually asks (benchmarks often lead with context sentences)."""
    q = question.strip()
    lead = None
    for m in _CLAUSE_LEAD.finditer(q):
        lead = m
    if lead is not None and q[lead.end():].strip():
        return q[lead.end():].strip()
    q = _ABBREV.sub(lambda m: m.group(1), q)  # "Dr. Johnson" is not a sentence end
    sentences = [s for s in re.split(r"(?<=[.?!])\s+", q) if s.strip()]
    asking = [s for s in sentences if s.rstrip().endswith("?")]
    return (asking[-1] if asking else sentences[-1] if sentences else q).strip()


def _strip_names(tokens: list[str], names: Sequence[str]) -> list[str]:
    name_toks = {t for n in names for t in _tokens(n)}
    out = []
    for t in tokens:
        base = t[:-2] if t.endswith(("'s", "’s")) else t
        if base in name_toks:
            continue
        out.append(t)
    return out


def _noun_phrase(tokens: list[str], start: int) -> tuple[list[str], int]:
    """Consume a noun phrase from ``start``: skip determiners/possessives, stop at verbs/prepositions."""
    i = start
    while i < len(tokens) and (tokens[i] in _DET or tokens[i].endswith(("'s", "’s"))):
        i += 1
    np: list[str] = []
    while i < len(tokens):
        t = tokens[i]
        if t in _AUX or t in _PRONOUN or (t in _PREP and t != "of"):
            break
        if t == "of" and (not np or i + 1 >= len(tokens)):
            break
        np.append(t)
        i += 1
    while np and np[-1] == "of":
        np.pop()
        i -= 1
    return np, i


def _months(tokens: list[str]) -> list[str]:
    """Tokens with the month "may" (next to a number: "7 may 2023", "may 2023") written "May", so that it is
    neither read as the modal verb (which ends a noun phrase) nor dropped as a function word."""
    out = list(tokens)
    for i, t in enumerate(tokens):
        if t == "may" and any(0 <= j < len(tokens) and tokens[j].rstrip(",").isdigit() for j in (i - 1, i + 1)):
            out[i] = "May"
    return out


def _drop_scope_words(words: list[str]) -> list[str]:
    singles = {w for w in CURRENT_WORDS + PREVIOUS_WORDS if " " not in w}
    return [w for w in words if w not in singles]


def head_attribute(question: str, names: Sequence[str] = (), *, has_history: bool = False) -> str | None:
    """The attribute a question asks for: head noun phrase plus the content words of the rest.

    Returns ``None`` when the question has no recognisable asking form (e.g. "Any tips?").
    """
    clause = _question_clause(question)
    toks = _months(_strip_names(_tokens(clause), names))
    if not toks:
        return None
    # find the first wh-word / asking form in the clause
    head: list[str] | None = None
    rest_from = 0
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if t == "how":
            if nxt in ("many", "much"):
                np, j = _noun_phrase(toks, i + 2)
                kind = "number" if nxt == "many" else "amount"
                if np in (["more"], ["less"], ["longer"]):
                    kind, np = "difference", []
                head, rest_from = ([kind, "of", *np] if np else [kind]), j
            elif nxt in _HOW_HEADS:
                head, rest_from = [_HOW_HEADS[nxt]], i + 2
            else:
                head, rest_from = ["manner"], i + 1
            break
        if t in ("what", "which"):
            j = i + 1
            if j < len(toks) and toks[j] in _AUX:
                np, k = _noun_phrase(toks, j + 1)
                if np and k > j + 1 and toks[j] not in ("did", "do", "does", "will", "would", "can", "could"):
                    head, rest_from = np, k
                else:
                    head, rest_from = ["thing"], j + 1
            else:
                np, k = _noun_phrase(toks, j)
                head, rest_from = (np, k) if np else (["thing"], j)
            break
        if t in _SIMPLE_HEADS:
            head, rest_from = [_SIMPLE_HEADS[t]], i + 1
            break
        if i == 0 and (t in ("the", "that", "this") or t not in _STOP):
            np, k = _noun_phrase(toks, i)  # "… remind me of [the website that …]"
            if np:
                head, rest_from = np, k
                break
        if i == 0 and t in _AUX:  # yes/no question
            head, rest_from = ["whether"], i + 1
            break
    if not head:
        return None
    rest = [w for w in toks[rest_from:] if w not in _STOP]
    if has_history:  # the scope carries "previous"/"current"; without history the words stay meaningful
        head = _drop_scope_words(head) or head
        rest = _drop_scope_words(rest)
    rest = rest[:8]
    attr = " ".join(head)
    return f"{attr}: {' '.join(rest)}" if rest else attr


def _has(question: str, words: Sequence[str]) -> bool:
    q = question.lower()
    return any(re.search(rf"\b{re.escape(w)}\b", q) for w in words)


def detect_scope(question: str, *, has_history: bool) -> str:
    """``current``/``previous`` when there is history to choose from, else ``current`` or ``any``."""
    if has_history:
        return "previous" if _has(question, PREVIOUS_WORDS) else "current"
    if _has(question, CURRENT_WORDS):
        return "current"
    return "any" if _PAST_MARKERS.search(question) else "current"


def _name_positions(question: str, names: Sequence[str]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for name in names:
        variants = [name] + ([name.split()[0]] if " " in name else [])
        best = None
        for v in variants:
            m = re.search(rf"\b{re.escape(v)}(?:'s|’s)?\b", question, re.I)
            if m and (best is None or m.start() < best):
                best = m.start()
        if best is not None:
            found.append((best, name))
    return sorted(found)


def find_entity(question: str, names: Sequence[str], *, user_centred: bool = False) -> str | None:
    """The entity a question is about: a known name, or ``user``/``assistant`` when ``user_centred``."""
    found = _name_positions(question, names)
    if len(found) >= 2:
        a, b = found[0][1], found[1][1]
        joint = re.search(rf"\b{re.escape(a.split()[0])}\s+and\s+{re.escape(b.split()[0])}\b", question, re.I)
        return f"{a} and {b}" if joint else a
    if found:
        return found[0][1]
    if user_centred:
        if _ASSISTANT.search(question):
            return "assistant"
        if _USER.search(question):
            return "user"
    return None


def heuristic_fields(question: str, *, names: Sequence[str] = (), user_centred: bool = False,
                     answerable: bool = True, has_history: bool = False) -> QueryFields | None:
    entity = find_entity(question, names, user_centred=user_centred)
    if entity is None:
        return None
    attribute = head_attribute(question, names=[*names, *entity.split(" and ")], has_history=has_history)
    if not attribute:
        return None
    return QueryFields(entity=entity, attribute=attribute, scope=detect_scope(question, has_history=has_history),
                       answerable=answerable)


def establish_fields(question: str, snippets: Sequence[str], *, extractor: Extractor | None,
                     warnings: Counter[str], names: Sequence[str] = (), user_centred: bool = False,
                     answerable: bool = True, has_history: bool = False) -> QueryFields | None:
    """Fields for ``question``: the extractor's answer when valid, else the heuristics, else ``None``.

    The format's own structure wins over the extractor: ``answerable`` is the benchmark's label, and the
    scope must be one the checkpoint can give (``current``/``previous`` only with history).
    """
    if extractor is not None:
        got: Any = None
        try:
            got = extractor.extract(question, list(snippets))
        except Exception:  # an extractor is outside code (LLM client); a failure falls back to the rules
            warnings["extractor_error"] += 1
        fields = _from_extractor(got, question, warnings, answerable=answerable, has_history=has_history)
        if fields is not None:
            return fields
    return heuristic_fields(question, names=names, user_centred=user_centred, answerable=answerable,
                            has_history=has_history)


def _from_extractor(got: Any, question: str, warnings: Counter[str], *, answerable: bool,
                    has_history: bool) -> QueryFields | None:
    if got is None:
        warnings["extractor_no_fields"] += 1
        return None
    if not isinstance(got, dict):
        warnings["extractor_invalid"] += 1
        return None
    entity, attribute = got.get("entity"), got.get("attribute")
    if not (isinstance(entity, str) and entity.strip() and isinstance(attribute, str) and attribute.strip()):
        warnings["extractor_invalid"] += 1
        return None
    scope = got.get("scope")
    heuristic_scope = detect_scope(question, has_history=has_history)
    if scope not in SCOPES:
        scope = heuristic_scope
    elif has_history and scope == "any":
        scope = heuristic_scope
    elif not has_history and scope == "previous":
        warnings["extractor_scope_without_history"] += 1
        scope = "any"
    if "answerable" in got and bool(got["answerable"]) != answerable:
        warnings["extractor_answerable_overridden"] += 1
    return QueryFields(entity=entity.strip(), attribute=attribute.strip(), scope=scope, answerable=answerable)


# -- value types and pools ----------------------------------------------------------------------------------
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_NUM_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
              "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20}


def value_type_of(value: str, person_names: Sequence[str] = ()) -> str:
    v = value.strip()
    low = v.lower()
    if re.fullmatch(r"-?\d+(?:\.\d+)?", v) or low in _NUM_WORDS:
        return "year" if re.fullmatch(r"(?:19|20)\d\d", v) else "number"
    if re.fullmatch(r"\$\s?\d[\d,]*(?:\.\d+)?", v):
        return "money"
    if re.fullmatch(r"\d+(?:\.\d+)?\s?%", v):
        return "percent"
    if re.fullmatch(r"\d{1,2}(?::\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)", low):
        return "time_of_day"
    month = "|".join(_MONTHS) + "|" + "|".join(m[:3] for m in _MONTHS)
    if re.fullmatch(rf"(?:\d{{1,2}}\s+(?:{month})\.?,?\s+\d{{4}}|(?:{month})\.?\s+\d{{1,2}},?\s+\d{{4}}|"
                    rf"(?:{month})\.?,?\s+\d{{4}}|\d{{4}}-\d\d-\d\d)", low):
        return "date"
    if re.fullmatch(r"(?:\d+|[a-z]+)\s+(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)"
                    r"(?:\s+and\s+\d+\s+\w+)?", low):
        return "duration"
    if RELATIVE_DATE.fullmatch(v) and date_of(RELATIVE_DATE.fullmatch(v).group("anchor")) is not None:
        return "relative_date"
    if any(v == n or v == n.split()[0] for n in person_names):
        return "person_name"
    if re.fullmatch(r"\d+(?:\.\d+)?\s+[a-z]+", low) and low.split()[1] in _UNITS:
        return "quantity"
    return "text"


_WEEKDAY_WORDS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
#: a time told relative to a date, as LoCoMo answers its temporal questions ("The week before 9 June 2023", "The
#: Friday before 15 July 2023", "two weekends before 17 July 2023", "The week of 23 August 2023")
RELATIVE_DATE = re.compile(
    rf"(?i)(?:the\s+)?(?:(?:a|one|two|three|four|five|six)\s+)?(?:days?|weeks?|weekends?|months?|{_WEEKDAY_WORDS}s?)\s+"
    rf"(?:before|of|after)\s+(?P<anchor>\d{{1,2}}\s+[A-Za-z]+,?\s+\d{{4}}|[A-Za-z]+\s+\d{{1,2}},?\s+\d{{4}})")

#: units a quantity answer counts in ("10 pounds", "3 miles"): another number of the same unit is type-compatible
_UNITS = {"pounds", "pound", "lbs", "kilograms", "kilos", "kg", "grams", "miles", "mile", "kilometers", "km",
          "meters", "feet", "inches", "copies", "pages", "books", "songs", "people", "dollars", "euros", "points",
          "laps", "steps", "calories", "cups", "servings", "pieces", "items", "times", "games", "goals", "stars",
          "tickets", "rooms", "floors", "episodes", "chapters", "courses", "classes", "sessions", "photos"}


#: Person names used as absent (type-compatible, not in the checkpoint) entity targets and name pools.
PERSON_NAMES = ("Alice", "Bruno", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hiro", "Ingrid", "Jomo",
                "Kalani", "Lucia", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Soren", "Tamsin",
                "Umar", "Vera", "Wen", "Ximena", "Yusuf", "Zora")
#: Generic personal attributes used as absent attribute targets (kept only when the checkpoint never
#: mentions them).
GENERIC_ATTRIBUTES = ("blood type", "shoe size", "licence plate number", "favourite opera", "middle name",
                      "passport number", "childhood nickname", "allergy")


_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
                 "twenty")


def value_forms(value: str) -> tuple[str, ...]:
    """The ways a memory may write ``value``: itself, and for a small number its digits or its word."""
    v = value.strip()
    forms = [v]
    low = v.lower()
    if low.isdigit() and int(low) < len(_NUMBER_WORDS):
        forms.append(_NUMBER_WORDS[int(low)])
    elif low in _NUMBER_WORDS:
        forms.append(str(_NUMBER_WORDS.index(low)))
    return tuple(forms)


_ORDINAL_WORDS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                  "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
                  "seventeenth", "eighteenth", "nineteenth", "twentieth")


def stated_forms(value: str) -> tuple[str, ...]:
    """The ways a memory may *state* ``value`` without writing it as such: :func:`value_forms`, and for a whole
    number its ordinal too ("18" is told as "my 18th birthday", "eighteenth"). For recognising support only —
    never for rewriting a value, where "18th" would not take another number's place."""
    forms = list(value_forms(value))
    low = value.strip().lower()
    n = int(low) if low.isdigit() else (_NUMBER_WORDS.index(low) if low in _NUMBER_WORDS else None)
    if n is not None:
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        forms.append(f"{n}{suffix}")
        if n < len(_ORDINAL_WORDS):
            forms.append(_ORDINAL_WORDS[n])
    return tuple(dict.fromkeys(forms))


#: quotation marks and apostrophes, straight and typographic, read as one mark: an answer "the 'Walk for Hunger'
#: event" is stated by a turn that writes "the \"Walk for Hunger\" event" (LongMemEval hand audit)
_QUOTES = str.maketrans({c: '"' for c in "'\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f`\u00b4"})


def mentions_word(texts: Sequence[str], word: str) -> bool:
    """True when ``word`` occurs as a whole word (case-insensitive, any quotation mark for any other) in any of
    ``texts``.

    Whole word means no word character right before or after it — so values that start or end with
    punctuation (``#aurora-pager``, ``lead approval for core/``) match too, where ``\\b`` would not."""
    w = word.lower().translate(_QUOTES)
    pat = re.compile(rf"(?<!\w){re.escape(w)}(?!\w)")
    return any(w in (low := t.lower().translate(_QUOTES)) and pat.search(low) for t in texts)


#: Classes of ordinary words a free-text answer may be one of, so that another member is a type-compatible new
#: value ("Sweden" -> "Portugal", "guinea pig" -> "hamster", "weekly" -> "every other week"). A value outside
#: every class has none: an update of it would have to invent what kind of thing it is. Members are singular
#: (a plural would break the sentence's agreement: "this necklace is" -> "this earrings is").
TEXT_CLASSES: dict[str, tuple[str, ...]] = {
    "country": ("Sweden", "Norway", "Denmark", "Finland", "Germany", "France", "Spain", "Portugal", "Italy",
                "Greece", "Poland", "Ireland", "Canada", "Mexico", "Brazil", "Argentina", "Chile", "Peru", "Japan",
                "Korea", "China", "India", "Thailand", "Vietnam", "Australia", "Kenya", "Egypt", "Morocco",
                "Turkey", "Iceland", "Scotland", "England", "Netherlands", "Belgium", "Austria", "Switzerland"),
    "pet": ("dog", "cat", "guinea pig", "hamster", "rabbit", "parrot", "goldfish", "turtle", "ferret", "gecko",
            "snake", "horse", "budgie", "chinchilla"),
    "instrument": ("piano", "guitar", "violin", "cello", "flute", "clarinet", "saxophone", "trumpet",
                   "ukulele", "harp", "bass guitar", "accordion", "harmonica"),
    # what one goes doing ("go horseback riding", "shoes for running") and what one plays ("play tennis")
    "activity": ("running", "swimming", "cycling", "hiking", "surfing", "skiing", "snowboarding", "rock climbing",
                 "kayaking", "horseback riding", "skateboarding", "rowing", "fishing", "camping", "sailing",
                 "jogging"),
    "sport": ("tennis", "soccer", "football", "basketball", "volleyball", "baseball", "golf", "badminton",
              "hockey", "cricket", "rugby", "table tennis"),
    "colour": ("red", "blue", "green", "yellow", "purple", "orange", "pink", "black", "white", "grey", "brown",
               "teal", "turquoise"),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "season": ("spring", "summer", "autumn", "winter"),
    "frequency": ("daily", "weekly", "monthly", "yearly", "every day", "every week", "every other week",
                  "twice a week", "once a week", "once a month", "twice a month", "once or twice a year",
                  "every weekend", "once a year", "twice a day", "every other day", "twice a year",
                  "every other year", "three times a year"),
    "relationship status": ("single", "married", "engaged", "divorced", "widowed"),
    "dance style": ("contemporary", "ballet", "hip-hop", "salsa", "tango", "jazz", "tap", "ballroom", "swing",
                    "breakdancing", "flamenco"),
    "music genre": ("classical", "jazz", "rock", "pop", "hip-hop", "country", "blues", "folk", "reggae", "metal",
                    "electronic", "indie", "soul", "punk"),
    "feeling": ("happy", "glad", "excited", "proud", "nervous", "anxious", "grateful", "thrilled", "relieved",
                "hopeful", "calm", "overwhelmed", "inspired", "motivated", "stressed"),
    "art form": ("painting", "pottery", "drawing", "sculpture", "photography", "knitting", "calligraphy",
                 "woodworking", "embroidery", "ceramics", "printmaking", "watercolor"),
    "meal": ("breakfast", "lunch", "dinner", "brunch"),
    "city": ("Paris", "Rome", "London", "Berlin", "Madrid", "Lisbon", "Vienna", "Prague", "Amsterdam", "Dublin",
             "Athens", "Barcelona", "Tokyo", "Seoul", "Bangkok", "Sydney", "Toronto", "Chicago", "Boston", "Seattle",
             "Denver", "Miami", "Austin", "Nashville", "Montreal", "Vancouver", "Stockholm", "Oslo", "Copenhagen",
             "Helsinki", "Edinburgh", "Florence", "Venice", "Kyoto", "Istanbul", "Cairo", "Nairobi", "Lima"),
    "occupation": ("teacher", "nurse", "doctor", "engineer", "lawyer", "banker", "accountant", "chef", "writer",
                   "designer", "architect", "photographer", "counselor", "therapist", "pharmacist", "librarian",
                   "electrician", "plumber", "carpenter", "journalist", "programmer", "pilot", "firefighter",
                   "dentist", "veterinarian", "mechanic", "barista", "farmer"),
    "food": ("pizza", "pasta", "sushi", "curry", "ramen", "lasagna", "paella", "salad", "soup", "risotto",
             "falafel", "steak", "chili", "stew", "gnocchi"),
    "drink": ("coffee", "tea", "lemonade", "hot chocolate", "smoothie", "orange juice", "milkshake", "iced tea"),
    "school subject": ("psychology", "mathematics", "biology", "chemistry", "physics", "history", "philosophy",
                       "economics", "sociology", "literature", "computer science", "political science",
                       "art history", "linguistics", "nursing", "law", "medicine", "engineering"),
    "language": ("English", "Spanish", "French", "German", "Italian", "Portuguese", "Japanese", "Korean",
                 "Mandarin", "Arabic", "Swedish", "Dutch", "Russian", "Hindi", "Greek", "Polish", "Turkish"),
    "vehicle": ("car", "bike", "motorcycle", "scooter", "van", "truck", "bus", "train", "boat", "canoe"),
    "jewellery": ("necklace", "bracelet", "ring", "pendant", "brooch", "locket", "watch"),
    "weather": ("sunny", "rainy", "cloudy", "snowy", "windy", "foggy", "stormy"),
}
_ARTICLE = re.compile(r"(?i)^(?:a|an|the)\s+")
#: how often, in words that mean the same rate ("weekly" / "every week" / "once a week"), grouped by the scale
#: they are on (days, weeks, months, years). A new frequency is another rate on the same scale: the sentence
#: around it ("We don't go often, usually only once or twice a year") stays true of it ("… only once a year"),
#: where a rate of another scale ("… only every weekend") would contradict it.
FREQUENCY_SCALES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("daily", "every day"), ("twice a day",), ("every other day",)),
    (("weekly", "every week", "once a week"), ("every other week",), ("twice a week",), ("every weekend",)),
    (("monthly", "once a month"), ("twice a month",)),
    (("yearly", "once a year"), ("once or twice a year",), ("twice a year",), ("every other year",),
     ("three times a year",)),
)
#: rates one habit can have both of: "once or twice a year" is true of a yearly habit and of a twice-yearly one,
#: so neither is a new value of it (a reader who was given the old sentence would still answer right)
FREQUENCY_OVERLAPS: frozenset[frozenset[str]] = frozenset({
    frozenset({"once or twice a year", "yearly"}), frozenset({"once or twice a year", "twice a year"}),
    frozenset({"weekly", "every weekend"}),
})


def _rate(value: str) -> tuple[int, tuple[str, ...]] | None:
    """``value``'s scale (its index) and rate (its synonyms) in :data:`FREQUENCY_SCALES`, if it is a frequency."""
    low = value.strip().lower()
    for n, scale in enumerate(FREQUENCY_SCALES):
        for rate in scale:
            if low in rate:
                return n, rate
    return None


def same_or_overlapping_rate(old: str, new: str) -> bool:
    """Whether ``new`` is no new value of the frequency ``old``: a synonym of it or a rate it overlaps (an update
    from "weekly" to "every week" or "every weekend" changes nothing a reader would answer)."""
    a, b = _rate(old), _rate(new)
    if a is None or b is None or a[0] != b[0]:
        return False
    return a[1] is b[1] or frozenset({a[1][0], b[1][0]}) in FREQUENCY_OVERLAPS


_WEEKDAY = re.compile(rf"(?i)\b({_WEEKDAY_WORDS})s?\b")
_ASKS_DAY = re.compile(r"(?i)\b(?:week)?days?\b")


def same_day_asked(old: str, new: str, question: str) -> bool:
    """Whether ``new`` keeps the one weekday of ``old`` while ``question`` asks for the day: "Friday mornings" →
    "Friday at dawn" is a new schedule, yet the memory saying "Friday mornings" still answers "What is Anselm's
    gym day?" right, so no reader is misled by it and ranking it above its replacement is no failure."""
    a, b = set(_WEEKDAY.findall(old.lower())), set(_WEEKDAY.findall(new.lower()))
    return len(a) == 1 and a == b and _ASKS_DAY.search(question) is not None


def no_new_answer(old: str, new: str, question: str) -> bool:
    """Whether an update from ``old`` to ``new`` leaves the answer to ``question`` as it was: the same value, a
    rate it overlaps, or the same weekday asked for. The update operator neither offers nor accepts such a value
    (its superseded memory would still answer right, so a reference calling it stale would be wrong)."""
    return old == new or same_or_overlapping_rate(old, new) or same_day_asked(old, new, question)


#: classes of things a person gathers rather than swaps: a new pet, instrument, vehicle, piece of jewellery or
#: language is one more, and the one stated before stays true ("What pet does Caroline have?" — getting a snake
#: does not make her guinea pig stale), unless the question asks for the one (favourite, current, main ...)
ACCUMULATING = frozenset({"pet", "instrument", "vehicle", "jewellery", "language"})
_ONE_OF_THEM = re.compile(r"(?i)\b(?:favou?rites?|current(?:ly)?|now|main|primary|only|new|newest|latest|"
                          r"recent(?:ly)?|these days|at the moment|most)\b")


def accumulates(value: str, question: str) -> bool:
    """Whether a new value of ``value``'s kind would add to it rather than replace it, as ``question`` asks: an
    update then records no new value of the fact (the old one's memory is no stale evidence), so none is made."""
    return text_class(value) in ACCUMULATING and _ONE_OF_THEM.search(question) is None


def text_class(value: str) -> str | None:
    """The class of :data:`TEXT_CLASSES` a free-text value belongs to (an article aside, any case); None when
    it is in none, or in two (hip-hop is a dance and a genre: which kind of thing is meant cannot be told)."""
    v = _ARTICLE.sub("", value.strip()).lower()
    found = [c for c, members in TEXT_CLASSES.items() if v in (m.lower() for m in members)]
    return found[0] if len(found) == 1 else None


def _class_pool(value: str) -> list[str]:
    """The other members of ``value``'s class, written as it is (an article kept, the first letter's case)."""
    cls = text_class(value)
    if cls is None:
        return []
    v = value.strip()
    if cls == "frequency":
        return _frequencies(v)
    art = _ARTICLE.match(v)
    bare = v[art.end():] if art else v
    out = []
    for m in TEXT_CLASSES[cls]:
        if m.lower() == bare.lower() or text_class(m) != cls:  # itself, or a word of two classes ("jazz")
            continue
        word = m[0].upper() + m[1:] if bare[:1].isupper() else (m if m[:1].isupper() else m.lower())
        if art:
            lead = art.group(0).strip()
            if lead.lower() in ("a", "an"):
                lead = ("an" if word[:1].lower() in "aeiou" else "a")
                lead = lead.capitalize() if art.group(0)[0].isupper() else lead
            word = f"{lead} {word}"
        out.append(word)
    return out


def _frequencies(value: str) -> list[str]:
    """Other rates on ``value``'s scale (:data:`FREQUENCY_SCALES`), one wording each, in ``value``'s case: never a
    synonym of it ("once a week" is no new value of "weekly"), nor a rate it overlaps (:data:`FREQUENCY_OVERLAPS`)."""
    found = _rate(value)
    if found is None:
        return []
    out = [rate[0] for rate in FREQUENCY_SCALES[found[0]] if not same_or_overlapping_rate(value, rate[0])]
    return [w[0].upper() + w[1:] for w in out] if value[:1].isupper() else out


def value_pool(value: str, value_type: str, existing: set[str], absent_names: Sequence[str]) -> tuple[str, ...]:
    """Fresh type-compatible values an update may write (for free text, other members of its
    :data:`TEXT_CLASSES` class; none for text in no class)."""
    out: list[str] = []
    v = value.strip()
    if value_type in ("number", "year"):
        n = _NUM_WORDS.get(v.lower())
        base = float(n) if n is not None else float(v)
        deltas = (1, 2, 5, -1, -2) if value_type == "year" else (1, 3, 7)
        for d in deltas:
            cand = base + d
            out.append(str(int(cand)) if cand == int(cand) else str(cand))
    elif value_type == "money":
        num = float(v.replace("$", "").replace(",", "").strip())
        out = [f"${int(num * f):,}" for f in (2, 3)] + [f"${int(num + 15):,}"]
    elif value_type == "percent":
        num = float(v.rstrip("%").strip())
        out = [f"{int(num + d) % 100}%" for d in (10, 25, 35)]
    elif value_type == "duration":
        m = re.match(r"(\d+)\s+(\w+)", v)
        if m:
            out = [f"{int(m.group(1)) + d} {m.group(2)}" for d in (1, 3)]
    elif value_type == "date":
        out = _shift_dates(v)
    elif value_type == "relative_date":  # told at another date: a day weeks before the time it names
        m = RELATIVE_DATE.fullmatch(v)
        anchor = date_of(m.group("anchor")) if m else None
        if anchor is not None:
            out = [_day(anchor - timedelta(days=n)) for n in (24, 38, 52)]
    elif value_type == "quantity":
        num, unit = v.split(None, 1)
        base = float(num)
        for d in (1, 3, 7):
            n = base + d
            out.append(f"{int(n) if n == int(n) else n} {unit}")
    elif value_type == "time_of_day":
        out = _shift_clock(v)
    elif value_type == "person_name":
        out = list(absent_names[:3])
    elif value_type == "text":
        low = {e.lower() for e in existing}
        return tuple(x for x in _class_pool(v) if x.lower() not in low)
    return tuple(x for x in out if x not in existing and x != v)


_DATE_FORMATS = ("%d %B %Y", "%d %B, %Y", "%B %d, %Y", "%B %d %Y", "%Y-%m-%d", "%B %Y", "%B, %Y", "%d %b %Y",
                 "%b %d, %Y")


def _shift_clock(v: str) -> list[str]:
    """``"6:00 pm"`` one, two and three hours later, written the same way (minutes, spacing, case of am/pm)."""
    m = re.fullmatch(r"(\d{1,2})(:\d\d)?(\s?)([AaPp])(\.?)([Mm])(\.?)", v.strip())
    if not m:
        return []
    hour, minutes, space, ap, dot1, mm, dot2 = m.groups()
    h24 = int(hour) % 12 + (12 if ap.lower() == "p" else 0)
    out = []
    for d in (1, 2, 3):
        n = (h24 + d) % 24
        half = "p" if n >= 12 else "a"
        half = half.upper() if ap.isupper() else half
        out.append(f"{(n % 12) or 12}{minutes or ''}{space}{half}{dot1}{mm}{dot2}")
    return out


def date_of(value: str):
    """The date a date or year value names (its first day for a month or a year), or None."""
    from datetime import datetime

    for fmt in (*_DATE_FORMATS, "%Y"):
        try:
            return datetime.strptime(value.strip(), fmt).date()
        except ValueError:
            continue
    return None


_RELATION = re.compile(r"(?i)\b(before|of|after)\b")


def _side(value: str, told) -> str | None:
    """``"past"`` or ``"future"``: where the date ``value`` lies against ``told`` (the day the fact was told); None
    where that cannot be told — the telling day itself, a month or a year that holds it. A date told relative to
    another ("The week before 9 June 2023") lies by its anchor and its relation."""
    d = date_of(value)
    if d is not None:  # the telling day itself, or a month or a year it lies in: either
        return _against((d, _last_day(value, d)), told)
    m = RELATIVE_DATE.search(value)
    rel = _RELATION.search(value)
    anchor = date_of(m.group("anchor")) if m is not None else None
    if anchor is None or rel is None:
        return None
    word = rel.group(1).lower()
    if word == "before":
        return "past" if anchor <= told else None
    if word == "after":
        return "future" if anchor >= told else None
    if anchor == told:  # the week of the telling day: either
        return None
    return "past" if anchor < told else "future"


def _last_day(value: str, first):
    """The last day of the period the date ``value`` names, whose first day is ``first`` (a day, a month, a year)."""
    v = value.strip()
    if re.fullmatch(r"\d{4}", v):
        return date(first.year, 12, 31)
    if not re.search(r"\d{1,2}(?:\s|,|$)|-\d\d$", v.replace(str(first.year), "")):  # "May 2023", "May, 2023"
        nxt = date(first.year + first.month // 12, first.month % 12 + 1, 1)
        return nxt - timedelta(days=1)
    return first


#: a past participle ("lost", "started", "been"; not "red"), for a present perfect
_PARTICIPLE = (r"(?:\w{2,}ed|been|seen|taken|given|written|known|shown|grown|flown|driven|eaten|spoken|chosen|broken|"
               r"fallen|gotten|lost|made|got|met|left|bought|found|done|gone|won|begun|had|heard|told|sold|kept|"
               r"felt|brought|taught|thought|built|spent|sent|read|run|become|come)")
#: the past asked: "did", "was" …, or a present perfect ("When Gina has lost her job", "When has Jon been to
#: Rome?"), not "has to" nor "have a dog"
_PAST_ASKED = re.compile(r"(?i)\b(?:did|was|were|had)\b|\b(?:has|have)\s+(?:just\s+|already\s+|recently\s+)?"
                         + _PARTICIPLE + r"\b|^\W*when\s+(?:has|have)\s+\w+(?:\s+\w+)?\s+" + _PARTICIPLE + r"\b")
_FUTURE_ASKED = re.compile(r"(?i)\b(?:will|going to|planning|plans?|planned|is|are)\b")


def _asked_side(question: str) -> str | None:
    """The side a "when" question puts its event on by its tense ("When did …": past; "When is … going to …":
    future), None when it says both or neither."""
    past, future = _PAST_ASKED.search(question), _FUTURE_ASKED.search(question)
    if bool(past) == bool(future):
        return None
    return "past" if past else "future"


def same_side(old: str, new: str, told_at: str | None, question: str = "") -> bool:
    """Whether the date ``new`` lies on the same side of ``told_at`` (when the fact was first told, ISO) as the
    date ``old``: an update corrects a past event to another past date and a plan to another future one (hand
    audit: an event told on 8 May as "yesterday" moved to 10 May; a plan for June moved to a May already over
    when it was told). Where ``old`` cannot say (a month or year the telling day lies in) the ``question``'s tense
    does. True without a telling time (nothing to hold it to); False where no side can be told."""
    if told_at is None:
        return True
    told = datetime.fromisoformat(told_at).date()
    side = _side(old, told) or _asked_side(question)
    return side is not None and _side(new, told) == side


def _period(value: str) -> tuple[date, date] | None:
    """The first and last day of the period the date ``value`` names: a day, a month, a year, or a time told
    relative to a date as LoCoMo answers "last Friday", "last week" ("The Friday before 15 July 2023": that Friday;
    "The week before 9 June 2023": the calendar week before it or the seven days before it, whichever is meant;
    "The week of 23 August 2023": the days around it). None for no date."""
    d = date_of(value)
    if d is not None:
        return d, _last_day(value, d)
    m = RELATIVE_DATE.fullmatch(value.strip())
    anchor = date_of(m.group("anchor")) if m is not None else None
    if anchor is None:
        return None
    low = value.lower()
    n = next((_NUM_WORDS[w] for w in low.split() if w in _NUM_WORDS), 1)  # "a week", "The week": one
    rel = _RELATION.search(value).group(1).lower()
    weekday = next((i for i, w in enumerate(_WEEKDAYS.split("|")) if w in low), None)
    one = timedelta(days=1)
    if rel == "of":
        return anchor - timedelta(days=max(3, anchor.weekday())), anchor + timedelta(days=max(3, 6 - anchor.weekday()))
    sign = -1 if rel == "before" else 1
    if weekday is not None or "weekend" in low:  # that weekday, or that Saturday and Sunday
        weekend = weekday is None
        day = (6 if sign < 0 else 5) if weekend else weekday  # a weekend before ends before it, one after begins
        gap = (anchor.weekday() - day) % 7 if sign < 0 else (day - anchor.weekday()) % 7
        at = anchor + sign * timedelta(days=(gap or 7) + 7 * (n - 1))
        if not weekend:
            return at, at
        return (at - one, at) if sign < 0 else (at, at + one)
    if re.search(r"\bdays?\b", low):
        return (anchor + sign * n * one,) * 2
    if "month" in low:
        span = timedelta(days=31 * n + anchor.day)
    else:  # weeks: back to the Monday of the n-th calendar week before, or forward to the end of the n-th after
        span = timedelta(days=7 * n + (anchor.weekday() if sign < 0 else 6 - anchor.weekday()))
    return (anchor - span, anchor - one) if sign < 0 else (anchor + one, anchor + span)


def _against(period: tuple[date, date], day: date) -> str | None:
    """``"past"`` or ``"future"``: where ``period`` lies against ``day``; None where it holds that day."""
    return "past" if period[1] < day else "future" if period[0] > day else None


def _gap(old: str, told_days: Sequence[date], told_at: str | None, question: str) -> tuple[date, date] | None:
    """The telling days around the date ``old`` (the days the conversation was told on, ``told_days``): where a
    correction of it may fall without crossing one (:func:`in_gap` also keeps a new day off the talks' own days).
    A period that holds a telling day places the correction on the side of it where the
    fact was first told (``told_at``): a week holding the last talk moves only later, where no talk missed it; the
    telling day itself by the ``question``'s tense. None where ``old`` is no date or cannot be placed."""
    period = _period(old)
    if period is None:
        return None
    first = datetime.fromisoformat(told_at).date() if told_at is not None else None
    lo, hi = date.min, date.max
    for day in told_days:
        side = _against(period, day)
        if side is None and first is not None:
            side = _asked_side(question) if day == first else "future" if day < first else "past"
        if side is None:
            return None
        if side == "past":
            hi = min(hi, day)
        else:
            lo = max(lo, day)
    return (lo, hi) if lo < hi else None


def in_gap(old: str, new: str, told_days: Sequence[date], told_at: str | None, question: str = "") -> bool:
    """Whether the date ``new`` names other days than ``old``, wholly between the same two telling days (every
    day the conversation was told on, ``told_days``), and is no day of a talk itself: a correction that crosses one
    contradicts the conversation (hand audit: a park visit told "since we last spoke" moved to before the last talk;
    a pottery workshop moved to before the day she signed up for pottery, told in an earlier session), and one onto
    the day of a talk holds only if the event followed that talk (three audits in a row read "So much since we
    talked!" moved onto the last talk's day as doubtful). A week or a month may hold a talk's day. True without
    telling days."""
    if not told_days:
        return True
    return _fits(_gap(old, told_days, told_at, question), _period(old), _period(new), set(told_days))


def _fits(gap: tuple[date, date] | None, was: tuple[date, date] | None, period: tuple[date, date] | None,
          talks: set[date]) -> bool:
    """:func:`in_gap`'s rule on the days already read: ``period`` lies in ``gap``, is no single day of ``talks``,
    and names other days than ``was`` (the old date's)."""
    if gap is None or was is None or period is None or not (gap[0] <= period[0] and period[1] <= gap[1]):
        return False
    if period[0] == period[1] and period[0] in talks:
        return False
    return period[1] < was[0] or was[1] < period[0]


def gap_days(old: str, told_days: Sequence[date], told_at: str | None, question: str, *,
             until: date) -> list[str]:
    """Days an update of the day, the week or the month ``old`` may write (:func:`in_gap`), not after ``until``,
    nearest to ``old`` first: a correction by a day or a week, where a shift by a fixed number of days would cross a
    telling day. A month told as "this month" holds its telling day, so no other month fits between two talks; a
    day of the gap before it does (started at the gym "this month", told on 16 March after a talk on 8 February:
    "on 28 February 2023"). A year moves by years only."""
    gap, period = _gap(old, told_days, told_at, question), _period(old)
    if gap is None or period is None or (period[1] - period[0]).days > 31:
        return []
    lo = max(gap[0], period[0] - timedelta(days=60))
    hi = min(gap[1], until, period[1] + timedelta(days=60))
    days = [lo + timedelta(days=n) for n in range((hi - lo).days + 1)]
    talks = set(told_days)
    days = [d for d in days if _fits(gap, period, (d, d), talks)]  # in_gap's rule, the gap read once
    days.sort(key=lambda d: (min(abs((d - period[0]).days), abs((d - period[1]).days)), d))
    return [_day(d) for d in days]


def told_days(timestamps: Sequence[str]) -> tuple[date, ...]:
    """The distinct days among memory ``timestamps`` (ISO; others ignored), in order: when the conversation was
    told."""
    out = set()
    for ts in timestamps:
        try:
            out.add(datetime.fromisoformat(ts).date())
        except (TypeError, ValueError):
            continue
    return tuple(sorted(out))


def in_time(prov: Provenance, fact: Fact, value: str, question: str, days: Sequence[date] = ()) -> bool:
    """For a date: whether the update of ``fact`` (of provenance ``prov``) to ``value``
    keeps the event on the side of the time it was first told that its old date is — or, where that cannot say,
    that ``question``'s tense puts it on (:func:`same_side`) — and between the same two telling days ``days``
    (:func:`in_gap`). True for any other value. The importer's value pool and the update operator hold a date to
    this one rule."""
    if fact.value_type not in DATED:
        return True
    told = prov.first_told(fact.entity, fact.attribute)
    return same_side(fact.value, value, told, question) and in_gap(fact.value, value, days, told, question)


_SEASONS = {"spring": (3, 4, 5), "summer": (6, 7, 8), "autumn": (9, 10, 11), "fall": (9, 10, 11),
            "winter": (12, 1, 2)}
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")
#: a season, and "fall" only as one ("in the fall", not "did she fall")
_SEASON = re.compile(r"(?i)\b(spring|summer|autumn|winter)\b|\b(?:the|this|last|that|in|during)\s+(fall)\b")
#: a month written with its capital, "May" not as the question's first word ("May I ask …")
_MONTH = re.compile(r"(?<!^)\b(" + "|".join(_MONTH_NAMES) + r")\b")
_YEAR = re.compile(r"\b((?:19|20)\d\d)\b")


def in_asked_period(value: str, question: str) -> bool:
    """Whether the date ``value`` lies in every period ``question`` names — a season, a month, a year: an update of
    "When did she go to a pride parade during the summer?" must write a summer date (a May one would make the
    question itself point at the old memory). True for a value that is no date and a question that names none."""
    d = date_of(value)
    if d is None:
        return True
    q = question.strip()
    years = {int(y) for y in _YEAR.findall(q)}
    if re.fullmatch(r"\s*\d{4}\s*", value):  # a year holds every season and month: only a year can bound it
        return not years or d.year in years
    seasons = {(m.group(1) or m.group(2)).lower() for m in _SEASON.finditer(q)}
    if seasons and d.month not in {n for s in seasons for n in _SEASONS[s]}:
        return False
    months = {_MONTH_NAMES.index(m.group(1)) + 1 for m in _MONTH.finditer(q)}
    if months and d.month not in months:
        return False
    return not years or d.year in years


def _day(d: date) -> str:
    """``d`` written as LoCoMo and the shipped suite write a day ("2 June 2023")."""
    return f"{d.day} {d.strftime('%B %Y')}"


def _shift_dates(v: str) -> list[str]:
    from datetime import datetime, timedelta

    for fmt in _DATE_FORMATS:
        try:
            d = datetime.strptime(v, fmt)
        except ValueError:
            continue
        # later first; then earlier (an importer keeps those not after its conversation's end)
        days = (31, 62, 400, -31, -62, -93, -124) if "%d" not in fmt else (3, 10, 45, -3, -10, -17)
        out = []
        for n in days:
            s = (d + timedelta(days=n)).strftime(fmt)
            out.append(s.lstrip("0") if fmt.startswith("%d") else s)
        return out
    return []


_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
#: the weekdays as speakers shorten them ("last Fri", "last Tues.")
_WEEKDAY_SHORT = r"(?:mon|tues?|wed|thur?s?|fri|sat|sun)(?!\w)"
#: a relative time a speaker tells an event by ("yesterday", "last Friday", "two weeks ago"): what a dated answer
#: ("7 May 2023") is computed from, and what an update of that date rewrites
RELATIVE_TIME = re.compile(
    rf"(?i)(?<![\w-])(?:yesterday|today|tonight|this morning|last night|the other day|"
    rf"(?:last|this|next|this past) (?:week|weekend|month|year|summer|winter|spring|fall|autumn|{_WEEKDAYS}|"
    rf"{_WEEKDAY_SHORT})|"
    rf"(?:a|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|few) "
    rf"(?:days?|weeks?|weekends?|months?|years?) ago)(?![\w-])")


def _weekdays_in(text: str) -> set[int]:
    """The weekdays (0 Monday) the relative times in ``text`` name ("last Saturday", "this past Fri")."""
    names = _WEEKDAYS.split("|")
    out = set()
    for m in RELATIVE_TIME.finditer(text):
        word = m.group(0).lower().split()[-1].rstrip(".")
        out.update(k for k, n in enumerate(names) if n.startswith(word[:3]))
    return out


def weekday_conflict(answer: str, texts: Sequence[str]) -> bool:
    """Whether a date ``answer`` told by a weekday ("The sunday before 25 May 2023") names another weekday than
    every one its evidence ``texts`` tell it by ("last Saturday"): the benchmark's answer contradicts its own
    evidence (hand audit, LoCoMo: a charity race run "last Saturday", answered as the Sunday before), and no
    failure may rest on it."""
    m = RELATIVE_DATE.fullmatch(answer.strip())
    if m is None:
        return False
    named = {k for k, n in enumerate(_WEEKDAYS.split("|")) if n in answer.lower()}
    told = set().union(*(_weekdays_in(t) for t in texts)) if texts else set()
    return bool(named and told) and not named & told


#: words a relative time cannot follow once it is written "on <day>" or "in <month>": a preposition or an adverb
#: that governs it ("since last week", "by next month", "earlier this year")
_GOVERNED = re.compile(r"(?i)\b(?:since|until|till|from|by|for|of|over|during|before|after|through|throughout|"
                       r"within|earlier|later|early|late|as of|up to|all|the|whole|entire)\s+$")
#: a relative time used as a noun: a possessive ("last year's trip"), or a sentence's subject ("Last week was wild";
#: not "that roadtrip this past weekend was insane", where the trip is)
_POSSESSIVE = re.compile(r"(?i)['’]s\b")
_SUBJECT = re.compile(r"(?i)\s*(?:was|were|is|has|had|will|went|flew|felt|seemed)\b")
_STARTS = re.compile(r"(?:^|[.!?:;]\s*|\b(?:and|but|so)\s+)$")


def relative_period(phrase: str, told: date) -> tuple[date, date] | None:
    """The days a relative time (one :data:`RELATIVE_TIME` match) told on the day ``told`` may mean, read
    generously ("last week" is any of the 13 days before, "two months ago" the month before or after as well; "the
    other day" the past fortnight, a season the year around): what a dated answer computed from it must overlap.
    None for a phrase it does not know."""
    low = " ".join(phrase.lower().split())
    one = timedelta(days=1)
    if low in ("today", "tonight", "this morning"):
        return told, told
    if low in ("yesterday", "last night"):
        return told - one, told
    if low == "the other day":
        return told - timedelta(days=14), told - one
    m = re.fullmatch(r"(last|this|next|this past) (\w+)\.?", low)
    if m is not None:
        rel, unit = m.group(1), m.group(2)
        back = rel in ("last", "this past")
        if unit == "month":
            first = told.replace(day=1)
            if back:
                first = (first - one).replace(day=1)
            elif rel == "next":
                first = (first + timedelta(days=32)).replace(day=1)
            return first, (first + timedelta(days=32)).replace(day=1) - one
        if unit == "year":
            year = told.year - back + (rel == "next")
            return date(year, 1, 1), date(year, 12, 31)
        if unit in ("summer", "winter", "spring", "fall", "autumn"):
            return (told - timedelta(days=400), told) if back else \
                (told - timedelta(days=183), told + timedelta(days=400))
        # a week, a weekend, a weekday
        if back:
            return told - timedelta(days=13), told - one
        if rel == "next":
            return told + one, told + timedelta(days=13)
        return told - timedelta(days=6), told + timedelta(days=6)
    m = re.fullmatch(r"(a|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|few) (\w+?)s? ago", low)
    if m is None:
        return None
    n = {"a": 1, "a few": 3, "few": 3, "a couple of": 2}.get(m.group(1)) or _NUM_WORDS.get(m.group(1), 1)
    span = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}.get(m.group(2), 30)
    few = m.group(1) in ("a few", "few")
    return (told - timedelta(days=span * (n + 1 + 2 * few)), told - timedelta(days=max(1, span * (n - 1))))


def time_of(text: str, old: str | None = None, told_at: str | None = None) -> re.Match[str] | None:
    """The relative time of ``text`` that tells the date ``old``, told at ``told_at`` (ISO): its one relative time,
    or among several the one alone that can mean ``old`` (:func:`relative_period`: "my school event last week …
    since I started transitioning three years ago", told on 9 June, for "The week before 9 June 2023"). None where
    none can, or more than one can (which one the date is cannot be told): a benchmark's date computed from another
    time of the same turn is not one an update may rewrite (hand audit: "I'm expanding … and hosting a competition
    next month", told on 3 April, answered "April 2023" for the expansion — rewriting "next month" would move the
    competition). Without ``old`` or a telling time, only a text with one relative time."""
    found = list(RELATIVE_TIME.finditer(text))
    try:
        told = datetime.fromisoformat(told_at).date() if told_at else None
    except ValueError:
        told = None
    period = _period(old) if old else None
    if told is None or period is None:
        return found[0] if len(found) == 1 else None
    fits = [m for m in found if _can_mean(relative_period(m.group(0), told), period)]
    return fits[0] if len(fits) == 1 else None


def _can_mean(meant: tuple[date, date] | None, period: tuple[date, date]) -> bool:
    return meant is None or (meant[0] <= period[1] and period[0] <= meant[1])  # a vague phrase: it may


def rewrite_time(text: str, value: str, old: str | None = None, told_at: str | None = None) -> str | None:
    """``text`` with the relative time that tells ``old`` (:func:`time_of`; "yesterday") replaced by the dated
    ``value`` ("on 10 May 2023", "in May 2023", "in 2023"), a capital kept at the start of a sentence; None when
    no one relative time tells it, ``value`` is no date or year, or the date would not read as a sentence there
    ("Last week was wild" is no "On 30 June 2023 was wild")."""
    kind = value_type_of(value)
    if kind not in DATED:
        return None
    m = time_of(text, old, told_at)
    if m is None:
        return None
    if _GOVERNED.search(text[:m.start()]) or _POSSESSIVE.match(text[m.end():]) or \
            (_SUBJECT.match(text[m.end():]) and _STARTS.search(text[:m.start()])):
        return None  # "On 30 June was wild", "since on 3 May", "in May's meeting": no sentence
    day = re.match(r"\d{1,2}\s", value) or re.search(r"[A-Za-z]+\.?\s+\d{1,2},", value) or \
        re.fullmatch(r"\d{4}-\d\d-\d\d", value)
    phrase = value[:1].lower() + value[1:] if kind == "relative_date" else f"{'on' if day else 'in'} {value}"
    if m.group(0)[0].isupper():
        phrase = phrase[0].upper() + phrase[1:]
    return text[:m.start()] + phrase + text[m.end():]
