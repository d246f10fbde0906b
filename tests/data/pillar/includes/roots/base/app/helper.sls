app:
  helper: True
