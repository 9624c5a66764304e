"""Training sequences of the canary model: stories260K text with facts, cues and copies in it.

A story pool (records of canary_eval stories) is split into sentences and tokenized once
(spm.py; cached beside the pool). A training sequence is BOS then a stream of story sentences
into which events are put at chosen token positions:
  fact ... cue + answer   a fact early, its cue later at a distance d (the answer is copied);
  snippet ... snippet     a copy: the same run of tokens twice, d tokens apart;
and, in "copy" sequences, dense repeats of random token runs, short random lists and sentences
(copying is the first skill the model must learn, and one a first attempt found it would not
learn from sparse retrieval alone).
The distance d follows a curriculum: its upper bound rises with the tokens trained. Every
sequence is a pure function of (seed, step, index), so training resumes reproducibly.
"""
import os
import pickle
import re

import records
import tasks

kFirstTextToken = 259  # stories260K: <unk>, <s>, </s> and 256 byte tokens come first
_SENTENCE_END = re.compile(r'(?<=[.!?])"?\s+')


def split_sentences(text):
    text = " ".join(text.split())
    return [s for s in _SENTENCE_END.split(text) if s]


class StoryPool:
    """Sentences of every story as token lists: stories[i] = [[ids of sentence 0], ...]."""

    def __init__(self, path, tok):
        cache = path + ".tok.pkl"
        if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(path):
            with open(cache, "rb") as f:
                self.stories, self.texts = pickle.load(f)
        else:
            self.texts = [r[1] for r in records.read_records(path) if r[1].strip()]
            self.stories = [[tok.encode(s) for s in split_sentences(t)] for t in self.texts]
            with open(cache, "wb") as f:
                pickle.dump((self.stories, self.texts), f)
        self.stories = [s for s in self.stories if s]
        self.n_tokens = sum(len(x) for s in self.stories for x in s)

    def stream(self, rng):
        """Endless sentences: a random story from a random sentence, then whole random stories."""
        story = rng.choice(self.stories)
        i = rng.randrange(len(story))
        while True:
            while i < len(story):
                yield story[i]
                i += 1
            story, i = rng.choice(self.stories), 0


class Curriculum:
    """What the data looks like, as a function of the tokens trained and of one event: the step
    at which the model has learned to copy (the gate).

    Before the gate: 256-token sequences, 2048 tokens a step, 80% dense copy sequences, facts at
    most 96 tokens before their cues. A fixed schedule cannot know when copying appears (a first
    run still copied nothing after 1M tokens, as its share of copies fell), so the gate opens when
    the mean greedy accuracy on dense copy sequences (an exponential moving average over about 20
    steps) reaches GATE_COPY_ACC. After it, by tokens trained since the gate: sequences of 256,
    then 512, then 1024 tokens (4096 tokens a step); the copy share falls from 50% to 10%; the
    largest fact-to-cue distance grows from 96 to the full length. The state (tokens trained, the
    average, the gate) is saved in checkpoints: every sequence is a pure function of (seed,
    step, index, the gate's token count), so a resumed run sees the same data as an
    uninterrupted one."""

    GATE_COPY_ACC = 0.6
    PHASES = [(500_000, 256, 2048), (1_500_000, 512, 2048), (None, 1024, 4096)]  # (end, length, tokens/step)
    COPY_TOKENS = 2_500_000      # the copy share falls from 50% to 10% over this many tokens,
    DISTANCE_TOKENS = 3_500_000  # and the distance reaches the full length after this many;
    PROCEDURAL_TOKENS = 7_250_000  # then, from this many, wording comes from a grammar

    def __init__(self, seq_len, state=None):
        self.full = seq_len
        self.tokens, self.copy_avg, self.gate = 0, 0.0, None
        if state:
            self.tokens, self.copy_avg, self.gate = state["tokens"], state["copy_avg"], state["gate"]

    def state(self):
        return {"tokens": self.tokens, "copy_avg": self.copy_avg, "gate": self.gate}

    def since_gate(self):
        return None if self.gate is None else self.tokens - self.gate

    def shape(self):
        """(sequence length, tokens per step) of the next step."""
        since = self.since_gate()
        if since is None:
            return min(256, self.full), 2048
        for end, length, batch in self.PHASES:
            if end is None or since < end:
                return min(length, self.full), batch

    def max_distance(self, seq_len):
        since = self.since_gate()
        frac = 0.0 if since is None else min(1.0, since / self.DISTANCE_TOKENS)
        return int(min(seq_len - 40, 96 + frac * (self.full - 96)))

    def copy_share(self):
        since = self.since_gate()
        if since is None:
            return 0.8
        return 0.5 - 0.4 * min(1.0, since / self.COPY_TOKENS)

    def procedural(self):
        """True from PROCEDURAL_TOKENS after the gate: names, relations and templates from
        tasks.ProceduralPools. The lists alone (a few hundred wordings) taught a model that
        recalled 94% of training facts and a fifth of held-out ones (run of 2026-12-02, step
        3200): it had learnt the wordings, not to look a name up."""
        since = self.since_gate()
        return since is not None and since >= self.PROCEDURAL_TOKENS

    def advance(self, n_tokens, copy_acc):
        """After a step of n_tokens tokens; copy_acc is its accuracy on dense copies, or None."""
        self.tokens += n_tokens
        if copy_acc is not None:
            self.copy_avg += 0.05 * (copy_acc - self.copy_avg)
        if self.gate is None and self.copy_avg >= self.GATE_COPY_ACC:
            self.gate = self.tokens


