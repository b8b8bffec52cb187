"""In-process translation of a trained model, its figures as the field reports
them, and the callback that prints them (and stops on them) during training."""

import time

import keras
import numpy as np
import sacrebleu

from keras_attn.models.text import UNK, detokenize
from keras_attn.models.translator.generation import translate
from keras_attn.training.tasks.translator.data import run_preprocessor


def translate_texts(model, source_vocab, target_vocab, settings, texts, beam_width=1,
                    batch_size=256):
    """In-process translations of `texts` with the run's preprocessor (the model's own,
    or one made from the run's vocabularies and `RunMeta.settings`)."""
    preprocessor = getattr(model, "preprocessor", None) or run_preprocessor(
        source_vocab, target_vocab, settings)
    return translate(model, preprocessor, list(texts), beam_width=beam_width,
                     max_length=settings["max_target_length"] - 1,
                     length_penalty=settings["length_penalty"], batch_size=batch_size)


def score(kind, hypotheses, references):
    """Exact match; for text, as the field reports it: sacreBLEU's default BLEU
    (case-sensitive, 13a) and chrF, the lower-cased BLEU beside them, and the
    share of translations holding `[UNK]`."""
    exact = float(np.mean([h == r for h, r in zip(hypotheses, references, strict=True)]))
    figures = {"exact_match": exact, "n": len(references)}
    if kind == "text":
        figures["bleu"] = sacrebleu.corpus_bleu(hypotheses, [references]).score
        figures["chrf"] = sacrebleu.corpus_chrf(hypotheses, [references]).score
        figures["bleu_lowercase"] = sacrebleu.corpus_bleu(hypotheses, [references],
                                                          lowercase=True).score
        figures["unk_share"] = float(np.mean([UNK in h for h in hypotheses]))
    return figures


def text_figures(figures):
    """`BLEU 46.10, chrF 64.20 (lower-cased BLEU 48.30; [UNK] in 0.10 %)`."""
    return (f"BLEU {figures['bleu']:.2f}, chrF {figures['chrf']:.2f} (lower-cased BLEU "
            f"{figures['bleu_lowercase']:.2f}; [UNK] in {100 * figures['unk_share']:.2f} %)")


def evaluate_run(model, source_vocab, target_vocab, settings, pairs, beam_widths=(1, 4)):
    """Exact match (and BLEU/chrF for text) of the translations of `pairs`, whose
    references are compared in the same detokenised form as the translations."""
    sources = [s for s, _ in pairs]
    references = [detokenize(t, settings["preprocess"]) for _, t in pairs]
    results = {}
    for width in beam_widths:
        start = time.time()
        hyps = translate_texts(model, source_vocab, target_vocab, settings, sources, width)
        figures = score(settings["kind"], hyps, references)
        figures["seconds"] = round(time.time() - start, 2)
        results["greedy" if width == 1 else f"beam{width}"] = figures
    return results


class TranslationProgress(keras.callbacks.Callback):
    """Prints held-out figures and sample translations at the end of every epoch,
    and with `patience` stops when they have not improved for that many epochs.

    The figure is the validation BLEU for text (exact match for the dates), as NMT
    toolkits stop on it: the validation loss bottoms out epochs before the BLEU
    does (on 8,000 Spanish–English pairs its lowest was at epoch 7, validation BLEU
    14.50, while the BLEU rose to 16.79 by epoch 9). When training ends, the best
    epoch's weights are kept.

    Args:
        data: `load_data`'s dict (its validation split is translated).
        settings: the run's `RunMeta.settings`.
        limit: translate at most this many validation pairs.
        samples: how many translations to print.
        patience: epochs without a better figure before stopping (`None`: never).
    """

    def __init__(self, data, settings, limit=500, samples=3, patience=None):
        super().__init__()
        self.data, self.settings, self.limit, self.samples = data, settings, limit, samples
        self.patience = patience
        self.history = []
        self.best = self.best_epoch = self.best_weights = self.kept_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        pairs = self.data.splits["validation"][: self.limit]
        if not pairs:
            return
        sources = [s for s, _ in pairs]
        references = [detokenize(t, self.settings["preprocess"]) for _, t in pairs]
        hyps = translate_texts(self.model, self.data.source_vocab,
                               self.data.target_vocab, self.settings, sources)
        figures = score(self.settings["kind"], hyps, references)
        self.history.append({"epoch": epoch + 1, **figures})
        line = f"epoch {epoch + 1}: validation (n={figures['n']}, greedy)"
        if "bleu" in figures:
            line += " " + text_figures(figures)
        else:
            line += f" exact match {100 * figures['exact_match']:.2f} %"
        print(line)
        for source, hyp, ref in list(zip(sources, hyps, references, strict=True))[: self.samples]:
            print(f"  {source!r} → {hyp!r} (reference {ref!r})")
        figure = figures.get("bleu", figures["exact_match"])
        if self.best is None or figure > self.best:
            self.best, self.best_epoch = figure, epoch + 1
            if self.patience:
                self.best_weights = self.model.get_weights()
        elif self.patience and epoch + 1 - self.best_epoch >= self.patience:
            print(f"no better validation figure for {self.patience} epochs: stopping")
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        last = self.history[-1]["epoch"] if self.history else None
        if self.best_weights is not None and last != self.best_epoch:
            print(f"keeping epoch {self.best_epoch}'s weights (the best validation figure)")
            self.model.set_weights(self.best_weights)
            # The runner reads this: `--restarts` compares the weights each run keeps.
            self.kept_epoch = self.best_epoch
