"""Facts and cues of the canary retrieval tasks: names, relations, values and sentence templates.

Every list comes in two disjoint halves. TRAIN feeds training; HELDOUT only the held-out
evaluation sets (heldout.py), so a held-out case uses fact and cue templates, relations and names
that training never saw: recall on it measures retrieval, not memorized wording. A fact states
the value of a relation of a name; its cue asks for it and ends just before the value, which the
model must copy (answer = " " + value).
"""
import random
import re

# Names. Held-out names are rare ones that stories260K does not generate (heldout.py checks the
# story pool for them); training names are common ones plus syllable-made ones.
TRAIN_NAMES = """Tom Ann Ben Sue Max Amy Sam Lily Tim Mia Jack Lucy Anna Bob Sara Jill Dan Kim Ray Zoe
Leo Ella Finn Ivy Noah Ruby Owen Rose Luke Emma Jake Lola Ryan Nora Adam Grace Eli Hana Ian Jade Kai
Lana Milo Nina Oscar Pia Quinn Rita Seth Tara Umar Vera Wade Xena Yara Zack Abby Beth Carl Dora Evan
Faye Gus Hugo Iris Joel Kate Liam Maya Ned Olga Paul Rex Sofia Theo Una Vic Will Yuki Zara Alex Bella
Cody Daisy Eddie Fiona George Holly Isaac Julia Kevin Laura Mason Nadia Oliver Penny Rosa Simon Tina
Victor Wendy Yusuf Zeke Arlo Bree Cole Dina Ezra Gemma Hank Ines Jonah Kira Lars Mona Nico Opal Pete
Remy Sage Toby Uma Vince Wren""".split()
HELDOUT_NAMES = """Quincy Beatrix Ophelia Thaddeus Winifred Ignatius Cornelius Rosalind Percival
Gwendolyn Leopold Marigold Bartholomew Octavia Florian Isadora Evander Philippa Cassius Henrietta
Lysander Seraphina Ambrose Clementine Barnaby Imogen Ottilie Montgomery Araminta Horatio Wilhelmina
Peregrine Esmeralda Gideon Rowena Ebenezer Tabitha Cosimo Augustin Delphine""".split()

# Relations: ("word" | "number", text). Held-out relations share no first word with training.
TRAIN_RELATIONS = [("number", r) for r in """secret code|lucky number|house number|room number|ticket number
|bus number|favorite number|magic number|door code|box code|phone number|lock code|safe code|club number
|team number|shirt number|seat number|page number|train number|gate number|bike code|shop number
|card number|class number|bag code""".replace("\n", "").split("|")] + [
    ("word", r) for r in """password|magic word|secret word|pet's name|cat's name|dog's name|fish's name
|boat's name|toy's name|doll's name|teddy's name|robot's name|horse's name|bird's name|ship's name
|nickname|code word|song's name|frog's name|bunny's name""".replace("\n", "").split("|")]
HELDOUT_RELATIONS = [("number", r) for r in """treasure code|locker number|garden code|lantern number
|tower code|drum number|wagon number""".replace("\n", "").split("|")] + [
    ("word", r) for r in """castle password|kite's name|turtle's name|star's name|puppet's name
|goose's name""".replace("\n", "").split("|")]

