# web01 only, after a and b
scalar: c
dict:
  nested: {q: c}