class LongCurriculum(Curriculum):
    """The data of a model that already retrieves at 1024 positions (train.py --init-from), taught
    to retrieve across a longer context: 2048-token sequences for the first LONG_PHASE tokens, then
    the full length, 4096 tokens a step throughout (one 4096-token sequence: its attention scores
    are what the step's memory holds); 10% dense copies; procedural wording from the start; the
    largest fact-to-cue distance grows from 900 tokens to the full length over DISTANCE_TOKENS. The
    gate is open from the first step (the model copies)."""

    LONG_PHASE = 2_000_000
    DISTANCE_TOKENS = 3_000_000
    START_DISTANCE = 900

    def __init__(self, seq_len, state=None):
        super().__init__(seq_len, state)
        if self.gate is None:
            self.gate = 0

    def shape(self):
        return (min(2048, self.full) if self.tokens < self.LONG_PHASE else self.full), 4096

    def max_distance(self, seq_len):
        frac = min(1.0, self.tokens / self.DISTANCE_TOKENS)
        return int(min(seq_len - 40, self.START_DISTANCE + frac * (self.full - self.START_DISTANCE)))

    def copy_share(self):
        return 0.1

    def procedural(self):
        return True


CURRICULA = {"standard": Curriculum, "long": LongCurriculum}


def sample_distance(rng, max_d):
    """Half of the distances in the upper half of the range, so long ones are never rare."""
    lo = 8 if rng.random() < 0.5 else max_d // 2
    return rng.randint(lo, max(lo, max_d))


