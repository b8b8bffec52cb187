"""`StoryQAModel`: what the bAbI-style question-answering models share from a script
(the memory network's `MemN2NQA` and the DNC's `DNCQA`): text in `fit` and
`evaluate`, `generate` → answers, `export(path)` → the served SavedModel."""

import numpy as np

from keras_attn.models.configured import ConfiguredModel, check_export_arguments


class StoryQAModel(ConfiguredModel):
    """Base of the story question-answering models. Built with a preprocessor (a
    `StoryPreprocessor`), such a model takes `fit(x={"story": stories, "question":
    questions}, y=answers)` and `evaluate` on text, answers with
    `generate(stories, questions)` and exports `serving_default(story, question)`.

    A subclass names its preprocessor class (`PREPROCESSOR`), its command-line task
    (`EXPORT_TASK`, what `keras-attn predict` reads an export as) and the model the
    export serves (`serving_reader`: answer logits, and any further outputs).
    """

    PREPROCESSOR = None
    EXPORT_TASK = None

    def serving_reader(self):
        return self

    def _require_preprocessor(self, what):
        if getattr(self, "preprocessor", None) is None:
            name = self.PREPROCESSOR.__name__
            raise ValueError(
                f"To {what}, the model needs a preprocessor: build it with `"
                f"{type(self).__name__}(preprocessor={name}.from_texts(stories, questions, "
                "answers))`; this one has none (it takes ids).")
        return self.preprocessor

    def _from_text(self, x, y):
        if isinstance(x, dict) and any(isinstance(v, (list, tuple)) and v
                                       and not isinstance(v[0], (int, float, np.generic))
                                       for v in x.values()):
            preprocessor = self._require_preprocessor("train on text")
            if set(x) != {"story", "question"}:
                raise ValueError("`x` must be `{'story': stories, 'question': questions}`; "
                                 f"received the keys {sorted(x)}.")
            ids = preprocessor.encode(x["story"], x["question"])
            return ids, (None if y is None else preprocessor.encode_answers(y))
        return x, y

    def fit(self, x=None, y=None, validation_data=None, **kwargs):
        x, y = self._from_text(x, y)
        if isinstance(validation_data, (list, tuple)) and len(validation_data) == 2:
            validation_data = self._from_text(*validation_data)
        return super().fit(x, y, validation_data=validation_data, **kwargs)

    def evaluate(self, x=None, y=None, **kwargs):
        x, y = self._from_text(x, y)
        return super().evaluate(x, y, **kwargs)

    def generate(self, stories, questions, batch_size=256):
        """The answers to `questions` about `stories` (one story a question: a list of
        sentences, or a string with a sentence a line), written as the story writes
        them; an empty or blank question gets an empty answer."""
        preprocessor = self._require_preprocessor("answer text")
        logits = self.predict(preprocessor.encode(stories, questions), batch_size=batch_size,
                              verbose=0)
        return preprocessor.decode(np.argmax(logits, axis=-1), stories, list(questions))

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None,
               **kwargs):
        """Writes the served SavedModel to `filepath` (TensorFlow backend):
        `serving_default(story, question)` → `answer`, `probability` and the
        reader's further outputs (`models.memn2n.export`); `assets.extra/` holds
        what `keras-attn predict` and `explore` read."""
        check_export_arguments("a question-answering model", "`story` and `question` strings",
                               format, input_signature, kwargs)
        from keras_attn.models.memn2n.export import serving_archive, write_assets

        preprocessor = self._require_preprocessor("export a SavedModel that takes text")
        serving_archive(self.serving_reader(), preprocessor).write_out(filepath, verbose=False)
        write_assets(self, preprocessor, filepath, self.EXPORT_TASK)
        if verbose:
            print(f"Saved the question-answering model's serving SavedModel to {filepath}")
        return filepath