# Fact templates ({N} name, {R} relation, {V} value) and cue templates (end just before " {V}").
TRAIN_FACTS = [
    "The {R} of {N} is {V}.",
    "{N}'s {R} is {V}.",
    "{N} has a {R}, and it is {V}.",
    "Everyone knew that the {R} of {N} was {V}.",
    "{N} said, \"My {R} is {V}.\"",
    "The {R} for {N} was {V}.",
    "{N} wrote the {R} on a card: {V}.",
    "On the wall was the {R} of {N}: {V}.",
    "{N} told everyone that the {R} was {V}.",
    "Mom said the {R} of {N} is {V}.",
    "{N} picked {V} as the {R}.",
    "{V} was the {R} of {N}.",
    "{N} learned that the {R} is {V}.",
    "The teacher gave {N} a {R}. It was {V}.",
]
TRAIN_CUES = [
    "The {R} of {N} is",
    "{N}'s {R} is",
    "What is the {R} of {N}? It is",
    "Q: What is {N}'s {R}? A:",
    "Do you remember the {R} of {N}? It was",
    "The {R} that {N} had was",
    "{N} still knew the {R}. It was",
    "Someone asked about the {R} of {N}. The answer was",
    "I know the {R} of {N}! It is",
    "Remember, {N}'s {R} was",
]
# More training wording, so that retrieval keys on the name and not on a template: an opening
# (or none), a core that states the value (before or after the relation) and an ending. The
# held-out templates are not among them (check_disjoint).
TRAIN_FACT_OPENINGS = ["", "One day, ", "In the morning, ", "At the park, ", "Later, ", "Then ",
                       "After lunch, ", "That night, ", "At school, ", "Yesterday, "]
TRAIN_FACT_CORES = [
    "the {R} of {N} was {V}", "{N}'s {R} was {V}", "{N} got a new {R}: {V}", "{N} made {V} the {R}",
    "{N} had a {R}. It was {V}", "{N} said the {R} was {V}", "the {R} for {N} is {V}",
    "{N} found out the {R}: it was {V}", "{N} named the {R} {V}", "{N} wrote {V} as the {R}",
    "{N} and the {R} {V} went home", "({N}, {R}: {V})", "{N} looked at the {R} and saw {V}",
    "{V} is what {N} calls the {R}", "the {R} ({N}) is {V}", "{N} whispered the {R}, {V}",
]
TRAIN_FACT_ENDINGS = [".", "!", ", and everyone knew it.", ". {N} was happy.", ". It was a good day."]
TRAIN_CUE_OPENINGS = ["", "Later, ", "Then Mom asked: ", "Now, ", "At the end of the day, ",
                      "The next day, ", "Dad said, "]
TRAIN_CUE_CORES = [
    "the {R} of {N} was", "{N}'s {R} was", "what was {N}'s {R}? It was", "{N} said the {R} is",
    "the {R} of {N}:", "{N} remembered the {R}. It was", "Q: {N}'s {R}? A:", "{N} knew the {R}:",
    "who has the {R}? {N}. And it is", "the {R} for {N} is", "{N} looked for the {R} and found",
]


def composed_templates(openings, cores, endings):
    return [o + c + e for o in openings for c in cores for e in endings]


TRAIN_FACTS = TRAIN_FACTS + composed_templates(TRAIN_FACT_OPENINGS, TRAIN_FACT_CORES, TRAIN_FACT_ENDINGS)
TRAIN_CUES = TRAIN_CUES + composed_templates(TRAIN_CUE_OPENINGS, TRAIN_CUE_CORES, [""])
HELDOUT_FACTS = [
    "{N} kept the {R} in a small box, and it was {V}.",
    "A note said: the {R} of {N} = {V}.",
    "Long ago, {N} chose {V} to be the {R}.",
    "There was a sign that read, \"{R} of {N}: {V}\".",
]
HELDOUT_CUES = [
    "So, the {R} belonging to {N} was",
    "Tell me the {R} of {N}. Sure, the {R} is",
    "Which {R} did {N} have? {N} had",
    "Think back: {N} had a {R}, and it was",
]

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def made_up_word(rng, n_syllables):
    """A capitalized pronounceable non-word, e.g. 'Bazu' or 'Tekilo'."""
    w = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(n_syllables))
    return w.capitalize()


def value_for(rng, kind):
    if kind == "number":
        n = rng.randint(2, 5)
        return str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))
    return made_up_word(rng, rng.randint(2, 3))


