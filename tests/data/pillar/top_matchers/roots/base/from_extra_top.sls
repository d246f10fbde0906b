hit:
  from_extra_top: True
