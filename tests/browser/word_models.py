"""A small GPT-2 (a transformers config: 2 layers, width 768, no download) and a word-level
tokenizer trained here from a few sentences (the ``tokenizers`` package), wrapped as a
``transformers.PreTrainedTokenizerFast``; one added token looks like markup, to show that
tokens stay text."""

import torch

HOSTILE = "<img src=x onerror=alert(1)>"
SENTENCES = [
    "the cat sat on the mat and looked at the dog",
    "the dog ran to the park and the cat stayed home",
    "a bird sang in the tree while the sun rose over the hill",
    "we read a book about the sea and the ships that sail on it",
]


def word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    wrapped.add_tokens([HOSTILE])
    return wrapped


def small_gpt2(vocab: int):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=vocab, n_positions=64, n_embd=768, n_layer=2, n_head=12)
    return GPT2LMHeadModel(config).eval()


def gpt2_inputs(tokenizer, length: int = 32) -> dict:
    """``length`` token ids of the sentences, the markup token among them."""
    ids = tokenizer(" ".join(SENTENCES), return_tensors="pt")["input_ids"][:, :length].clone()
    ids[0, 5] = tokenizer.convert_tokens_to_ids(HOSTILE)
    return {"input_ids": ids}
