scalar: b
list: [b1, a1]
dict:
  y: b
  nested: {q: b, r: b}
  lst: [b]
only_b: 1
typechange: [x]
nulled: ~
