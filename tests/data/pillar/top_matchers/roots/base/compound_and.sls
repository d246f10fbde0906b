hit:
  compound_and: True
