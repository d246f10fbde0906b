hit:
  glob_web: True
