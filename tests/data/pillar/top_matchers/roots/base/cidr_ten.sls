hit:
  cidr_ten: True
