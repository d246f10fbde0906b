common:
  flag: True
hit:
  common: True
