"""Query wording: templates that realise :class:`QueryFields` as text, and lexicon-based field extraction.

Every attribute has at least three genuinely different templates, each in three syntactic forms
(``question``, ``imperative``, ``indirect``) and for each temporal scope. ``AttributeSpec.templates`` holds
the present-tense (``current``) format strings; ``AttributeSpec.scoped`` holds, per template, the strings
for every scope (past tense for ``previous``, perfect tense for ``any``). Format strings use ``{entity}``
and ``{scope}``; :func:`realize` fills ``{scope}`` with an explicit marker word of the scope (``now``,
``before``, ``at any point`` …) — a template may instead carry the marker itself ("use to").

:func:`extract` and :func:`fields_of` invert the wording with a small lexicon (attribute phrases and scope
markers), so that a realised query always round-trips: ``fields_of(realize(f, ...)) == f``.

Scope ``any`` (unscoped; its reference is the active value, like ``current``) is rendered with explicit
markers ("at any point", "at some point"), so that it round-trips under the default ``default_scope``
of ``"current"``; an unmarked query reads as ``default_scope``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ufuzz.model import SCOPES, QueryFields

FORMS = ("question", "imperative", "indirect")

#: Non-restrictive context sentences; none mentions an entity, attribute, value, time or condition.
CONTEXTS: tuple[str, ...] = (
    "I'm sorting out my notes.",
    "Quick question.",
    "Sorry for asking again.",
    "I'm trying to get my facts straight.",
    "Bear with me for a second.",
    "I want to get this right.",
    "Hope you don't mind me asking.",
    "My memory is a bit hazy.",
    "This came up in conversation.",
    "I'm double-checking something.",
    "Just a small thing.",
    "I'm writing a card and want to be accurate.",
)

#: Explicit scope markers (regexes, matched case-insensitively as whole words).
SCOPE_WORDS: dict[str, tuple[str, ...]] = {
    "current": (r"\bnow\b", r"\bcurrently\b", r"\bthese days\b", r"\bat the moment\b", r"\bat present\b",
                r"\bnowadays\b"),
    "previous": (r"\bbefore\b", r"\bpreviously\b", r"\bused to\b", r"\buse to\b", r"\bin the past\b",
                 r"\bformerly\b", r"\bearlier\b"),
    "any": (r"\bat any point\b", r"\bat some point\b", r"\bat any time\b", r"\bever\b"),
}

#: What ``{scope}`` renders as, per scope; template ``i`` of an attribute uses phrase ``i % len``.
SCOPE_PHRASES: dict[str, tuple[str, ...]] = {
    "current": (" now", " these days", " currently"),
    "previous": (" before", " previously", " in the past"),
    "any": (" at any point", " at some point"),
}

_IMPERATIVE = ("Tell me", "Remind me", "Let me know")
_INDIRECT = ("I'd like to know", "I was wondering", "I'm curious")


@dataclass(frozen=True)
class AttributeSpec:
    name: str
    entity_types: tuple[str, ...]
    value_type: str
    phrases: tuple[str, ...]  # regexes that signal this attribute in a query
    templates: dict[str, dict[str, str]] = field(hash=False)  # template_id -> form -> format (current scope)
    # template_id -> scope -> form -> format string (additive: the per-scope wording realize() uses)
    scoped: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict, hash=False)
    description: str = ""


# attribute -> (entity types, value type, phrases, description, templates)
# each template: short id -> scope -> (direct question, embedded clause)
_Pair = tuple[str, str]
_SPEC: dict[str, tuple[tuple[str, ...], str, tuple[str, ...], str, dict[str, dict[str, _Pair]]]] = {
    "city": (("person",), "city", (r"\blive[sd]?\b", r"\bbased in\b", r"\bcity\b", r"\btown\b", r"\bhome\b"),
             "the city the person lives in", {
        "live": {"current": ("Where does {entity} live{scope}?", "where {entity} lives{scope}"),
                 "previous": ("Where did {entity} use to live?", "where {entity} used to live"),
                 "any": ("Where has {entity} lived{scope}?", "where {entity} has lived{scope}")},
        "based": {"current": ("What city is {entity} based in{scope}?", "what city {entity} is based in{scope}"),
                  "previous": ("What city was {entity} based in{scope}?", "what city {entity} was based in{scope}"),
                  "any": ("What city has {entity} been based in{scope}?",
                          "what city {entity} has been based in{scope}")},
        "home": {"current": ("Which town is {entity}'s home{scope}?", "which town is {entity}'s home{scope}"),
                 "previous": ("Which town was {entity}'s home{scope}?", "which town was {entity}'s home{scope}"),
                 "any": ("Which town has been {entity}'s home{scope}?",
                         "which town has been {entity}'s home{scope}")},
    }),
    "employer": (("person",), "company", (r"\bwork(?:s|ed)? (?:for|at)\b", r"\bemploy(?:er|s|ed)\b",
                                          r"\bcompany\b"),
                 "the organisation the person works for", {
        "work_for": {"current": ("Who does {entity} work for{scope}?", "who {entity} works for{scope}"),
                     "previous": ("Who did {entity} work for{scope}?", "who {entity} worked for{scope}"),
                     "any": ("Who has {entity} worked for{scope}?", "who {entity} has worked for{scope}")},
        "employer": {"current": ("Who is {entity}'s employer{scope}?", "who {entity}'s employer is{scope}"),
                     "previous": ("Who was {entity}'s employer{scope}?", "who {entity}'s employer was{scope}"),
                     "any": ("Who has been {entity}'s employer{scope}?", "who has been {entity}'s employer{scope}")},
        "company": {"current": ("Which company employs {entity}{scope}?", "which company employs {entity}{scope}"),
                    "previous": ("Which company employed {entity}{scope}?",
                                 "which company employed {entity}{scope}"),
                    "any": ("Which company has employed {entity}{scope}?",
                            "which company has employed {entity}{scope}")},
    }),
    "job": (("person",), "occupation", (r"\bjobs?\b", r"\bfor a living\b", r"\bprofession\b",
                                        r"\boccupation\b"),
            "the person's occupation", {
        "job": {"current": ("What is {entity}'s job{scope}?", "what {entity}'s job is{scope}"),
                "previous": ("What was {entity}'s job{scope}?", "what {entity}'s job was{scope}"),
                "any": ("What job has {entity} had{scope}?", "what job {entity} has had{scope}")},
        "living": {"current": ("What does {entity} do for a living{scope}?", "what {entity} does for a living{scope}"),
                   "previous": ("What did {entity} do for a living{scope}?", "what {entity} did for a living{scope}"),
                   "any": ("What has {entity} done for a living{scope}?",
                           "what {entity} has done for a living{scope}")},
        "profession": {"current": ("Which profession is {entity} in{scope}?", "which profession {entity} is in{scope}"),
                       "previous": ("Which profession was {entity} in{scope}?",
                                    "which profession {entity} was in{scope}"),
                       "any": ("Which profession has {entity} been in{scope}?",
                               "which profession {entity} has been in{scope}")},
    }),
    "favourite_food": (("person", "pet"), "food", (r"\bfavou?rite food\b", r"\bdish\b", r"\bto eat\b"),
                       "the food the entity likes best", {
        "fav": {"current": ("What is {entity}'s favourite food{scope}?", "what {entity}'s favourite food is{scope}"),
                "previous": ("What was {entity}'s favourite food{scope}?",
                             "what {entity}'s favourite food was{scope}"),
                "any": ("What has {entity}'s favourite food been{scope}?",
                        "what {entity}'s favourite food has been{scope}")},
        "dish": {"current": ("Which dish does {entity} love most{scope}?", "which dish {entity} loves most{scope}"),
                 "previous": ("Which dish did {entity} love most{scope}?", "which dish {entity} loved most{scope}"),
                 "any": ("Which dish has {entity} loved most{scope}?", "which dish {entity} has loved most{scope}")},
        "eat": {"current": ("What does {entity} like to eat best{scope}?", "what {entity} likes to eat best{scope}"),
                "previous": ("What did {entity} like to eat best{scope}?", "what {entity} liked to eat best{scope}"),
                "any": ("What has {entity} liked to eat best{scope}?",
                        "what {entity} has liked to eat best{scope}")},
    }),
    "gym_day": (("person",), "weekday", (r"\bgym\b", r"\btrain(?:s|ed)?\b", r"\bwork(?:s|ed)? out\b"),
                "when in the week the person goes to the gym", {
        "gym": {"current": ("Which day does {entity} go to the gym{scope}?", "which day {entity} goes to the gym{scope}"),
                "previous": ("Which day did {entity} use to go to the gym?", "which day {entity} used to go to the gym"),
                "any": ("Which day has {entity} gone to the gym{scope}?",
                        "which day {entity} has gone to the gym{scope}")},
        "gym_day": {"current": ("What is {entity}'s gym day{scope}?", "what {entity}'s gym day is{scope}"),
                    "previous": ("What was {entity}'s gym day{scope}?", "what {entity}'s gym day was{scope}"),
                    "any": ("What has {entity}'s gym day been{scope}?", "what {entity}'s gym day has been{scope}")},
        "train": {"current": ("On what weekday does {entity} train{scope}?", "on what weekday {entity} trains{scope}"),
                  "previous": ("On what weekday did {entity} train{scope}?",
                               "on what weekday {entity} trained{scope}"),
                  "any": ("On what weekday has {entity} trained{scope}?",
                          "on what weekday {entity} has trained{scope}")},
    }),
    "hobby": (("person",), "hobby", (r"\bhobby\b", r"\bhobbies\b", r"\bfree time\b", r"\bpastimes?\b"),
              "what the person does for fun", {
        "hobby": {"current": ("What is {entity}'s hobby{scope}?", "what {entity}'s hobby is{scope}"),
                  "previous": ("What was {entity}'s hobby{scope}?", "what {entity}'s hobby was{scope}"),
                  "any": ("What has {entity}'s hobby been{scope}?", "what {entity}'s hobby has been{scope}")},
        "free_time": {"current": ("What does {entity} do in their free time{scope}?",
                                  "what {entity} does in their free time{scope}"),
                      "previous": ("What did {entity} do in their free time{scope}?",
                                   "what {entity} did in their free time{scope}"),
                      "any": ("What has {entity} done in their free time{scope}?",
                              "what {entity} has done in their free time{scope}")},
        "pastime": {"current": ("Which pastime is {entity} into{scope}?", "which pastime {entity} is into{scope}"),
                    "previous": ("Which pastime was {entity} into{scope}?", "which pastime {entity} was into{scope}"),
                    "any": ("Which pastime has {entity} been into{scope}?",
                            "which pastime {entity} has been into{scope}")},
    }),
    "partner": (("person",), "person_name", (r"\bpartner\b", r"\bdat(?:ing|ed)\b", r"\brelationship\b"),
                "the person's romantic partner", {
        "partner": {"current": ("Who is {entity}'s partner{scope}?", "who {entity}'s partner is{scope}"),
                    "previous": ("Who was {entity}'s partner{scope}?", "who {entity}'s partner was{scope}"),
                    "any": ("Who has been {entity}'s partner{scope}?", "who has been {entity}'s partner{scope}")},
        "dating": {"current": ("Who is {entity} dating{scope}?", "who {entity} is dating{scope}"),
                   "previous": ("Who was {entity} dating{scope}?", "who {entity} was dating{scope}"),
                   "any": ("Who has {entity} dated{scope}?", "who {entity} has dated{scope}")},
        "relationship": {"current": ("Who is {entity} in a relationship with{scope}?",
                                     "who {entity} is in a relationship with{scope}"),
                         "previous": ("Who was {entity} in a relationship with{scope}?",
                                      "who {entity} was in a relationship with{scope}"),
                         "any": ("Who has {entity} been in a relationship with{scope}?",
                                 "who {entity} has been in a relationship with{scope}")},
    }),
    "pet_name": (("person",), "pet_name", (r"\bpets?\b",), "the name of the person's pet", {
        "name_of": {"current": ("What is the name of {entity}'s pet{scope}?",
                                "what the name of {entity}'s pet is{scope}"),
                    "previous": ("What was the name of {entity}'s pet{scope}?",
                                 "what the name of {entity}'s pet was{scope}"),
                    "any": ("What has {entity}'s pet been named{scope}?", "what {entity}'s pet has been named{scope}")},
        "called": {"current": ("What is {entity}'s pet called{scope}?", "what {entity}'s pet is called{scope}"),
                   "previous": ("What was {entity}'s pet called{scope}?", "what {entity}'s pet was called{scope}"),
                   "any": ("What has {entity}'s pet been called{scope}?",
                           "what {entity}'s pet has been called{scope}")},
        "keep": {"current": ("Which pet does {entity} keep{scope}?", "which pet {entity} keeps{scope}"),
                 "previous": ("Which pet did {entity} use to keep?", "which pet {entity} used to keep"),
                 "any": ("Which pet has {entity} kept{scope}?", "which pet {entity} has kept{scope}")},
    }),
    "species": (("pet",), "species", (r"\bkind of animal\b", r"\bspecies\b", r"\bsort of creature\b"),
                "what kind of animal the pet is", {
        "kind": {"current": ("What kind of animal is {entity}{scope}?", "what kind of animal {entity} is{scope}"),
                 "previous": ("What kind of animal was {entity}{scope}?", "what kind of animal {entity} was{scope}"),
                 "any": ("What kind of animal has {entity} been{scope}?",
                         "what kind of animal {entity} has been{scope}")},
        "species": {"current": ("What species is {entity}{scope}?", "what species {entity} is{scope}"),
                    "previous": ("What species was {entity}{scope}?", "what species {entity} was{scope}"),
                    "any": ("What species has {entity} been{scope}?", "what species {entity} has been{scope}")},
        "creature": {"current": ("What sort of creature is {entity}{scope}?",
                                 "what sort of creature {entity} is{scope}"),
                     "previous": ("What sort of creature was {entity}{scope}?",
                                  "what sort of creature {entity} was{scope}"),
                     "any": ("What sort of creature has {entity} been{scope}?",
                             "what sort of creature {entity} has been{scope}")},
    }),
    "vet": (("pet",), "person_name", (r"\bvet\b", r"\bveterinarian\b", r"\bcheck-ups?\b"),
            "the pet's veterinarian", {
        "vet": {"current": ("Who is {entity}'s vet{scope}?", "who {entity}'s vet is{scope}"),
                "previous": ("Who was {entity}'s vet{scope}?", "who {entity}'s vet was{scope}"),
                "any": ("Who has been {entity}'s vet{scope}?", "who has been {entity}'s vet{scope}")},
        "treats": {"current": ("Which veterinarian treats {entity}{scope}?", "which veterinarian treats {entity}{scope}"),
                   "previous": ("Which veterinarian treated {entity}{scope}?",
                                "which veterinarian treated {entity}{scope}"),
                   "any": ("Which veterinarian has treated {entity}{scope}?",
                           "which veterinarian has treated {entity}{scope}")},
        "checkups": {"current": ("Who does {entity} see for check-ups{scope}?", "who {entity} sees for check-ups{scope}"),
                     "previous": ("Who did {entity} see for check-ups{scope}?", "who {entity} saw for check-ups{scope}"),
                     "any": ("Who has {entity} seen for check-ups{scope}?",
                             "who {entity} has seen for check-ups{scope}")},
    }),
    "feeding_time": (("pet",), "clock_time", (r"\bfed\b", r"\bfeeding\b", r"\bmealtime\b"),
                     "the clock time the pet is fed", {
        "fed": {"current": ("When does {entity} get fed{scope}?", "when {entity} gets fed{scope}"),
                "previous": ("When did {entity} use to get fed?", "when {entity} used to get fed"),
                "any": ("When has {entity} been fed{scope}?", "when {entity} has been fed{scope}")},
        "feeding": {"current": ("What is {entity}'s feeding time{scope}?", "what {entity}'s feeding time is{scope}"),
                    "previous": ("What was {entity}'s feeding time{scope}?",
                                 "what {entity}'s feeding time was{scope}"),
                    "any": ("What has {entity}'s feeding time been{scope}?",
                            "what {entity}'s feeding time has been{scope}")},
        "mealtime": {"current": ("At what hour is {entity}'s mealtime{scope}?", "at what hour {entity}'s mealtime is{scope}"),
                     "previous": ("At what hour was {entity}'s mealtime{scope}?",
                                  "at what hour {entity}'s mealtime was{scope}"),
                     "any": ("At what hour has {entity}'s mealtime been{scope}?",
                             "at what hour {entity}'s mealtime has been{scope}")},
    }),
    "toy": (("pet",), "toy", (r"\btoys?\b", r"\bplaythings?\b"), "the pet's favourite toy", {
        "fav_toy": {"current": ("What is {entity}'s favourite toy{scope}?", "what {entity}'s favourite toy is{scope}"),
                    "previous": ("What was {entity}'s favourite toy{scope}?",
                                 "what {entity}'s favourite toy was{scope}"),
                    "any": ("What has {entity}'s favourite toy been{scope}?",
                            "what {entity}'s favourite toy has been{scope}")},
        "play": {"current": ("Which toy does {entity} play with most{scope}?", "which toy {entity} plays with most{scope}"),
                 "previous": ("Which toy did {entity} play with most{scope}?",
                              "which toy {entity} played with most{scope}"),
                 "any": ("Which toy has {entity} played with most{scope}?",
                         "which toy {entity} has played with most{scope}")},
        "plaything": {"current": ("What plaything is {entity} obsessed with{scope}?",
                                  "what plaything {entity} is obsessed with{scope}"),
                      "previous": ("What plaything was {entity} obsessed with{scope}?",
                                   "what plaything {entity} was obsessed with{scope}"),
                      "any": ("What plaything has {entity} been obsessed with{scope}?",
                              "what plaything {entity} has been obsessed with{scope}")},
    }),
}


def _build() -> dict[str, AttributeSpec]:
    out: dict[str, AttributeSpec] = {}
    for name, (etypes, vtype, phrases, desc, tmpls) in _SPEC.items():
        scoped: dict[str, dict[str, dict[str, str]]] = {}
        for i, (short, by_scope) in enumerate(tmpls.items()):
            tid = f"{name}.{short}"
            scoped[tid] = {}
            for scope in SCOPES:
                direct, embedded = by_scope[scope]
                scoped[tid][scope] = {
                    "question": direct,
                    "imperative": f"{_IMPERATIVE[i % len(_IMPERATIVE)]} {embedded}.",
                    "indirect": f"{_INDIRECT[i % len(_INDIRECT)]} {embedded}.",
                }
        templates = {tid: dict(by_scope["current"]) for tid, by_scope in scoped.items()}
        out[name] = AttributeSpec(name=name, entity_types=etypes, value_type=vtype, phrases=phrases,
                                  templates=templates, scoped=scoped, description=desc)
    return out


ATTRIBUTES: dict[str, AttributeSpec] = _build()


def attributes_for(entity_type: str) -> list[str]:
    """Attributes that apply to entities of ``entity_type``, in definition order."""
    return [a for a, s in ATTRIBUTES.items() if entity_type in s.entity_types]


def template_ids(attribute: str) -> list[str]:
    return list(ATTRIBUTES[attribute].templates)


def _scope_phrase(spec: AttributeSpec, template: str, scope: str) -> str:
    phrases = SCOPE_PHRASES[scope]
    return phrases[list(spec.scoped).index(template) % len(phrases)]


def template_text(attribute: str, template: str, form: str, scope: str = "current") -> str:
    """The raw format string (with ``{entity}``/``{scope}``) realize() uses; KeyError when unknown."""
    return ATTRIBUTES[attribute].scoped[template][scope][form]


def realize(fields: QueryFields, *, template: str, form: str, context: str = "",
            entity_type: str | None = None) -> str:
    """Deterministic query text for ``fields`` in ``template``/``form``, optionally after ``context``.

    Raises KeyError for an unknown attribute, template, form or scope, and ValueError when ``entity_type``
    is given and the attribute does not apply to it.
    """
    spec = ATTRIBUTES[fields.attribute]
    if entity_type is not None and entity_type not in spec.entity_types:
        raise ValueError(f"attribute {fields.attribute!r} does not apply to entity type {entity_type!r} "
                         f"(applies to {list(spec.entity_types)})")
    if template not in spec.scoped:
        raise KeyError(f"unknown template {template!r} for attribute {fields.attribute!r}; "
                       f"known: {list(spec.scoped)}")
    if form not in FORMS:
        raise KeyError(f"unknown form {form!r}; known: {list(FORMS)}")
    if fields.scope not in SCOPES:
        raise KeyError(f"unknown scope {fields.scope!r}; known: {list(SCOPES)}")
    fmt = spec.scoped[template][fields.scope][form]
    core = fmt.format(entity=fields.entity, scope=_scope_phrase(spec, template, fields.scope))
    context = context.strip()
    return f"{context} {core}" if context else core


@dataclass(frozen=True)
class Mentions:
    entities: frozenset[str]
    attributes: frozenset[str]
    scopes: frozenset[str]
    values: frozenset[str]


def _alternation(terms: tuple[str, ...], ignore_case: bool) -> re.Pattern[str]:
    alts = "|".join(re.escape(t) for t in terms)  # longest first, so the longest term wins at a position
    return re.compile(rf"(?<!\w)(?:{alts})(?!\w)", re.IGNORECASE if ignore_case else 0)


def _any_of(patterns: Iterable[str]) -> re.Pattern[str]:
    """One pattern that matches where any of ``patterns`` does (an alternation of non-capturing groups): one
    search per attribute instead of one per phrase (validators extract fields thousands of times a campaign)."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


