hit:
  list_match: True
