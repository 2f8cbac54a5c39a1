"""Writes tests/fixtures/wordpiece/: a WordPiece vocab.txt trained by Hugging Face `tokenizers`, and its encodings.

The reference behaviour for shardflow's WordPiece (io/text/wordpiece.hpp): Hugging Face's
BertWordPieceTokenizer (lowercase, no accent stripping, BERT's special tokens) trained to 300 tokens on
the fixed ASCII text below, saved as vocab.txt; cases.json holds strings and the ids it encodes them to
without special tokens (words it knows, words split into ## pieces, a word it cannot cover: [UNK],
punctuation, case, control bytes, runs of spaces). tests/io/wordpiece_test.cpp reads vocab.txt and
must encode every case to the same ids. Not part of ./test.sh; run it by hand in a venv with
tokenizers (bench/peers/run_torch_peer.sh --script hf_wordpiece_reference.py after pip install
tokenizers there).
"""
import json
import pathlib

import tokenizers
from tokenizers import BertWordPieceTokenizer

TEXT = [
    "The quick brown fox jumps over the lazy dog. It's 2026, and the dog doesn't care!",
    "Low lower lowest: newer, newest; wider widest -- 123 456 7890.",
    "A fortune cookie says: you'll find what you're looking for, if you've looked.",
] * 40

CASES = [
    "The lazy dog's fox.",
    "NEWEST lowest wider, 2026!",
    "unlooked-for cookies",
    "zebra xylophone qq",
    "tab\tand\x07bell   spaces",
    "",
]


def main():
    here = pathlib.Path(__file__).resolve().parent
    out = here.parent.parent / "tests/fixtures/wordpiece"
    out.mkdir(parents=True, exist_ok=True)
    tok = BertWordPieceTokenizer(lowercase=True, strip_accents=False, clean_text=True)
    tok.train_from_iterator(TEXT, vocab_size=300, min_frequency=2, show_progress=False)
    tok.save_model(str(out))
    cases = [{"text": t, "ids": tok.encode(t, add_special_tokens=False).ids} for t in CASES]
    (out / "cases.json").write_text(json.dumps(
        {"written_by": f"bench/peers/hf_wordpiece_reference.py with tokenizers {tokenizers.__version__}",
         "cases": cases}, indent=1) + "\n")
    print(f"wrote {out}: vocab.txt, cases.json ({len(cases)} cases)")


if __name__ == "__main__":
    main()