_ATTR_RES = {a: _any_of(s.phrases) for a, s in ATTRIBUTES.items()}
_SCOPE_RES = {s: _any_of(ws) for s, ws in SCOPE_WORDS.items()}


@lru_cache(maxsize=512)
def _prepared(terms: tuple[str, ...], ignore_case: bool) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """The pattern of ``terms`` (longest first) and, ignoring case, each casefolded term's spelling; None when
    there is none. Cached: a validator asks with the same terms for every mutant of a checkpoint."""
    uniq = tuple(sorted({t for t in terms if t}, key=lambda t: (-len(t), t)))
    if not uniq:
        return None
    canon = {t.casefold(): t for t in reversed(uniq)} if ignore_case else {}
    return _alternation(uniq, ignore_case), canon


def _mask(text: str, terms: Iterable[str], ignore_case: bool) -> tuple[str, set[str]]:
    """Find whole-word ``terms`` (longest first, non-overlapping) and blank them out of ``text``."""
    prepared = _prepared(terms if isinstance(terms, tuple) else tuple(terms), ignore_case)
    if prepared is None:
        return text, set()
    pattern, canon = prepared
    found: set[str] = set()

    def blank(m: re.Match[str]) -> str:
        found.add(canon.get(m.group(0).casefold(), m.group(0)) if ignore_case else m.group(0))
        return " " * len(m.group(0))

    return pattern.sub(blank, text), found


