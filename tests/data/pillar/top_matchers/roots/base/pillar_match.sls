hit:
  pillar_match: True
