scalar: a
list: [a1, a2]
dict:
  x: a
  nested: {p: a, q: a}
  lst: [a]
only_a: 1
typechange: {d: 1}
nulled: {k: v}
