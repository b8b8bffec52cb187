"""The translator task's SavedModel: the model's own serving archive
(`keras_attn.models.translator.export`), with the run's decoder settings."""

from keras_attn.models.translator.export import serving_archive
from keras_attn.training.tasks.translator.data import run_preprocessor


def archive(model, source_vocab, target_vocab, settings):
    """The export's `keras.export.ExportArchive`; `settings` is `RunMeta.settings`."""
    return serving_archive(model, run_preprocessor(source_vocab, target_vocab, settings),
                           beam_width=int(settings["beam_width"]),
                           length_penalty=float(settings["length_penalty"]))
