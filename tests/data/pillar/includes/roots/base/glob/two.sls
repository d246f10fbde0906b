globbed:
  two: True