def extract(text: str, known_entities: Iterable[str], known_values: Iterable[str] = ()) -> Mentions:
    """Lexicon-based mentions in ``text``.

    Entities: known names appearing as whole words (case-sensitive; "Lena's" mentions Lena). Values: known
    values appearing as whole words (case-insensitive, longest match wins: "Velmora Heights" does not also
    mention "Velmora"). Attributes and scopes are matched on the text with entity and value mentions blanked
    out, so a name can never read as an attribute phrase. Scopes are only explicit markers.
    """
    masked, entities = _mask(text, known_entities, ignore_case=False)
    masked, values = _mask(masked, known_values, ignore_case=True)
    attributes = {a for a, pat in _ATTR_RES.items() if pat.search(masked)}
    scopes = {s for s, pat in _SCOPE_RES.items() if pat.search(masked)}
    return Mentions(frozenset(entities), frozenset(attributes), frozenset(scopes), frozenset(values))


def fields_of(text: str, known_entities: Iterable[str], default_scope: str = "current") -> QueryFields | None:
    """The fields a query text expresses, or None when entity or attribute is absent or ambiguous.

    The scope comes from explicit markers (``default_scope`` when there is none; None when markers of two
    scopes appear). ``answerable`` is always True: answerability belongs to the memory, not the wording.
    """
    if default_scope not in SCOPES:
        raise ValueError(f"default_scope must be one of {SCOPES}, got {default_scope!r}")
    m = extract(text, known_entities)
    if len(m.entities) != 1 or len(m.attributes) != 1 or len(m.scopes) > 1:
        return None
    scope = next(iter(m.scopes)) if m.scopes else default_scope
    return QueryFields(entity=next(iter(m.entities)), attribute=next(iter(m.attributes)), scope=scope,
                       answerable=True)


