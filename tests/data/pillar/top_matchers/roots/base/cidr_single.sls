hit:
  cidr_single: True
