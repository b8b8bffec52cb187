"""Built-in bAbI-style stories, generated from a seed (no network, no files).

A small world of people, places and objects is simulated; each statement is an
action in it, and each question is answered from the simulation's state, with
the statements that support the answer. Four kinds, numbered as the bAbI tasks
they imitate:

| kind                       | question                            | answers          |
|----------------------------|-------------------------------------|------------------|
| 1 `single-supporting-fact` | Where is Mary?                      | a place          |
| 2 `two-supporting-facts`   | Where is the milk?                  | a place          |
| 6 `yes-no`                 | Is Mary in the kitchen?             | yes, no          |
| 7 `counting`               | How many objects is Mary carrying?  | none … three     |

The stories are written as bAbI-format lines and read back with
`training.data.babi.parse_babi`, so built-in and real data take one path.
"""

import numpy as np

from keras_attn.training.tasks.memn2n.babi import parse_babi

KINDS = {
    1: "single-supporting-fact",
    2: "two-supporting-facts",
    6: "yes-no",
    7: "counting",
}
PEOPLE = ("Mary", "John", "Sandra", "Daniel")
PLACES = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
OBJECTS = ("apple", "football", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
TAKES = ("got", "took", "picked up", "grabbed")
DROPS = ("dropped", "discarded", "put down", "left")
COUNTS = ("none", "one", "two", "three")


def kind_number(kind):
    """A kind given by number or name → its number."""
    for number, name in KINDS.items():
        if kind in (number, str(number), name):
            return number
    raise ValueError(f"Unknown story kind {kind!r}; expected one of {list(KINDS.values())}.")


class _World:
    def __init__(self, rng):
        self.rng = rng
        self.place = {}  # person → (place, line of their last move)
        self.holder = {}  # object → (person, line picked up)
        self.floor = {}  # object → (place, line dropped, line of the dropper's move)
        self.lines = []

    def _say(self, text):
        self.lines.append(text)
        return len(self.lines)

    def act(self, objects):
        rng = self.rng
        options = ["move"] * 3
        placed = [p for p in PEOPLE if p in self.place]
        if objects and placed:
            options += ["take"] * 2 + (["drop"] if self.holder else [])
        action = options[rng.integers(len(options))]
        if action == "take":
            person = placed[rng.integers(len(placed))]
            where = self.place[person][0]
            free = [o for o in OBJECTS if o not in self.holder and
                    (o not in self.floor or self.floor[o][0] == where)]
            if free:
                item = free[rng.integers(len(free))]
                verb = TAKES[rng.integers(len(TAKES))]
                line = self._say(f"{person} {verb} the {item} there.")
                self.floor.pop(item, None)
                self.holder[item] = (person, line)
                return
        if action == "drop":
            item = sorted(self.holder)[rng.integers(len(self.holder))]
            person, _ = self.holder.pop(item)
            verb = DROPS[rng.integers(len(DROPS))]
            line = self._say(f"{person} {verb} the {item}.")
            where, moved = self.place[person]
            self.floor[item] = (where, line, moved)
            return
        person = PEOPLE[rng.integers(len(PEOPLE))]
        current = self.place.get(person, (None, 0))[0]
        choices = [p for p in PLACES if p != current]
        where = choices[rng.integers(len(choices))]
        verb = MOVES[rng.integers(len(MOVES))]
        self.place[person] = (where, self._say(f"{person} {verb} the {where}."))

    def ask(self, kind):
        """(question, answer, supporting lines), or None if nothing can be asked yet."""
        rng = self.rng
        placed = [p for p in PEOPLE if p in self.place]
        if not placed:
            return None
        person = placed[rng.integers(len(placed))]
        where, moved = self.place[person]
        if kind == 1:
            return f"Where is {person}?", where, [moved]
        if kind == 6:
            others = [p for p in PLACES if p != where]
            asked = where if rng.random() < 0.5 else others[rng.integers(len(others))]
            return f"Is {person} in the {asked}?", "yes" if asked == where else "no", [moved]
        if kind == 7:
            held = sorted(line for p, line in self.holder.values() if p == person)
            return f"How many objects is {person} carrying?", COUNTS[len(held)], held
        located = sorted(set(self.holder) | set(self.floor))
        if not located:
            return None
        item = located[rng.integers(len(located))]
        if item in self.holder:
            person, taken = self.holder[item]
            where, moved = self.place[person]
            return f"Where is the {item}?", where, sorted({taken, moved})
        where, dropped, moved = self.floor[item]
        return f"Where is the {item}?", where, sorted({moved, dropped})


def story_lines(kind, rng, questions_per_story=5, max_statements_between=3):
    """The bAbI-format lines of one story of `kind`."""
    world = _World(rng)
    out, asked = [], 0
    objects = kind in (2, 7)
    while asked < questions_per_story:
        for _ in range(1 + rng.integers(max_statements_between)):
            world.act(objects)
            out.append(world.lines[-1])
        qa = world.ask(kind)
        if qa is None:
            continue
        question, answer, support = qa
        # Question lines are numbered in the story but are not statements.
        world.lines.append(None)
        out.append((question, answer, support))
        asked += 1
    numbered = []
    for line_id, item in enumerate(out, start=1):
        if isinstance(item, tuple):
            question, answer, support = item
            numbered.append(f"{line_id} {question}\t{answer}\t{' '.join(map(str, support))}")
        else:
            numbered.append(f"{line_id} {item}")
    return numbered


def generate_questions(kind, count, seed=0):
    """`count` questions of one `kind` (number or name), deterministic in `seed`."""
    number = kind_number(kind)
    rng = np.random.default_rng([seed, number])
    questions = []
    while len(questions) < count:
        lines = story_lines(number, rng)
        story = parse_babi(lines, task=number, source=f"built-in {KINDS[number]}")
        offset = questions[-1].story_id + 1 if questions else 0
        for q in story:
            questions.append(q.__class__(q.story, q.question, q.answer, q.supporting, q.task,
                                         q.story_id + offset))
    return questions[:count]
