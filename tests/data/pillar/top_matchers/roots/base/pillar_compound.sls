hit:
  pillar_compound: True
