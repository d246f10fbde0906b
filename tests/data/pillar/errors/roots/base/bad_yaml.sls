bad_yaml:
  x: [1, 2
