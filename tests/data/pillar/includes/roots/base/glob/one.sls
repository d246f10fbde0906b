globbed:
  one: True
