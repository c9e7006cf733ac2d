"""Fictional value pools for synthetic seed suites.

Place, company, dish, toy and pet names are invented so that no pretrained knowledge can stand in for the
memory under test; occupations, hobbies and species are ordinary words (knowing them does not reveal whose
they are). Every pool is a tuple in a fixed order — the synthesiser samples from it with a seeded RNG, so
the order is part of the generated suite and must not be changed casually.

``POOLS`` maps a ``value_type`` (as used by :class:`ufuzz.model.Fact`) to its values; ``ENTITY_NAMES``
maps an entity type to the names entities of that type may have. Pools are pairwise disjoint (case-folded)
and no value is a whole word of a name (checked by the tests).
"""

from __future__ import annotations

import random

PERSON_NAMES: tuple[str, ...] = (
    "Lena", "Tarik", "Ilsa", "Oren", "Maren", "Dario", "Sanne", "Kasimir", "Noor", "Emeric",
    "Yara", "Bastien", "Liesel", "Joran", "Anouk", "Teodor", "Mirela", "Caspian", "Odile", "Rurik",
    "Solveig", "Anselm", "Ingrid", "Lazlo", "Petra", "Vesna", "Henrike", "Aurelio", "Sigrun", "Tobiah",
    "Zelda", "Ottilie", "Florin", "Greta", "Hadrian", "Isolde", "Jakub", "Katja", "Leopold", "Marit",
    "Nikolai", "Orsolya", "Pavel", "Quentin", "Rosalind", "Stellan", "Thea", "Ulrich", "Valeska", "Wendell",
    "Xenia", "Yusuf", "Zofia", "Alaric", "Brigid", "Cosmin", "Dagny", "Eamon", "Fenna", "Gideon",
    "Hester", "Idris", "Jolene", "Kaito", "Linnea", "Matthias", "Nadia", "Osric", "Priya", "Ravi",
    "Saoirse", "Tamsin", "Ugo", "Vivienne", "Wilhelmina", "Ximena", "Yannick", "Zainab", "Amara", "Benedikt",
    "Desmond", "Elif", "Farid", "Gunnar", "Hana", "Ines", "Kerensa", "Lorcan", "Mireille", "Niamh",
)

PET_NAMES: tuple[str, ...] = (
    "Pim", "Zuzu", "Tofka", "Briggle", "Mossel", "Nibsy", "Fennick", "Jumbloo", "Wizzle", "Krumpet",
    "Olwen", "Taffle", "Noodlet", "Bixby", "Plinko", "Ziggo", "Mufflin", "Dorrit", "Gubbin", "Fizzwick",
    "Lumo", "Pepperell", "Snorri", "Wimble", "Yoshko", "Quibbs", "Razzle", "Dimsy", "Flossie", "Grizzel",
    "Mopsa", "Tibbert", "Wuffle", "Pindle", "Scrumbo", "Kezzy", "Lollop", "Oddkin", "Puddock", "Rumbold",
    "Vimsy", "Wobbit", "Zephrin", "Bumbo", "Cricklet",
)

CITIES: tuple[str, ...] = (
    "Velmora", "Quorlin", "Ostravel", "Brindlemoor", "Caskaro", "Drellin", "Eskavar", "Fenwhistle",
    "Galdric", "Halvenport", "Istrena", "Jorvasse", "Kelmarsh", "Lunvale", "Mirrowick", "Norvath",
    "Oppledon", "Pellucca", "Quessin", "Ravensholt", "Sardalune", "Tessivar", "Umbrecht", "Varnholm",
    "Wexmoor", "Ylandra", "Zantholm", "Belcastro", "Corvenna", "Dunmarrow", "Elstrade", "Falcrest",
    "Glimmerholt", "Ivrecca", "Karvossa", "Lindqvale", "Morbrecht", "Nestorra", "Pravessa", "Quillmarsh",
    "Rostavik", "Selvara", "Trenmouth", "Ulvika", "Vessendor", "Wynhallow", "Xandrel", "Yorvesk",
)

#: Suffixes that turn a city into a near-miss city ("Velmora" → "Velmora Heights").
CITY_SUFFIXES: tuple[str, ...] = ("Heights", "Bay", "Junction", "Vale", "Harbour", "Crossing")