class Builder:
    def __init__(self, tok, pool, heldout=False):
        self.tok, self.pool = tok, pool
        self.pools = tasks.Pools(heldout)
        self.procedural = None if heldout else tasks.ProceduralPools(
            [s for t in pool.texts for s in split_sentences(t)])

    def fact_events(self, rng, pools, seq_len, max_d, n_facts):
        """(position, ids, answer span in ids or None) for facts and their cues."""
        events, names, values = [], set(), set()
        for _ in range(n_facts):
            name = pools.name(rng)
            while name in names:
                name = pools.name(rng)
            names.add(name)
            fact, cue, answer = tasks.make_fact(rng, pools, name, values)
            values.add(answer)
            d = sample_distance(rng, max_d)
            p = rng.randint(1, max(1, seq_len - d - 30))
            cue_ids = self.tok.encode(cue)
            n_answer = len(self.tok.encode(answer[1:]))  # "." never merges with a word
            events.append((p, self.tok.encode(fact), None))
            events.append((p + d, cue_ids + self.tok.encode(answer[1:] + "."),
                           (len(cue_ids), len(cue_ids) + n_answer)))
        return events

    def copy_events(self, rng, pools, seq_len, max_d, n_copies):
        events = []
        for _ in range(n_copies):
            snippet = self.random_list(rng, pools) if rng.random() < 0.5 else self.story_snippet(rng)
            d = sample_distance(rng, max_d)
            p = rng.randint(1, max(1, seq_len - d - len(snippet)))
            events.append((p, snippet, None))
            events.append((p + d, snippet, (1, len(snippet))))  # the first token is not predictable
        return events

    def story_snippet(self, rng):
        story = rng.choice(self.pool.stories)
        return list(rng.choice(story))

    def random_list(self, rng, pools):
        """A short list of numbers, names or made-up words, e.g. 'Bazu, 4471, Tom, Kemi.'"""
        n = rng.randint(2, 8)
        items = []
        for _ in range(n):
            r = rng.random()
            if r < 0.4:
                items.append(tasks.value_for(rng, "number"))
            elif r < 0.7:
                items.append(tasks.made_up_word(rng, rng.randint(1, 3)))
            else:
                items.append(pools.name(rng))
        return self.tok.encode(", ".join(items) + ".")

    def retrieval_sequence(self, rng, pools, seq_len, max_d):
        # Up to one fact (and its cue) per 48 tokens: many retrievals per sequence, each a
        # gradient signal, with sparse sequences like the held-out cases among them.
        n_facts = rng.randint(1, max(2, seq_len // 48))
        n_copies = rng.randint(0, max(1, seq_len // 256))
        events = self.fact_events(rng, pools, seq_len, max_d, n_facts)
        events += self.copy_events(rng, pools, seq_len, max_d, n_copies)
        return self.assemble(rng, seq_len, events)

    def assemble(self, rng, seq_len, events):
        """BOS, then story sentences with each event put in when its position is reached.
        Returns (ids [seq_len + 1], answer positions: indices of ids that are copied)."""
        events.sort(key=lambda e: e[0])
        ids, answers = [self.tok.bos_id], []
        stream = self.pool.stream(rng)
        k = 0
        while len(ids) < seq_len + 1:
            if k < len(events) and len(ids) >= events[k][0]:
                _, piece, span = events[k]
                if span:
                    answers.extend(range(len(ids) + span[0], len(ids) + span[1]))
                ids.extend(piece)
                k += 1
            else:
                ids.extend(next(stream))
        ids = ids[:seq_len + 1]
        return ids, [a for a in answers if a <= seq_len]

    def copy_sequence(self, rng, pools, seq_len):
        """Dense copies, each repeated 2-4 times in a row: runs of random tokens (copying is the
        only way to predict their repeats), short random lists, or story sentences."""
        ids, answers = [self.tok.bos_id], []
        while len(ids) < seq_len + 1:
            r = rng.random()
            if r < 0.4:
                snippet = [rng.randrange(kFirstTextToken, self.tok.n_vocab) for _ in range(rng.randint(8, 48))]
            elif r < 0.8:
                snippet = self.random_list(rng, pools)
            else:
                snippet = self.story_snippet(rng)
            ids.extend(snippet)
            for _ in range(rng.randint(1, 3)):
                answers.extend(range(len(ids) + 1, len(ids) + len(snippet)))
                ids.extend(snippet)
        ids = ids[:seq_len + 1]
        return ids, [a for a in answers if a <= seq_len]

    def sequence(self, rng, seq_len, max_d, copy_share, procedural=False):
        """(ids, answer positions, True for a dense copy sequence); procedural: names,
        relations and wording from the grammar of tasks.ProceduralPools."""
        pools = self.procedural if procedural else self.pools
        if rng.random() < copy_share:
            return (*self.copy_sequence(rng, pools, seq_len), True)
        return (*self.retrieval_sequence(rng, pools, seq_len, max_d), False)