_CONTEXTS_LONGEST = tuple(sorted(CONTEXTS, key=len, reverse=True))


def split_context(text: str) -> tuple[str, str]:
    """``(context, core)``: the leading context sentence from :data:`CONTEXTS` (or ``""``) and the rest."""
    stripped = text.strip()
    for c in _CONTEXTS_LONGEST:
        if stripped.startswith(c + " ") and stripped[len(c):].strip():
            return c, stripped[len(c):].strip()
    return "", stripped


# -- free text (imported benchmark questions) -----------------------------------------------------------------
_AUXES = r"(?:did|does|do|is|was|were|are|has|have|had|will|would|can|could|should)"

#: Meaning-preserving rewrites of a free-text question's opening, per question type (when / where / who / why
#: / how many / how much / how often / how long / how (manner) / what time / what kind / which / what / what is
#: / would). Each is a
#: ``(name, pattern, replacement)`` applied once at the start of the question; every rewrite only swaps
#: function words of the wh-phrase (or expands a contraction), so content words, names, values and
#: conditions stay exactly as they were. Most have their inverse, so a re-worded question can be re-worded
#: back. Both the paraphrase operator and its validator use this table: a free-text paraphrase is accepted
#: only when it is one of these rewrites of its parent (as a templated one must be a template's wording).
FREE_REWRITES: tuple[tuple[str, str, str], ...] = (
    ("when", rf"^When (?={_AUXES}\b)", "At what point in time "),
    ("when<", r"^At what point in time ", "When "),
    ("where+prep", rf"^Where ({_AUXES}\b.*) (from|to|at|in)\?$", r"What place \1 \2?"),
    ("where+prep<", rf"^What place ({_AUXES}\b.*) (from|to|at|in)\?$", r"Where \1 \2?"),
    ("where", rf"^Where (?={_AUXES}\b)(?!.*\b(?:from|to|at|in)\?$)", "In what place "),
    ("where<", r"^In what place ", "Where "),
    ("who", r"^Who (?!are\b|were\b|have\b|do\b)", "Which person "),
    ("who<", r"^Which person ", "Who "),
    ("why", r"^Why ", "For what reason "),
    ("why<", r"^For what reason ", "Why "),
    ("how many", r"^How many ", "What number of "),
    ("how many<", r"^What number of ", "How many "),
    ("how often", r"^How often ", "How frequently "),
    ("how often<", r"^How frequently ", "How often "),
    ("how long", rf"^How long (?={_AUXES}\b)(?!.*\bfor\?$)", "For how long "),
    ("how long<", r"^For how long ", "How long "),
    ("how", r"^How (?=(?:did|does|do)\b)", "In what way "),
    ("how<", r"^In what way ", "How "),
    ("kind", r"^(What|Which) kind of ", r"\1 type of "),
    ("type", r"^(What|Which) type of ", r"\1 kind of "),
    ("sort", r"^(What|Which) sort of ", r"\1 kind of "),
    ("which", r"^Which (?!person\b|one\b|kind\b|type\b|sort\b)(?=[a-z])", "What "),
    ("what time", rf"^What time (?={_AUXES}\b)", "At what time "),
    ("what time<", r"^At what time ", "What time "),
    ("how much", rf"^How much (?!more\b|less\b|longer\b|{_AUXES}\b)(?=[a-z]+ {_AUXES}\b)", "What amount of "),
    ("how much<", r"^What amount of ", "How much "),
    ("what", rf"^What (?=(?!is\b){_AUXES}\b|[a-z]+ed\b|made\b|happened\b)", "What exactly "),
    ("what np", rf"^What (?!exactly\b|{_AUXES}\b)(?=(?:[A-Za-z][\w+'/-]* ){{1,3}}{_AUXES}\b)", "Which "),
    ("how old", rf"^How old (?={_AUXES}\b)", "At what age "),
    ("how old<", r"^At what age ", "How old "),
    ("what<", r"^What exactly ", "What "),
    ("what is", r"^What is ", "What's "),
    ("what's", r"^What's ", "What is "),
    ("would", r"^Would (?!you\b)(\S+) ", r"Do you think \1 would "),
    ("would<", r"^Do you think (\S+) would ", r"Would \1 "),
)
_FREE_RES = tuple((name, re.compile(p), r) for name, p, r in FREE_REWRITES)


def free_rewrites(question: str) -> list[str]:
    """Every distinct rewrite of ``question`` (a free-text question starting with its wh-word) that
    :data:`FREE_REWRITES` gives, in table order; empty when none applies."""
    out: list[str] = []
    q = question.strip()
    for _, pat, rep in _FREE_RES:
        new, n = pat.subn(rep, q, count=1)
        if n and new != q and new not in out:
            out.append(new)
    return out


def split_contexts(text: str) -> tuple[str, str]:
    """``(contexts, core)``: every leading context sentence from :data:`CONTEXTS` (``""`` when none) and
    the rest."""
    ctx: list[str] = []
    rest = text.strip()
    while True:
        c, core = split_context(rest)
        if not c:
            return " ".join(ctx), rest
        ctx.append(c)
        rest = core