class Pools:
    """The names, relations and templates of one half (train or held-out)."""

    def __init__(self, heldout):
        self.heldout = heldout
        self.names = HELDOUT_NAMES if heldout else TRAIN_NAMES
        self.relations = HELDOUT_RELATIONS if heldout else TRAIN_RELATIONS
        self.facts = HELDOUT_FACTS if heldout else TRAIN_FACTS
        self.cues = HELDOUT_CUES if heldout else TRAIN_CUES

    def name(self, rng):
        # Training also uses made-up names so that any name can be a key.
        if not self.heldout and rng.random() < 0.4:
            return made_up_word(rng, rng.randint(2, 3))
        return rng.choice(self.names)

    def relation(self, rng):
        return rng.choice(self.relations)

    def fact_template(self, rng):
        return rng.choice(self.facts)

    def cue_template(self, rng):
        return rng.choice(self.cues)


class ProceduralPools(Pools):
    """Training wording drawn from a grammar instead of lists (the curriculum's last stage): most
    names are made up (2-4 syllables, some with a second name), most relations are a made-up or
    training head with a kind ("the bazu code", "the tekilo's name"), and most fact and cue
    templates are composed in one of several word orders, with story words (spans of training
    sentences) between their parts. A model that saw a few hundred wordings recalled 94% of
    training facts and a fifth of held-out ones: it keyed on the wording. Here no wording repeats
    often enough to be learnt, so only the name and the relation can lead back to the value. A
    composed template that equals a held-out one is drawn again (the halves stay disjoint)."""

    def __init__(self, sentences):
        super().__init__(False)
        # Word lists of training sentences, for filler spans: lowercase letters only.
        self.sentences = [ws for ws in (re.findall(r"[a-z]+", s.lower()) for s in sentences) if len(ws) >= 2]

    def name(self, rng):
        if rng.random() < 0.3:
            return rng.choice(self.names)
        name = made_up_word(rng, rng.randint(2, 4))
        return name + " " + made_up_word(rng, rng.randint(2, 3)) if rng.random() < 0.25 else name

    def relation(self, rng):
        if rng.random() < 0.4:
            return rng.choice(self.relations)
        kind = "number" if rng.random() < 0.5 else "word"
        head = made_up_word(rng, rng.randint(2, 3)).lower()
        while head in _HELDOUT_HEADS:
            head = made_up_word(rng, rng.randint(2, 3)).lower()
        if rng.random() < 0.3:
            head = rng.choice(self.relations)[1].split()[0].split("'")[0]
        tail = rng.choice(_NUMBER_KINDS if kind == "number" else _WORD_KINDS)
        return kind, head + tail

    def span(self, rng, lo=2, hi=5):
        words = rng.choice(self.sentences)
        n = min(len(words), rng.randint(lo, hi))
        i = rng.randrange(len(words) - n + 1)
        return " ".join(words[i:i + n])

    def filler(self, rng):
        return " " + self.span(rng) if rng.random() < 0.5 else ""

    def opening(self, rng):
        r = rng.random()
        if r < 0.4:
            return ""
        if r < 0.7:
            return rng.choice(TRAIN_FACT_OPENINGS[1:])
        return self.span(rng).capitalize() + rng.choice([", ", ". ", ": "])

    def fact_template(self, rng):
        if rng.random() < 0.2:
            return rng.choice(self.facts)
        while True:
            t = self.opening(rng) + rng.choice(_FACT_ORDERS)(self, rng) + rng.choice(
                [".", "!", ".", ". " + self.span(rng).capitalize() + "."])
            if t not in HELDOUT_FACTS:
                return t

    def cue_template(self, rng):
        if rng.random() < 0.2:
            return rng.choice(self.cues)
        while True:
            t = self.opening(rng) + rng.choice(_CUE_FORMS)(self, rng)
            if t not in HELDOUT_CUES:
                return t


_HELDOUT_HEADS = {r.split()[0].split("'")[0] for _, r in HELDOUT_RELATIONS}
_NUMBER_KINDS = [" code", " number", " key", " pin", " count", " score"]
_WORD_KINDS = [" name", " word", " password", "'s name", " nickname", " secret"]
_HAS = ["'s ", " had a ", " has a ", " kept the ", " got the ", " found the ", " knew the ",
        " owned a ", " once had a ", " wrote down the ", " gave away the "]
