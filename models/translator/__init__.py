"""The translators: an RNN and a Transformer encoder–decoder, their preprocessor and
what they share (`seq2seq`: training on text, `generate`, export).

`Translator` (`rnn`), `TransformerTranslator` (`transformer`) and
`TranslatorPreprocessor` (`preprocessor`) sit side by side, as a keras-hub model's
backbone, task and preprocessor do.
"""

from keras_attn.models.text import END_ID, PAD_ID, START_ID, UNK_ID
from keras_attn.models.translator.generation import Generator, decode_ids, translate
from keras_attn.models.translator.preprocessor import TranslatorPreprocessor
from keras_attn.models.translator.rnn import (
    Translator,
    TranslatorDecoder,
    TranslatorEncoder,
    make_attention,
)
from keras_attn.models.translator.seq2seq import (
    Seq2SeqModel,
    SequenceCrossEntropy,
    compile_translator,
    initialize_output_bias,
    padding_weights,
    sequence_loss,
)
from keras_attn.models.translator.tied_output import TiedOutput
from keras_attn.models.translator.transformer import TransformerTranslator
from keras_attn.models.translator.word_dropout import WordDropout

__all__ = [
    "END_ID", "PAD_ID", "START_ID", "UNK_ID", "Generator", "Seq2SeqModel",
    "SequenceCrossEntropy", "TiedOutput", "WordDropout",
    "TransformerTranslator", "Translator", "TranslatorDecoder", "TranslatorEncoder",
    "TranslatorPreprocessor", "compile_translator", "decode_ids", "initialize_output_bias",
    "make_attention", "padding_weights", "sequence_loss", "translate",
]
