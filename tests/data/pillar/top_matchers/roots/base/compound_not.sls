hit:
  compound_not: True