_IS = [" is ", " was ", ": ", " = ", ", and it was ", ", which was ", ". It was ", " - ", " that said ",
       ", it is ", " read "]
_OF = [" of ", " for ", " of little ", " that belonged to ", " given to ", " from "]
_CHOSE = [" chose ", " picked ", " made ", " wanted ", " said ", " used "]
_AS = [" as the ", " to be the ", " for the ", " as a "]
_WAS_THE = [" was the ", " is the ", " became the ", " stayed the "]
_ENDS = [" is", " was", ":", " =", " had been", ", it was", " said"]
_QUESTIONS = ["What is the {R} of {N}?", "What was {N}'s {R}?", "Which {R} did {N} have?",
              "Do you know the {R} of {N}?", "Who knows {N}'s {R}?", "Can you tell me the {R} of {N}?",
              "What {R} did {N} get?", "And the {R} of {N}?"]
_LEADS = ["It is", "It was", "{N} had", "{N}'s {R} was", "The {R} is", "Yes, it is", "A:",
          "The answer is", "Sure, it was", "Of course, it is", "{N} said it was", "That was"]

# Fact word orders (name, relation, value); each returns a template with {N}, {R}, {V}.
_FACT_ORDERS = [
    lambda p, rng: "{N}" + rng.choice(_HAS) + "{R}" + p.filler(rng) + rng.choice(_IS) + "{V}",
    lambda p, rng: "the {R}" + rng.choice(_OF) + "{N}" + p.filler(rng) + rng.choice(_IS) + "{V}",
    lambda p, rng: "{N}" + p.filler(rng) + rng.choice(_CHOSE) + "{V}" + rng.choice(_AS) + "{R}",
    lambda p, rng: "{V}" + rng.choice(_WAS_THE) + "{R}" + rng.choice(_OF) + "{N}",
]
# Cue forms; each ends just before " {V}".
_CUE_FORMS = [
    lambda p, rng: rng.choice(["the {R} of {N}", "{N}'s {R}", "the {R} for {N}"]) + p.filler(rng)
    + rng.choice(_ENDS),
    lambda p, rng: rng.choice(_QUESTIONS) + " " + rng.choice(_LEADS),
    lambda p, rng: "{N}" + p.filler(rng) + rng.choice(_HAS) + "{R}" + rng.choice([", and it was", ". It was", ":"]),
]


def fill(template, name, relation, value):
    text = template.replace("{N}", name).replace("{R}", relation).replace("{V}", value)
    return text[0].upper() + text[1:]


def make_fact(rng, pools, name=None, used_values=()):
    """(fact sentence, cue text, answer) for one name, relation and value; the answer
    (" " + value) is not one of used_values."""
    name = name or pools.name(rng)
    kind, relation = pools.relation(rng)
    value = value_for(rng, kind)
    while " " + value in used_values:
        value = value_for(rng, kind)
    fact = fill(pools.fact_template(rng), name, relation, value)
    cue = fill(pools.cue_template(rng), name, relation, value)
    return fact, cue, " " + value


def check_disjoint():
    """The two halves share no name, relation first word or template."""
    assert not set(TRAIN_NAMES) & set(HELDOUT_NAMES)
    made_up = re.compile(f"^([{_CONSONANTS}][{_VOWELS}])+$")
    assert not any(made_up.match(n.lower()) for n in HELDOUT_NAMES)
    train_heads = {r.split()[0].split("'")[0] for _, r in TRAIN_RELATIONS}
    assert not train_heads & {r.split()[0].split("'")[0] for _, r in HELDOUT_RELATIONS}
    assert not set(TRAIN_FACTS) & set(HELDOUT_FACTS)
    assert not set(TRAIN_CUES) & set(HELDOUT_CUES)


check_disjoint()


def make_rng(*seed_parts):
    return random.Random("/".join(str(s) for s in seed_parts))
