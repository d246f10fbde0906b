"""Salt's yamlify_arg on CLI words far longer than a line (finding 13 in docs/security.md:
libstdc++'s std::regex recursed once per character on such words). Run by hand from a 3007.x
tree; CliArgsTest.LongWordsAreReadWithoutExhaustingTheStack holds the answers:

  PYTHONPATH=/tmp/ref/pyshim:/tmp/ref/salt3007 /usr/bin/python3 \
      tests/data/salt/gen_long_words.py > tests/data/salt/long_words.txt
"""
import salt.utils.args

N = 130000
WORDS = [
    ("digits", "1" * N),
    ("underscored", "1_" * (N // 2)),
    ("float", "1." + "5" * N),
    ("exponent", "1." + "5" * N + "e+3"),
    ("digits_then_x", "1" * N + "x"),
    ("sexagesimal", "1" * N + ":30"),
    ("negative", "-" + "9" * N),
]
for name, word in WORDS:
    got = salt.utils.args.yamlify_arg(word)
    if isinstance(got, str):
        print(name, "str", "the word itself" if got == word else "another string")
    else:
        print(name, type(got).__name__, repr(got))
