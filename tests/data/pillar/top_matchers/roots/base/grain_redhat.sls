hit:
  grain_redhat: True