COMPANY_STEMS: tuple[str, ...] = (
    "Brellix", "Quandor", "Oskelon", "Vantry", "Tellaris", "Gorvin", "Halcyra", "Izmet", "Jarrowby",
    "Kessly", "Lumentree", "Norrith", "Orvane", "Pellwick", "Quistral", "Rookfen", "Sablemere", "Trivella",
    "Umbrant", "Vorlax", "Wendmoor", "Xyloquent", "Yarvik", "Zephrane", "Ambrel", "Bostrander", "Cindral",
    "Dovecote", "Elmswick", "Frayle", "Glenvar", "Hollisk", "Ironvale", "Kintara", "Larkspire", "Mornell",
    "Nimbrel", "Penhallow", "Quenby", "Rassendyl", "Strommel", "Tovari",
)
COMPANY_KINDS: tuple[str, ...] = (
    "Systems", "Freight", "Labs", "Foods", "Bank", "Textiles", "Health", "Robotics", "Press", "Insurance",
    "Studios", "Energy", "Logistics", "Pharma", "Games", "Architects", "Hotels", "Motors", "Media",
    "Chemicals", "Bakery", "Software", "Shipping", "Airlines", "Consulting", "Tools", "Optics", "Analytics",
    "Furniture", "Security", "Dairy", "Gardens", "Mining", "Telecom", "Academy", "Outdoor", "Cloud", "Books",
    "Audio", "Bikes", "Breweries", "Ceramics",
)
COMPANIES: tuple[str, ...] = tuple(f"{s} {k}" for s, k in zip(COMPANY_STEMS, COMPANY_KINDS, strict=True))

OCCUPATIONS: tuple[str, ...] = (
    "glassblower", "cartographer", "sound engineer", "beekeeper", "court stenographer", "luthier",
    "marine biologist", "tax auditor", "stonemason", "translator", "locksmith", "radiographer", "perfumer",
    "actuary", "paramedic", "set designer", "watchmaker", "dental hygienist", "landscape architect",
    "archivist", "bookbinder", "pastry chef", "air traffic controller", "geologist", "tattoo artist",
    "speech therapist", "urban planner", "farrier", "piano tuner", "sommelier", "forensic accountant",
    "ferry pilot", "museum curator", "florist", "data analyst", "midwife", "structural engineer",
    "puppeteer", "kitchen fitter", "tour guide", "lighthouse keeper", "orthodontist", "falconer",
    "copy editor",
)

FOOD_STEMS: tuple[str, ...] = (
    "karrow", "velsh", "brindle", "tamsek", "oppa", "quell", "marrowin", "zelka", "fennic", "dovra",
    "skelli", "pomadi", "urrak", "wessel", "ithra", "gorbel", "nalisk", "yemmet", "chorvan", "lunka",
    "bastro", "tiffen", "rabbel", "mossen", "elvric", "pranzi", "hoskin", "jubbet", "korra", "sarvik",
    "drumlin", "vappa", "ozzel", "feska", "grinnow", "talvo", "meppin", "quarra", "nobbet", "zindle",
    "hallan", "pirrow",
)
FOOD_KINDS: tuple[str, ...] = ("stew", "dumplings", "pie", "noodles", "flatbread", "soup", "tart", "curry",
                               "rolls", "salad", "fritters", "pudding", "broth", "skewers")
FOODS: tuple[str, ...] = tuple(f"{s} {FOOD_KINDS[i % len(FOOD_KINDS)]}" for i, s in enumerate(FOOD_STEMS))

HOBBIES: tuple[str, ...] = (
    "bouldering", "pottery", "birdwatching", "fencing", "origami", "calligraphy", "kayaking", "chess",
    "woodturning", "salsa dancing", "astronomy", "knitting", "geocaching", "archery", "sourdough baking",
    "model railways", "orienteering", "bonsai", "rock tumbling", "fly fishing", "quilting", "juggling",
    "trail running", "ice skating", "stamp collecting", "sailing", "choir singing", "improv theatre",
    "mosaic making", "foraging", "cryptic crosswords", "kite flying", "ceramics", "ham radio", "stargazing",
    "aerial silks", "darts", "bell ringing", "letterpress printing", "cycling", "beatboxing", "embroidery",
)

SPECIES: tuple[str, ...] = (
    "dog", "cat", "rabbit", "hamster", "guinea pig", "ferret", "parrot", "budgie", "cockatiel", "canary",
    "goldfish", "tortoise", "gecko", "iguana", "bearded dragon", "corn snake", "chinchilla", "gerbil", "rat",
    "hedgehog", "axolotl", "tarantula", "hermit crab", "pony", "goat", "pig", "chicken", "duck", "lovebird",
    "zebra finch", "koi carp", "betta fish", "chameleon", "sugar glider", "degu", "alpaca", "mouse",
    "ball python", "leopard gecko", "cockatoo",
)

