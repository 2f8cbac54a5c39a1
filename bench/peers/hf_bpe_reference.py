"""Writes tests/fixtures/bpe/: a byte-level BPE trained by Hugging Face `tokenizers`, and its encodings.

The reference behaviour for shardflow's reader of the vocab.json + merges.txt layout (io/text/bpe.hpp):
Hugging Face's ByteLevelBPETokenizer (GPT-2's byte-to-unicode alphabet, all 256 bytes in the initial
alphabet, no special tokens, no prefix space) trained to 400 tokens on a fixed text written below, saved
as vocab.json and merges.txt; cases.json holds strings and the ids Hugging Face encodes them to
(ASCII, punctuation, digits, contractions, runs of spaces and newlines, UTF-8 letters, and bytes that
are not UTF-8 are left out: Hugging Face takes str). tests/io/bpe_test.cpp reads the files and must
encode every case to the same ids. Not part of ./test.sh; run it by hand in a venv with tokenizers:

    bench/peers/run_torch_peer.sh --script hf_bpe_reference.py   (after pip install tokenizers there)
"""
import json
import pathlib

import tokenizers
from tokenizers import ByteLevelBPETokenizer, pre_tokenizers

TEXT = [
    "The quick brown fox jumps over the lazy dog. It's 2026, and the dog doesn't care!",
    "Low lower lowest: newer, newest; wider widest -- 123 456 7890.",
    "A fortune cookie says: you'll find what you're looking for, if you've looked.",
    "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e na\u00efve r\u00e9sum\u00e9  \n\n  spaces   and\ttabs\n",
] * 40

CASES = [
    "The lazy dog's fox.",
    "newest lowest wider 2026!",
    "  two spaces,\n\nnewlines\tand tabs  ",
    "you'll you're you've it's I'd",
    "Caf\u00e9 r\u00e9sum\u00e9 na\u00efve",
    "unseen words zebra quiz",
    "",
]


def main():
    here = pathlib.Path(__file__).resolve().parent
    out = here.parent.parent / "tests/fixtures/bpe"
    out.mkdir(parents=True, exist_ok=True)
    tok = ByteLevelBPETokenizer(add_prefix_space=False)
    # ByteLevelBPETokenizer starts from the whole 256-byte alphabet (ByteLevel.alphabet()).
    tok.train_from_iterator(TEXT, vocab_size=400, min_frequency=2, special_tokens=[],
                            show_progress=False)
    assert len(pre_tokenizers.ByteLevel.alphabet()) == 256
    tok.save_model(str(out))
    cases = [{"text": t, "ids": tok.encode(t).ids} for t in CASES]
    (out / "cases.json").write_text(json.dumps(
        {"written_by": f"bench/peers/hf_bpe_reference.py with tokenizers {tokenizers.__version__}",
         "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out}: vocab.json, merges.txt, cases.json ({len(cases)} cases)")


if __name__ == "__main__":
    main()
