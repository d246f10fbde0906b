app:
  db: True