TOY_STEMS: tuple[str, ...] = (
    "Zibble", "Flumo", "Quackle", "Rondo", "Snaffle", "Twirlo", "Bopple", "Crinkit", "Dangler", "Fribbet",
    "Gnawzer", "Hoopla", "Jinglet", "Klonk", "Loopsy", "Munchkin", "Nubble", "Ploof", "Rattlo", "Squonk",
    "Tugger", "Wibbler", "Yowzer", "Zoomer", "Bungo", "Chewsy", "Dibble", "Fetchit", "Grumble", "Honker",
    "Jostle", "Kibbo", "Lurcher", "Mumble", "Nosher", "Pouncer", "Rumpus", "Skitter", "Thwack", "Wriggle",
    "Yapper", "Zonk",
)
TOY_KINDS: tuple[str, ...] = ("ball", "rope", "mouse", "bone", "ring", "frisbee", "tunnel", "feather wand",
                              "chew stick", "bell")
TOYS: tuple[str, ...] = tuple(f"{s} {TOY_KINDS[i % len(TOY_KINDS)]}" for i, s in enumerate(TOY_STEMS))

WEEKDAYS: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DAY_PARTS: tuple[str, ...] = ("mornings", "afternoons", "evenings", "lunchtimes", "nights", "at dawn")
#: Gym schedules: "Monday mornings", "Thursday at dawn" … (7 × 6 = 42 values).
WEEKDAY_SLOTS: tuple[str, ...] = tuple(f"{d} {p}" for p in DAY_PARTS for d in WEEKDAYS)


def _clock_times() -> tuple[str, ...]:
    out = []
    for minutes in range(5 * 60, 22 * 60 + 1, 15):
        h, m = divmod(minutes, 60)
        suffix = "am" if h < 12 else "pm"
        h12 = h if 1 <= h <= 12 else (h - 12 if h > 12 else 12)
        out.append(f"{h12}:{m:02d} {suffix}")
    return tuple(out)


#: Feeding times "5:00 am" … "10:00 pm" in 15-minute steps.
CLOCK_TIMES: tuple[str, ...] = _clock_times()

RELATIONS: dict[str, tuple[str, ...]] = {
    "person": ("sister", "brother", "cousin", "friend", "colleague", "neighbour", "aunt", "uncle",
               "flatmate", "old school friend", "boss", "mentor", "niece", "nephew", "climbing buddy"),
    "pet": (),
}

POOLS: dict[str, tuple[str, ...]] = {
    "person_name": PERSON_NAMES,
    "pet_name": PET_NAMES,
    "city": CITIES,
    "company": COMPANIES,
    "occupation": OCCUPATIONS,
    "food": FOODS,
    "hobby": HOBBIES,
    "species": SPECIES,
    "toy": TOYS,
    "weekday": WEEKDAY_SLOTS,
    "clock_time": CLOCK_TIMES,
}

ENTITY_NAMES: dict[str, tuple[str, ...]] = {"person": PERSON_NAMES, "pet": PET_NAMES}


def near_miss(value_type: str, value: str, rng: random.Random) -> str | None:
    """A value of the same type that shares most of its surface with ``value`` (never equal to it).

    ``Velmora`` → ``Velmora Heights``; ``Brellix Systems`` → ``Brellix Labs``; ``karrow stew`` → ``karrow pie``;
    ``7:30 am`` → ``7:30 pm``; ``Monday evenings`` → ``Monday mornings``. None for types without one.
    """
    if value_type == "city":
        return f"{value} {rng.choice(CITY_SUFFIXES)}"
    if value_type == "company":
        stem, kind = value.split(" ", 1)
        return f"{stem} {rng.choice([k for k in COMPANY_KINDS if k != kind])}"
    if value_type == "food":
        stem, kind = value.split(" ", 1)
        return f"{stem} {rng.choice([k for k in FOOD_KINDS if k != kind])}"
    if value_type == "toy":
        stem, kind = value.split(" ", 1)
        return f"{stem} {rng.choice([k for k in TOY_KINDS if k != kind])}"
    if value_type == "clock_time":
        clock, ampm = value.split(" ")
        flipped = f"{clock} {'pm' if ampm == 'am' else 'am'}"
        return flipped
    if value_type == "weekday":
        day = value.split(" ", 1)[0]
        return rng.choice([v for v in WEEKDAY_SLOTS if v.startswith(day + " ") and v != value])
    return None
