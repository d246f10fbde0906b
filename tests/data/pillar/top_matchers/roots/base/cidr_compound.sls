hit:
  cidr_compound: True
